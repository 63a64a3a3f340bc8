#!/usr/bin/env node
/**
 * `make demo`: the built UI on http://127.0.0.1:8675 (PORT overrides) and an engine job on builtin:shapes,
 * created and started through the UI's own job API (`POST /api/jobs`, `/start`, the queue), exactly as the page
 * starts engines. Prints the page's URL once the engine answers, and little else: the UI server writes to a log
 * file (its path is printed only when the server fails).
 *
 * Ctrl+C stops the engine job through the UI (as the page's Stop does: the Job row ends `stopped`, the engine
 * removes its engine.json and exits), then the UI, then exits 0. The UI server runs in a process group of its
 * own so that the terminal's SIGINT, which goes to the whole foreground group, reaches this script alone: were
 * the UI to get it too, it would be gone before it could stop the engine, which would keep running.
 *
 *   node scripts/demo.mjs '<job config as JSON>'     (scripts/demo.sh passes config/examples/inference_engine_demo.yaml)
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const uiDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const port = process.env.PORT || '8675';
const base = `http://127.0.0.1:${port}`;
const jobConfig = JSON.parse(process.argv[2]);
// The UI writes a job's DB path and folders itself and refuses a config naming others: the example config's
// `sqlite_db_path` (there for running it by hand) stays out.
for (const entry of jobConfig.config.process ?? []) delete entry.sqlite_db_path;
const name = jobConfig.config.name;
const headers = { 'content-type': 'application/json' };
if (process.env.AI_TOOLKIT_AUTH) headers.authorization = `Bearer ${process.env.AI_TOOLKIT_AUTH}`;

const logDir = process.env.AITK_DEMO_LOG_DIR || mkdtempSync(path.join(os.tmpdir(), 'aitk-demo-'));
const uiLog = path.join(logDir, 'ui.log');
const logFd = openSync(uiLog, 'a');
const ui = spawn(process.execPath, [path.join(uiDir, 'scripts', 'start.mjs')], {
  cwd: uiDir,
  detached: true,
  stdio: ['ignore', logFd, logFd],
  env: { ...process.env, HOST: '127.0.0.1', PORT: port, NEXT_TELEMETRY_DISABLED: '1' },
});
closeSync(logFd); // the server has its own copy
const uiExited = new Promise((resolve) => ui.once('exit', resolve));
let stopping = false;
ui.once('exit', (code) => {
  if (stopping) return;
  console.error(`make demo: the UI server exited (${code}); its log: ${uiLog}`);
  process.exit(code || 1);
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function api(method, url, body) {
  const res = await fetch(base + url, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, json, text };
}

async function until(what, seconds, probe) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    try {
      if (await probe()) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${seconds} s`);
    await sleep(250);
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The demo's job row: reused across runs (its outputs stay in the gallery), created on the first. */
async function demoJob() {
  const { json } = await api('GET', '/api/jobs?job_type=inference');
  const found = json.jobs.find((j) => j.name === name);
  const job = { name, gpu_ids: '0', job_config: jobConfig, job_type: 'inference' };
  const saved = await api('POST', '/api/jobs', found ? { id: found.id, ...job } : job);
  if (saved.status !== 200) throw new Error(`creating the job failed: ${saved.status} ${saved.text}`);
  return saved.json.id;
}

/** Stop the engine job through the UI and wait until its process has gone. */
async function stopEngine(jobId) {
  const before = (await api('GET', `/api/jobs?id=${jobId}`)).json;
  const stopped = await api('POST', `/api/jobs/${jobId}/stop`);
  if (stopped.status !== 200) console.error(`make demo: stopping the engine job: ${stopped.status} ${stopped.text}`);
  // `stopping` until the engine process has gone: the UI must outlive it to record `stopped`.
  const active = ['running', 'queued', 'stopping'];
  await until('the engine job stopping', 60, async () => !active.includes((await api('GET', `/api/jobs?id=${jobId}`)).json.status));
  if (before?.pid) await until('the engine process exiting', 30, async () => !alive(before.pid));
}

async function stopUi() {
  if (ui.exitCode === null && ui.signalCode === null) process.kill(-ui.pid, 'SIGTERM'); // next start and its wrapper
  await Promise.race([uiExited, sleep(15_000)]);
}

let jobId = null;
async function stop(code) {
  if (stopping) return;
  stopping = true;
  console.log('\nStopping the engine job, then the UI…');
  if (jobId) await stopEngine(jobId).catch((e) => {
    console.error(`make demo: ${e.message}`);
    code = 1;
  });
  await stopUi();
  process.exit(code);
}
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => void stop(0));

console.log('Starting the UI and an engine on builtin:shapes…');
try {
  await until('the UI answering', 120, async () => (await api('GET', '/api/jobs')).status === 200);
  jobId = await demoJob();
  for (const url of [`/api/jobs/${jobId}/start`, '/api/queue/0/start']) {
    const r = await api('POST', url);
    if (r.status !== 200) throw new Error(`${url}: ${r.status} ${r.text}`);
  }
  await until('the engine answering', 300, async () => (await api('GET', `/api/inference/health?job=${jobId}`)).json?.ok === true);
  if (!stopping) console.log(`\n  Open ${base}/generate?job=${jobId}\n  (Ctrl+C stops the engine and the UI)\n`);
} catch (e) {
  if (!stopping) {
    console.error(`make demo: ${e.message} (UI server log: ${uiLog})`);
    await stop(1);
  }
}
