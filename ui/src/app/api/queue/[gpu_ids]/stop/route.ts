/** Stop the queue of these GPUs: its running job is asked to go back to the queue. POST only. */
import { setQueueRunning } from '@/server/jobs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

async function handle(_req: Request, ctx: { params: Promise<{ gpu_ids: string }> }) {
  const gpuIds = (await ctx.params).gpu_ids // already url-decoded by Next;
  if (!setQueueRunning(gpuIds, false)) return Response.json({ error: 'Queue not found' }, { status: 404 });
  return Response.json({ gpu_ids: gpuIds, is_running: false });
}

export { handle as POST };
