/**
 * Job.stop = 1 and SIGINT to its process; returns the row as it was before. POST only, where AI Toolkit answers a
 * GET: an <img> on another page can send a GET (ui/README.md, "State changes are POSTs").
 */
import { stopJob } from '@/server/stopJob';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

async function handle(_req: Request, ctx: { params: Promise<{ jobID: string }> }) {
  const job = stopJob((await ctx.params).jobID);
  return job ? Response.json(job) : Response.json({ error: 'Job not found' }, { status: 404 });
}

export { handle as POST };
