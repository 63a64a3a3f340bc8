/** Start the queue of these GPUs (created when missing); the worker then runs its queued jobs in order. POST only. */
import { setQueueRunning } from '@/server/jobs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

async function handle(_req: Request, ctx: { params: Promise<{ gpu_ids: string }> }) {
  const gpuIds = (await ctx.params).gpu_ids // already url-decoded by Next;
  setQueueRunning(gpuIds, true);
  return Response.json({ gpu_ids: gpuIds, is_running: true });
}

export { handle as POST };
