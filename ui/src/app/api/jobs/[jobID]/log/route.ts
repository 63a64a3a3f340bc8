/** Tail of `<job folder>/log.txt`: `{log, offset, reset}`; pass `?offset=` to get only what was appended. */
import path from 'node:path';
import type { NextRequest } from 'next/server';
import { getJob } from '@/server/jobs';
import { readLogTail } from '@/server/logFile';
import { jobFolder } from '@/server/paths';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(req: NextRequest, ctx: { params: Promise<{ jobID: string }> }) {
  const job = getJob((await ctx.params).jobID);
  if (!job) return Response.json({ error: 'Job not found' }, { status: 404 });
  const raw = req.nextUrl.searchParams.get('offset');
  const offset = raw !== null && /^\d+$/.test(raw) ? Number(raw) : undefined;
  return Response.json(readLogTail(path.join(/*turbopackIgnore: true*/ jobFolder(job.name), 'log.txt'), offset));
}
