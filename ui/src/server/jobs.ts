/**
 * The `Job` and `Queue` tables with raw SQL. Rows go out of the API in the shape AI Toolkit's Prisma client
 * gives them (booleans as true/false, dates as ISO strings), so its pages and scripts read ours unchanged.
 */
import { randomUUID } from 'node:crypto';
import { db, nowMs } from './db';

export type JobStatus = 'queued' | 'running' | 'stopped' | 'completed' | 'error' | string;

/** A row as stored (Prisma conventions: 0/1 booleans, ms timestamps). */
interface JobRow {
  id: string;
  name: string;
  gpu_ids: string;
  job_config: string;
  created_at: number | string;
  updated_at: number | string;
  status: JobStatus;
  stop: number;
  return_to_queue: number;
  step: number;
  total_steps: number | null;
  info: string;
  speed_string: string;
  queue_position: number;
  pid: number | null;
  job_type: string;
  job_ref: string | null;
  save_now: number;
  sample_now: number;
}

/** A row as the API returns it. */
export interface Job extends Omit<JobRow, 'stop' | 'return_to_queue' | 'save_now' | 'sample_now' | 'created_at' | 'updated_at'> {
  stop: boolean;
  return_to_queue: boolean;
  save_now: boolean;
  sample_now: boolean;
  created_at: string;
  updated_at: string;
}

export interface Queue {
  id: number;
  gpu_ids: string;
  is_running: boolean;
}

const BOOLEAN_COLUMNS = ['stop', 'return_to_queue', 'save_now', 'sample_now'] as const;
const WRITABLE = new Set([
  'name', 'gpu_ids', 'job_config', 'status', 'stop', 'return_to_queue', 'step', 'total_steps', 'info',
  'speed_string', 'queue_position', 'pid', 'job_type', 'job_ref', 'save_now', 'sample_now',
]);

/** Prisma writes ms integers; a row inserted with SQL defaults holds CURRENT_TIMESTAMP text instead. */
function toIso(value: number | string): string {
  if (typeof value === 'number') return new Date(value).toISOString();
  if (/^\d+$/.test(value)) return new Date(Number(value)).toISOString();
  const parsed = Date.parse(value.includes('T') ? value : `${value.replace(' ', 'T')}Z`);
  return Number.isNaN(parsed) ? value : new Date(parsed).toISOString();
}

function toJob(row: JobRow): Job {
  const job = { ...row } as unknown as Job;
  for (const key of BOOLEAN_COLUMNS) (job as unknown as Record<string, boolean>)[key] = row[key] === 1;
  job.created_at = toIso(row.created_at);
  job.updated_at = toIso(row.updated_at);
  return job;
}

export function getJob(id: string): Job | null {
  const row = db().prepare('SELECT * FROM "Job" WHERE id = ?').get(id) as JobRow | undefined;
  return row ? toJob(row) : null;
}

export function getJobByName(name: string): Job | null {
  const row = db().prepare('SELECT * FROM "Job" WHERE name = ?').get(name) as JobRow | undefined;
  return row ? toJob(row) : null;
}

export function listJobs(opts: { jobType?: string; onlyActive?: boolean; status?: string[]; gpuIds?: string } = {}): Job[] {
  const where: string[] = [];
  const params: unknown[] = [];
  if (opts.jobType) {
    where.push('job_type = ?');
    params.push(opts.jobType);
  }
  const statuses = opts.onlyActive ? ['running', 'queued', 'stopping'] : opts.status;
  if (statuses?.length) {
    where.push(`status IN (${statuses.map(() => '?').join(', ')})`);
    params.push(...statuses);
  }
  if (opts.gpuIds !== undefined) {
    where.push('gpu_ids = ?');
    params.push(opts.gpuIds);
  }
  const sql = `SELECT * FROM "Job" ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC`;
  return (db().prepare(sql).all(...params) as JobRow[]).map(toJob);
}

/** Most recently updated job with this job_ref (AI Toolkit's `GET /api/jobs?job_ref=`). */
export function getJobByRef(jobRef: string): Job | null {
  const row = db().prepare('SELECT * FROM "Job" WHERE job_ref = ? ORDER BY updated_at DESC LIMIT 1').get(jobRef) as
    | JobRow
    | undefined;
  return row ? toJob(row) : null;
}

function nextQueuePosition(): number {
  const row = db().prepare('SELECT MAX(queue_position) AS m FROM "Job"').get() as { m: number | null };
  return (row.m ?? 0) + 1000;
}

export class DuplicateNameError extends Error {}

export function createJob(input: {
  name: string;
  gpu_ids: string;
  job_config: unknown;
  job_type?: string;
  job_ref?: string | null;
}): Job {
  if (getJobByName(input.name)) throw new DuplicateNameError('Job name already exists');
  const id = randomUUID();
  const now = nowMs();
  db()
    .prepare(
      `INSERT INTO "Job" (id, name, gpu_ids, job_config, created_at, updated_at, status, queue_position, job_type, job_ref)
       VALUES (?, ?, ?, ?, ?, ?, 'stopped', ?, ?, ?)`,
    )
    .run(id, input.name, input.gpu_ids, JSON.stringify(input.job_config), now, now, nextQueuePosition(),
      input.job_type ?? 'train', input.job_ref ?? null);
  return getJob(id)!;
}

/** UPDATE the given columns and `updated_at` (Prisma's @updatedAt does the same on every client write). */
export function updateJob(id: string, fields: Partial<Record<string, unknown>>, onlyIfStatus?: string): number {
  const keys = Object.keys(fields).filter((k) => fields[k] !== undefined);
  for (const k of keys) if (!WRITABLE.has(k)) throw new Error(`cannot write Job.${k}`);
  const values = keys.map((k) => {
    const v = fields[k];
    if (typeof v === 'boolean') return v ? 1 : 0;
    if (k === 'job_config' && typeof v !== 'string') return JSON.stringify(v);
    return v;
  });
  const sets = [...keys.map((k) => `"${k}" = ?`), '"updated_at" = ?'].join(', ');
  const guard = onlyIfStatus ? ' AND status = ?' : '';
  const params = [...values, nowMs(), id, ...(onlyIfStatus ? [onlyIfStatus] : [])];
  return db().prepare(`UPDATE "Job" SET ${sets} WHERE id = ?${guard}`).run(...params).changes;
}

export function deleteJobRow(id: string): void {
  db().prepare('DELETE FROM "Job" WHERE id = ?').run(id);
}

/** Put a job at the back of its GPU's queue (`POST /api/jobs/:id/start`; the worker starts it). */
export function enqueueJob(id: string): Job | null | 'stopping' {
  const job = getJob(id);
  if (!job) return null;
  if (job.status === 'stopping') return 'stopping'; // its process still cleans up: starting now would race it
  ensureQueue(job.gpu_ids);
  updateJob(id, { queue_position: nextQueuePosition(), status: 'queued', stop: false, return_to_queue: false, info: 'Job queued' });
  return getJob(id);
}

// ------------------------------------------------------------------------------------------ Queue

function toQueue(row: { id: number; gpu_ids: string; is_running: number }): Queue {
  return { id: row.id, gpu_ids: row.gpu_ids, is_running: row.is_running === 1 };
}

export function listQueues(): Queue[] {
  return (db().prepare('SELECT * FROM "Queue" ORDER BY gpu_ids').all() as { id: number; gpu_ids: string; is_running: number }[]).map(toQueue);
}

/** A Queue row for these GPUs, created stopped when missing. */
export function ensureQueue(gpuIds: string): void {
  db().prepare('INSERT OR IGNORE INTO "Queue" (gpu_ids, is_running) VALUES (?, 0)').run(gpuIds);
}

export function setQueueRunning(gpuIds: string, running: boolean): boolean {
  if (running) {
    ensureQueue(gpuIds);
  }
  return db().prepare('UPDATE "Queue" SET is_running = ? WHERE gpu_ids = ?').run(running ? 1 : 0, gpuIds).changes > 0;
}
