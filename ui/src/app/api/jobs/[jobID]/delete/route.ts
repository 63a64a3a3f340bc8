/** Stop the job if it runs, remove its folder under the training folder, delete the row. POST or DELETE, never GET. */
import { deleteJob } from '@/server/stopJob';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

async function handle(_req: Request, ctx: { params: Promise<{ jobID: string }> }) {
  const id = (await ctx.params).jobID;
  return deleteJob(id) ? Response.json({ deleted: id }) : Response.json({ error: 'Job not found' }, { status: 404 });
}

export { handle as POST, handle as DELETE };
