/**
 * `make demo` as a newcomer meets it (scripts/demo.sh: the built UI and an engine job on builtin:shapes, started
 * through the job API): the page answers with the engine online, and Generate on the untouched default form draws
 * a shape. Its own UI server, database and training folder, without AI_TOOLKIT_AUTH (a newcomer sets none).
 */
import { expect, test } from '@playwright/test';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { E2E_DIR, runStatus } from './helpers';

const ROOT = path.resolve(__dirname, '..', '..');
const DIR = path.join(E2E_DIR, 'demo');
const PORT = Number(process.env.E2E_DEMO_PORT ?? 8691);
let demo: ChildProcess | null = null;
let output = '';

test.beforeAll(async () => {
  mkdirSync(DIR, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    ...process.env, PORT: String(PORT), AITK_DB_PATH: path.join(DIR, 'aitk_db.db'), AITK_TRAINING_FOLDER: path.join(DIR, 'output'),
  };
  delete env.AI_TOOLKIT_AUTH;
  demo = spawn('bash', [path.join(ROOT, 'scripts', 'demo.sh')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  demo.stdout!.on('data', (d) => (output += d));
  demo.stderr!.on('data', (d) => (output += d));
  await expect.poll(() => output, { timeout: 240_000, message: 'make demo did not print the page URL' }).toMatch(/Open http:\/\/127\.0\.0\.1:\d+\/generate/);
});

test.afterAll(async () => {
  if (!demo || demo.exitCode !== null) return;
  const exited = new Promise((resolve) => demo!.once('exit', resolve));
  demo.kill('SIGINT');
  await exited;
});

test('make demo: the default form draws a shape on builtin:shapes without touching any field, and Ctrl+C stops the engine', async ({ browser }) => {
  const url = output.match(/Open (http:\/\/\S+)/)![1];
  expect(url.startsWith(`http://127.0.0.1:${PORT}/generate`)).toBe(true);
  const page = await browser.newPage();
  await page.goto(url);
  await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 60_000 });
  await expect(page.getByTestId('model-path')).toHaveValue('builtin:shapes');
  await page.getByTestId('generate').click();
  await expect(runStatus(page)).toHaveText('done', { timeout: 240_000 });
  const jobs = await (await page.request.get(`http://127.0.0.1:${PORT}/api/jobs?job_type=inference`)).json();
  const job = jobs.jobs.find((j: { name: string }) => j.name === 'inference_engine_demo');
  expect(job.status).toBe('running');
  const outputs = path.join(DIR, 'output', 'inference_engine_demo', 'outputs');
  const requestId = await page.getByTestId('preview-panel').getAttribute('data-request-id');
  const sidecar = JSON.parse(readFileSync(path.join(outputs, `${requestId}.json`), 'utf8'));
  expect(sidecar.config.model.name_or_path).toBe('builtin:shapes');
  expect(sidecar.result.width).toBe(64);
  await page.close();

  const exited = new Promise((resolve) => demo!.once('exit', resolve));
  demo!.kill('SIGINT');
  await exited;
  const db = await import('better-sqlite3');
  const row = new db.default(path.join(DIR, 'aitk_db.db'), { readonly: true }).prepare('SELECT status FROM Job WHERE id = ?').get(job.id) as { status: string };
  expect(row.status).toBe('stopped');
});
