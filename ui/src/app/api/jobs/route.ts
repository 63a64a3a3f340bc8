/**
 * AI Toolkit's `/api/jobs`:
 *   GET ?id=<id>            one job (null when absent); an engine job with `engine_ready`, as in the list
 *   GET ?job_ref=<ref>      the most recently updated job with that ref
 *   GET [?job_type=][&only_active=true]   {jobs: [...]}, newest first
 *   POST {id?, name, gpu_ids, job_config, job_type?, job_ref?}  create (or update with id); 409 on a taken name;
 *        400 when job_config names a folder other than the UI's own (server/uiFolders.ts: the UI writes them)
 */
import type { NextRequest } from 'next/server';
import { engineFolder, readEngineJson } from '@/server/engines';
import { isInferenceJob } from '@/server/jobConfig';
import { DuplicateNameError, createJob, getJob, getJobByName, getJobByRef, listJobs, updateJob } from '@/server/jobs';
import { foreignFolderKey } from '@/server/uiFolders';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Row = NonNullable<ReturnType<typeof getJob>>;

// `engine_ready`: a running engine job has written its engine.json, so a page polls its health only then
// (before, every poll of a starting engine was a 503 in the browser's console).
function withReady(j: Row) {
  return isInferenceJob(j) ? { ...j, engine_ready: j.status === 'running' && readEngineJson(engineFolder(j)) !== null } : j;
}

export async function GET(req: NextRequest) {
  const q = req.nextUrl.searchParams;
  if (q.has('id')) {
    const job = getJob(q.get('id')!);
    return Response.json(job ? withReady(job) : job);
  }
  if (q.has('job_ref')) return Response.json(getJobByRef(q.get('job_ref')!));
  const jobs = listJobs({ jobType: q.get('job_type') || undefined, onlyActive: q.get('only_active') === 'true' });
  return Response.json({ jobs: jobs.map(withReady) });
}

export async function POST(req: NextRequest) {
  let body: Record<string, unknown>;
  try {
    body = await req.json();
  } catch {
    return Response.json({ error: 'expected a JSON body' }, { status: 400 });
  }
  const { id, name, gpu_ids, job_config, job_type, job_ref } = body as {
    id?: string; name?: string; gpu_ids?: string; job_config?: unknown; job_type?: string; job_ref?: string | null;
  };
  if (typeof name !== 'string' || !name.trim() || /[\\/]|^\.\.?$/.test(name))
    return Response.json({ error: 'name must be a non-empty folder name' }, { status: 400 });
  if (typeof gpu_ids !== 'string' || !/^[\w,.-]*$/.test(gpu_ids))
    return Response.json({ error: 'gpu_ids must be a string like "0" or "0,1"' }, { status: 400 });
  if (typeof job_config !== 'object' || job_config === null)
    return Response.json({ error: 'job_config must be an object' }, { status: 400 });
  const foreign = foreignFolderKey(job_config, name);
  if (foreign) return Response.json({ error: `${foreign}: the UI sets this itself when it starts the job; leave it out` }, { status: 400 });
  if (id) {
    const existing = getJob(id);
    if (!existing) return Response.json({ error: 'Job not found' }, { status: 404 });
    const clash = getJobByName(name);
    if (clash && clash.id !== id) return Response.json({ error: 'Job name already exists' }, { status: 409 });
    updateJob(id, { name, gpu_ids, job_config, job_type, job_ref });
    return Response.json(getJob(id));
  }
  try {
    return Response.json(createJob({ name, gpu_ids, job_config, job_type, job_ref }));
  } catch (e) {
    if (e instanceof DuplicateNameError) return Response.json({ error: e.message }, { status: 409 });
    throw e;
  }
}
