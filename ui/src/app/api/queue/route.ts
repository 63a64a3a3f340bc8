/** `{queues: [{id, gpu_ids, is_running}]}`, one per GPU set. */
import { listQueues } from '@/server/jobs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET() {
  return Response.json({ queues: listQueues() });
}
