/** Mark the row stopped without signalling anything (for rows whose process is long gone). POST only, as every state change. */
import { getJob } from '@/server/jobs';
import { markStopped } from '@/server/stopJob';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

async function handle(_req: Request, ctx: { params: Promise<{ jobID: string }> }) {
  const id = (await ctx.params).jobID;
  if (!getJob(id)) return Response.json({ error: 'Job not found' }, { status: 404 });
  markStopped(id);
  return Response.json(getJob(id));
}

export { handle as POST };
