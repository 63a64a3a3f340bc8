/**
 * `GET /api/outputs?job=<id|name>&offset=&limit=&arch=&model=`: an engine job's results read from its outputs
 * folder on disk, newest first, whether the engine runs or not (the engine's own GET /outputs needs it running).
 * Items have the engine's shape; files are served by /api/files. Auth and the request guard: src/proxy.ts.
 */
import type { NextRequest } from 'next/server';
import { findEngineJob, pageOutputs, pageParams, readOutputs, safeOutputsFolder } from '@/server/outputs';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(req: NextRequest) {
  const q = req.nextUrl.searchParams;
  const selector = q.get('job');
  if (!selector) return Response.json({ error: 'say which engine job: ?job=<id or name>' }, { status: 400 });
  const job = findEngineJob(selector);
  if (!job) return Response.json({ error: `no inference engine job ${JSON.stringify(selector)}` }, { status: 404 });
  const folder = safeOutputsFolder(job);
  if (!folder) return Response.json({ error: `the outputs of ${job.name} are outside the training folder` }, { status: 403 });
  const { offset, limit } = pageParams(q.get('offset'), q.get('limit'));
  const page = pageOutputs(readOutputs(folder), { arch: q.get('arch'), model: q.get('model') }, offset, limit);
  return Response.json(page, { headers: { 'cache-control': 'no-store' } });
}
