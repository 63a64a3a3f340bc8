/** Job.stop = 1 and SIGINT to its process (AI Toolkit: a GET). Returns the row as it was before. */
import { stopJob } from '@/server/stopJob';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

async function handle(_req: Request, ctx: { params: Promise<{ jobID: string }> }) {
  const job = stopJob((await ctx.params).jobID);
  return job ? Response.json(job) : Response.json({ error: 'Job not found' }, { status: 404 });
}

export { handle as GET, handle as POST };
