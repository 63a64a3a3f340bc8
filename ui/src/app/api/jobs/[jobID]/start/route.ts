/** Queue the job on its GPUs (AI Toolkit: a GET). The worker starts it once its queue runs. */
import { enqueueJob } from '@/server/jobs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

async function handle(_req: Request, ctx: { params: Promise<{ jobID: string }> }) {
  const job = enqueueJob((await ctx.params).jobID);
  if (job === 'stopping') return Response.json({ error: 'the job is still stopping; start it once it has stopped' }, { status: 409 });
  return job ? Response.json(job) : Response.json({ error: 'Job not found' }, { status: 404 });
}

export { handle as GET, handle as POST };
