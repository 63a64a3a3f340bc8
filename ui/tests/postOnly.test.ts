/**
 * State changes are POSTs: the job and queue actions answer GET (and HEAD) with 405 and change nothing, so an
 * <img src> on another page cannot start or stop jobs in a browser that sends no `Sec-Fetch-Site`. The real route
 * modules go through Next's own method dispatch (autoImplementMethods: a method a route does not export is 405).
 */
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { autoImplementMethods } from 'next/dist/server/route-modules/app-route/helpers/auto-implement-methods';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as deleteRoute from '@/app/api/jobs/[jobID]/delete/route';
import * as markStoppedRoute from '@/app/api/jobs/[jobID]/mark_stopped/route';
import * as startRoute from '@/app/api/jobs/[jobID]/start/route';
import * as stopRoute from '@/app/api/jobs/[jobID]/stop/route';
import * as queueStartRoute from '@/app/api/queue/[gpu_ids]/start/route';
import * as queueStopRoute from '@/app/api/queue/[gpu_ids]/stop/route';
import { closeDb } from '@/server/db';
import { createJob, enqueueJob, getJob, listQueues } from '@/server/jobs';

type Handler = (req: Request, ctx: { params: Promise<Record<string, string>> }) => Promise<Response> | Response;

/** Call a route module as Next serves it: `method` dispatched the way Next dispatches it. */
async function call(route: object, method: string, params: Record<string, string>): Promise<Response> {
  const handler = (autoImplementMethods(route as never) as unknown as Record<string, Handler>)[method];
  const req = new Request('http://127.0.0.1:8675/api/x', { method });
  return handler(req, { params: Promise.resolve(params) });
}

let jobId: string;

beforeEach(() => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'aitk-post-only-'));
  process.env.AITK_ROOT = root;
  process.env.AITK_DB_PATH = path.join(root, 'aitk_db.db');
  process.env.AITK_TRAINING_FOLDER = path.join(root, 'output');
  jobId = createJob({ name: 'eng', gpu_ids: '0', job_config: { job: 'extension', config: { name: 'eng', process: [] } } }).id;
});

afterEach(() => {
  closeDb();
  for (const k of ['AITK_ROOT', 'AITK_DB_PATH', 'AITK_TRAINING_FOLDER']) delete process.env[k];
});

const queueRunning = () => listQueues().find((q) => q.gpu_ids === '0')?.is_running ?? false;

describe('job and queue actions answer only POST', () => {
  it('start: GET and HEAD are 405 and queue nothing; POST queues the job', async () => {
    for (const method of ['GET', 'HEAD']) expect((await call(startRoute, method, { jobID: jobId })).status, method).toBe(405);
    expect(getJob(jobId)!.status).toBe('stopped');
    expect((await call(startRoute, 'POST', { jobID: jobId })).status).toBe(200);
    expect(getJob(jobId)!.status).toBe('queued');
  });

  it('stop: GET is 405 and leaves the job as it was; POST stops it', async () => {
    enqueueJob(jobId);
    expect((await call(stopRoute, 'GET', { jobID: jobId })).status).toBe(405);
    expect(getJob(jobId)!.status).toBe('queued');
    expect((await call(stopRoute, 'POST', { jobID: jobId })).status).toBe(200);
    expect(getJob(jobId)!.status).toBe('stopped');
  });

  it('mark_stopped: GET is 405; POST marks the row stopped', async () => {
    enqueueJob(jobId);
    expect((await call(markStoppedRoute, 'GET', { jobID: jobId })).status).toBe(405);
    expect(getJob(jobId)!.status).toBe('queued');
    expect((await call(markStoppedRoute, 'POST', { jobID: jobId })).status).toBe(200);
    expect(getJob(jobId)!.status).toBe('stopped');
  });

  it('delete: GET is 405 and the row stays; POST and DELETE delete', async () => {
    expect((await call(deleteRoute, 'GET', { jobID: jobId })).status).toBe(405);
    expect(getJob(jobId)).not.toBeNull();
    expect((await call(deleteRoute, 'POST', { jobID: jobId })).status).toBe(200);
    expect(getJob(jobId)).toBeNull();
    const other = createJob({ name: 'other', gpu_ids: '0', job_config: {} }).id;
    expect((await call(deleteRoute, 'DELETE', { jobID: other })).status).toBe(200);
    expect(getJob(other)).toBeNull();
  });

  it("a queue's start and stop: GET is 405 and the queue stays as it was; POST starts and stops it", async () => {
    expect((await call(queueStartRoute, 'GET', { gpu_ids: '0' })).status).toBe(405);
    expect(queueRunning()).toBe(false);
    expect((await call(queueStartRoute, 'POST', { gpu_ids: '0' })).status).toBe(200);
    expect(queueRunning()).toBe(true);
    expect((await call(queueStopRoute, 'GET', { gpu_ids: '0' })).status).toBe(405);
    expect(queueRunning()).toBe(true);
    expect((await call(queueStopRoute, 'POST', { gpu_ids: '0' })).status).toBe(200);
    expect(queueRunning()).toBe(false);
  });
});

/** Every file under `dir` (recursively) whose name ends with one of `exts`, skipping dependencies and builds. */
function sourceFiles(dir: string, exts: string[]): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const full = path.join(dir, d.name);
    if (d.isDirectory()) return ['node_modules', '.next', '.venv', 'test-results'].includes(d.name) ? [] : sourceFiles(full, exts);
    return exts.some((e) => d.name.endsWith(e)) ? [full] : [];
  });
}

describe('callers', () => {
  // A call that names one of these routes and sends no method (or GET), in the forms the callers use: apiJson(`…/start`)
  // in the pages, request.get(`…/stop`) in e2e, api('GET', `…`) in demo.mjs, httpx.get(f"…") in Python.
  const ACTION = String.raw`/api/(?:jobs|queue)/[^\x60"]*?(?:start|stop|mark_stopped|delete)`;
  const GET_CALLS = [
    new RegExp(String.raw`apiJson\(\s*\x60[^\x60]*${ACTION}[^\x60]*\x60\s*\)`),
    new RegExp(String.raw`request\.get\(\s*[\x60'"][^\x60'"]*${ACTION}`),
    new RegExp(String.raw`api\('GET',\s*(?:url\b|[\x60'"][^\x60'"]*${ACTION})`),
    new RegExp(String.raw`(?:httpx|requests|client)\.get\(\s*f?"[^"]*${ACTION}`),
  ];
  // a check that GET is refused says so on its line
  const sendsGet = (line: string) => GET_CALLS.some((re) => re.test(line)) && !line.includes('toBe(405)');
  const ui = path.resolve(__dirname, '..');
  const repo = path.resolve(ui, '..');

  it('send these routes a POST: the pages, make demo, the e2e specs, the Python tests and benches', () => {
    const files = [
      ...sourceFiles(path.join(ui, 'src'), ['.ts', '.tsx']),
      ...sourceFiles(path.join(ui, 'scripts'), ['.mjs']),
      ...sourceFiles(path.join(ui, 'e2e'), ['.ts']),
      ...sourceFiles(path.join(repo, 'testing'), ['.py']),
      ...sourceFiles(path.join(repo, 'scripts'), ['.sh', '.py', '.mjs']),
    ];
    expect(files.length).toBeGreaterThan(50);
    const gets = files.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) => (sendsGet(line) ? [`${path.relative(repo, file)}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(gets).toEqual([]);
  });
});
