/**
 * Queue the job on its GPUs; the worker starts it once its queue runs. POST only, where AI Toolkit answers a GET:
 * an <img> on another page can send a GET (ui/README.md, "State changes are POSTs").
 */
import { enqueueJob } from '@/server/jobs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

async function handle(_req: Request, ctx: { params: Promise<{ jobID: string }> }) {
  const job = enqueueJob((await ctx.params).jobID);
  if (job === 'stopping') return Response.json({ error: 'the job is still stopping; start it once it has stopped' }, { status: 409 });
  return job ? Response.json(job) : Response.json({ error: 'Job not found' }, { status: 404 });
}

export { handle as POST };
