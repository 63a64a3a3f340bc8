/**
 * The worker and job start against a fake toolkit root whose run.py records what it was given: the
 * config rewrite, the environment, log.txt and its rotation, pid, exit codes, stop by SIGINT, the queue.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDb } from '@/server/db';
import { findEngine } from '@/server/engines';
import { createJob, enqueueJob, getJob, listQueues, setQueueRunning, updateJob } from '@/server/jobs';
import { readLogTail } from '@/server/logFile';
import { startJob } from '@/server/startJob';
import { stopJob } from '@/server/stopJob';
import { processQueue } from '@/server/worker';

// What the fake run.py does is steered by its config: `behaviour` = exit:<code> | sleep
const FAKE_RUN_PY = `
import json, os, signal, sys, time
cfg = json.load(open(sys.argv[1]))
print("ARGS", json.dumps(sys.argv[1:]))
print("ENV", json.dumps({k: os.environ.get(k) for k in ("AITK_JOB_ID", "CUDA_VISIBLE_DEVICES", "IS_AI_TOOLKIT_UI", "PYTHONUNBUFFERED", "CUDA_DEVICE_ORDER")}))
print("CWD", os.getcwd())
what = cfg["config"]["behaviour"]
if what == "leave-engine-json":  # an engine that dies without cleaning up
    folder = cfg["config"]["process"][0]["engine"]["job_folder"]
    json.dump({"host": "127.0.0.1", "port": 1, "token": "t", "pid": os.getpid()}, open(os.path.join(folder, "engine.json"), "w"))
    sys.exit(1)
if what.startswith("exit:"):
    print("boom: the last words")
    sys.exit(int(what[5:]))
def on_int(*_):
    print("got SIGINT")
    sys.exit(0)
signal.signal(signal.SIGINT, on_int)
time.sleep(30)
`;

let root: string;

function jobConfig(behaviour: string, type = 'InferenceEngine') {
  return { job: 'extension', config: { name: 'x', behaviour, process: [{ type, sqlite_db_path: './aitk_db.db', engine: { keep: 1 } }] } };
}

async function waitFor<T>(fn: () => T, ok: (v: T) => boolean, ms = 10000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out; last value ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'aitk-worker-'));
  writeFileSync(path.join(root, 'run.py'), FAKE_RUN_PY);
  process.env.AITK_ROOT = root;
  process.env.AITK_DB_PATH = path.join(root, 'aitk_db.db');
  process.env.AITK_TRAINING_FOLDER = path.join(root, 'output');
  process.env.AITK_PYTHON = 'python3';
});

afterEach(() => {
  closeDb();
  for (const k of ['AITK_ROOT', 'AITK_DB_PATH', 'AITK_TRAINING_FOLDER', 'AITK_PYTHON']) delete process.env[k];
});

describe('startJob', () => {
  it('launches run.py with the rewritten config and AI Toolkit environment; exit != 0 -> error with the last log line', async () => {
    const job = createJob({ name: 'eng', gpu_ids: '1', job_config: jobConfig('exit:3'), job_type: 'inference' });
    enqueueJob(job.id);
    expect(startJob(job.id)).toBe(true);
    expect(startJob(job.id)).toBe(false); // already claimed: never launched twice
    const folder = path.join(root, 'output', 'eng');
    const done = await waitFor(() => getJob(job.id)!, (j) => j.status === 'error');
    expect(done.info).toBe('Job process terminated with exit code 3. Last log line: boom: the last words');
    expect(done.pid).toBeNull();

    const written = JSON.parse(readFileSync(path.join(folder, '.job_config.json'), 'utf8'));
    expect(written.config.process[0].sqlite_db_path).toBe(path.join(root, 'aitk_db.db'));
    expect(written.config.process[0].engine).toMatchObject({ keep: 1, job_folder: folder, output_folder: path.join(folder, 'outputs') });
    const log = readFileSync(path.join(folder, 'log.txt'), 'utf8');
    expect(log).toContain(`ARGS ${JSON.stringify([path.join(folder, '.job_config.json')])}`);
    expect(log).toContain(`"AITK_JOB_ID": "${job.id}", "CUDA_VISIBLE_DEVICES": "1", "IS_AI_TOOLKIT_UI": "1", "PYTHONUNBUFFERED": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"`);
    expect(log).toContain(`CWD ${root}`);
    expect(readFileSync(path.join(folder, 'pid.txt'), 'utf8')).toMatch(/^\d+$/);

    // a second start rotates the first log away
    enqueueJob(job.id);
    startJob(job.id);
    await waitFor(() => getJob(job.id)!, (j) => j.status === 'error');
    expect(existsSync(path.join(folder, 'logs', '0_log.txt'))).toBe(true);
  });

  it('removes the engine.json an engine left behind when its process has exited', async () => {
    const job = createJob({ name: 'crashy', gpu_ids: '0', job_config: jobConfig('leave-engine-json'), job_type: 'inference' });
    enqueueJob(job.id);
    startJob(job.id);
    const folder = path.join(root, 'output', 'crashy');
    await waitFor(() => getJob(job.id)!.status, (s) => s === 'error');
    await waitFor(() => existsSync(path.join(folder, 'engine.json')), (e) => !e);
    expect(readFileSync(path.join(folder, 'log.txt'), 'utf8')).toContain('engine.json was left behind');
  });

  it('does not rewrite engine settings of non-engine jobs', async () => {
    const job = createJob({ name: 'train', gpu_ids: '0', job_config: jobConfig('exit:0', 'sd_trainer'), job_type: 'train' });
    enqueueJob(job.id);
    startJob(job.id);
    const written = JSON.parse(readFileSync(path.join(root, 'output', 'train', '.job_config.json'), 'utf8'));
    expect(written.config.process[0].engine).toEqual({ keep: 1 });
  });

  it('stop sets Job.stop and interrupts the process', async () => {
    const job = createJob({ name: 'sleeper', gpu_ids: '0', job_config: jobConfig('sleep'), job_type: 'inference' });
    enqueueJob(job.id);
    startJob(job.id);
    const log = path.join(root, 'output', 'sleeper', 'log.txt');
    await waitFor(() => readLogTail(log).log, (l) => l.includes('CWD'));
    stopJob(job.id);
    const row = getJob(job.id)!;
    expect(row.stop).toBe(true);
    expect(row.status).toBe('stopping'); // until the process has exited
    expect(enqueueJob(job.id)).toBe('stopping'); // no restart while the old process cleans up
    await waitFor(() => readLogTail(log).log, (l) => l.includes('got SIGINT'));
    const stopped = await waitFor(() => getJob(job.id)!, (j) => j.status === 'stopped');
    expect(stopped.pid).toBeNull(); // nothing signals a reused pid later
    expect(enqueueJob(job.id)).not.toBe('stopping');
  });

  it('stopping a job whose process is already gone stops it at once', () => {
    const job = createJob({ name: 'gone', gpu_ids: '0', job_config: jobConfig('sleep') });
    updateJob(job.id, { status: 'running', pid: 2 ** 22 + 54321 });
    stopJob(job.id);
    expect(getJob(job.id)!.status).toBe('stopped');
    expect(getJob(job.id)!.pid).toBeNull();
  });
});

describe('processQueue', () => {
  it('starts the first queued job of a running queue, one at a time per GPU set, and stops an empty queue', async () => {
    const a = createJob({ name: 'a', gpu_ids: '0', job_config: jobConfig('sleep') });
    const b = createJob({ name: 'b', gpu_ids: '0', job_config: jobConfig('exit:0') });
    enqueueJob(a.id);
    enqueueJob(b.id);
    processQueue(); // queue exists but is not running: nothing starts
    expect(getJob(a.id)!.status).toBe('queued');
    setQueueRunning('0', true);
    processQueue();
    expect(getJob(a.id)!.status).toBe('running');
    processQueue(); // a runs: b waits
    expect(getJob(b.id)!.status).toBe('queued');

    setQueueRunning('0', false); // stopping the queue asks the running job to return to it
    processQueue();
    expect(getJob(a.id)!.return_to_queue).toBe(true);
    stopJob(a.id);
    setQueueRunning('0', true);
    processQueue();
    expect(getJob(b.id)!.status).toBe('queued'); // a is still stopping: its GPU is not free yet
    await waitFor(() => getJob(a.id)!.status, (status) => status === 'stopped');
    processQueue();
    expect(getJob(b.id)!.status).toBe('running');
    await waitFor(() => getJob(b.id)!.pid, (pid) => pid !== null);
    updateJob(b.id, { status: 'completed' }); // what Python would write
    processQueue();
    expect(listQueues()[0].is_running).toBe(false);
  });

  it('finishes the stop of a job whose process died while stopping (no exit handler watches it)', () => {
    const job = createJob({ name: 'halfway', gpu_ids: '0', job_config: jobConfig('sleep') });
    updateJob(job.id, { status: 'stopping', pid: 2 ** 22 + 777 });
    processQueue();
    expect(getJob(job.id)!.status).toBe('stopped');
    expect(getJob(job.id)!.pid).toBeNull();
  });

  it('marks a running job whose process is gone as error (a restarted UI has no exit handler for it)', () => {
    const job = createJob({ name: 'orphan', gpu_ids: '0', job_config: jobConfig('sleep') });
    mkdirSync(path.join(root, 'output', 'orphan'), { recursive: true });
    writeFileSync(path.join(root, 'output', 'orphan', 'log.txt'), 'loading\nSegmentation fault\n');
    updateJob(job.id, { status: 'running', pid: 2 ** 22 + 12345 });
    processQueue();
    const row = getJob(job.id)!;
    expect(row.status).toBe('error');
    expect(row.info).toContain('Last log line: Segmentation fault');
  });
});

describe('findEngine', () => {
  it('uses engine.json of a running engine job only while its pid is alive; ?job= picks one', () => {
    const job = createJob({ name: 'eng', gpu_ids: '0', job_config: jobConfig('sleep'), job_type: 'inference' });
    const folder = path.join(root, 'output', 'eng');
    mkdirSync(folder, { recursive: true });
    updateJob(job.id, { status: 'running', pid: process.pid });
    expect(findEngine()).toMatchObject({ ok: false, status: 503, error: 'engine eng is starting' });

    const info = { host: '127.0.0.1', port: 1234, token: 't', pid: 2 ** 22 + 12345 };
    writeFileSync(path.join(folder, 'engine.json'), JSON.stringify(info));
    expect(findEngine().ok).toBe(false); // dead pid: a leftover of a crash

    writeFileSync(path.join(folder, 'engine.json'), JSON.stringify({ ...info, pid: process.pid }));
    expect(findEngine()).toMatchObject({ ok: true, info: { port: 1234, token: 't' } });
    expect(findEngine(job.id)).toMatchObject({ ok: true });
    expect(findEngine('eng')).toMatchObject({ ok: true });
    expect(findEngine('nope')).toMatchObject({ ok: false, status: 404 });
    updateJob(job.id, { status: 'stopped' });
    expect(findEngine(job.id)).toMatchObject({ ok: false, status: 503 });
  });
});
