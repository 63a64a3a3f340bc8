#!/usr/bin/env node
/**
 * `make demo`: the built UI on http://127.0.0.1:8675 (PORT overrides) and an engine job on builtin:shapes,
 * created and started through the UI's own job API (`POST /api/jobs`, `/start`, the queue), exactly as the page
 * starts engines. Prints the page's URL once the engine answers; Ctrl+C stops the engine job, then the UI.
 *
 *   node scripts/demo.mjs '<job config as JSON>'     (scripts/demo.sh passes config/examples/inference_engine_demo.yaml)
 */
import { spawn } from 'node:child_process';
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

const ui = spawn(process.execPath, [path.join(uiDir, 'scripts', 'start.mjs')], {
  cwd: uiDir,
  stdio: ['ignore', 'inherit', 'inherit'],
  env: { ...process.env, HOST: '127.0.0.1', PORT: port },
});
ui.on('exit', (code) => {
  console.error(`The UI server exited (${code}).`);
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
    await sleep(500);
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

let jobId = null;
let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  if (jobId) {
    console.log('\nStopping the engine job…');
    await api('POST', `/api/jobs/${jobId}/stop`).catch(() => undefined);
    // `stopping` until the engine process has gone: the UI must outlive it to record `stopped`.
    const active = ['running', 'queued', 'stopping'];
    await until('the engine job stopping', 30, async () => !active.includes((await api('GET', `/api/jobs?id=${jobId}`)).json.status)).catch(() => undefined);
  }
  ui.kill('SIGTERM');
}
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => void stop().then(() => process.exit(0)));

try {
  await until('the UI answering', 120, async () => (await api('GET', '/api/jobs')).status === 200);
  jobId = await demoJob();
  for (const url of [`/api/jobs/${jobId}/start`, '/api/queue/0/start']) {
    const r = await api('POST', url);
    if (r.status !== 200) throw new Error(`${url}: ${r.status} ${r.text}`);
  }
  console.log('Starting the engine on builtin:shapes (the first start builds nothing: the model ships in the repository)…');
  await until('the engine answering', 300, async () => (await api('GET', `/api/inference/health?job=${jobId}`)).json?.ok === true);
  console.log(`\n  Open ${base}/generate?job=${jobId}\n  (Ctrl+C stops the engine and the UI; \`make engine\` runs the engine alone, headless.)\n`);
} catch (e) {
  console.error(`make demo: ${e.message}`);
  await stop();
  process.exit(1);
}
