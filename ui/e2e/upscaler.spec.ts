/**
 * An upscaler model from the gallery (GET /upscalers): an engine whose model folder holds an ESRGAN-layout file
 * lists it in the gallery's upscaler choice; "Upscale ×2" with it picked makes a result twice the size whose
 * settings name that file. Its own engine job, started through the jobs API with the models folder (the
 * MODELS_PATH setting, which a job started by the UI takes its model roots from) set to the spec's folder.
 */
import { type Page, expect, test } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { E2E_DIR, TOKEN, authHeaders, galleryTotal, startEngineJob, stopAllEngines, stopEngineJob } from './helpers';
import type { OutputEntry } from '../src/utils/types';

test.describe.configure({ mode: 'serial' });

const NAME = 'upscaler_engine';
const MODELS = path.join(E2E_DIR, 'upscaler_models', 'ESRGAN');
const UPSCALER = path.join(MODELS, 'tiny_x4.safetensors');
const PYTHON = path.resolve('..', '.venv', 'bin', 'python');
let jobId = '';
let page: Page;
let modelsBefore = '';

test.beforeAll(async ({ browser, request }) => {
  await stopAllEngines(request); // one job runs on a GPU at a time: another spec's engine would keep this one queued
  mkdirSync(MODELS, { recursive: true });
  // the test suite's own RRDBNet file, written out from BasicSR's key list (testing/test_upscalers.py)
  const write = 'import sys; from safetensors.torch import save_file; from testing.test_upscalers import basicsr_layout; save_file(basicsr_layout(), sys.argv[1])';
  execFileSync(PYTHON, ['-c', write, UPSCALER], { cwd: path.resolve('..') });
  const settings = await (await request.get('/api/settings', { headers: authHeaders() })).json();
  modelsBefore = settings.MODELS_PATH ?? '';
  const saved = await request.post('/api/settings', { headers: authHeaders(), data: { MODELS_PATH: path.dirname(MODELS) } });
  expect(saved.status(), await saved.text()).toBe(200);
  const engine = { warm_up: false };
  jobId = await startEngineJob(request, NAME, { job: 'extension', config: { name: NAME, process: [{ type: 'InferenceEngine', device: 'auto', engine }] } });
  page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  await page.addInitScript((token) => localStorage.setItem('AI_TOOLKIT_AUTH', token), TOKEN);
});

test.afterAll(async ({ request }) => {
  await page?.close();
  if (jobId) await stopEngineJob(request, jobId, NAME);
  await request.post('/api/settings', { headers: authHeaders(), data: { MODELS_PATH: modelsBefore } });
});

test('an upscaler file picked in the gallery upscales a result ×2 before the refine, and the file names it', async ({ request }) => {
  await page.goto(`/generate?job=${jobId}`);
  await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 120_000 });
  const data = {
    model: { arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float32' },
    sample: { prompt: 'a start for an upscale', width: 64, height: 64, num_inference_steps: 3, seed: 5 },
  };
  const made = await request.post(`/api/inference/generate?wait=1&job=${jobId}`, { headers: authHeaders(), data, timeout: 120_000 });
  expect(made.status()).toBe(200);
  const source = (await made.json()).result as { path: string };

  const item = page.locator('[data-testid="gallery-item"]').filter({ hasText: 'a start for an upscale' }).first();
  await expect(item).toBeVisible({ timeout: 60_000 });
  const picker = page.getByTestId('gallery-upscaler');
  await expect(picker.locator('option')).toHaveText(['Upscale with Lanczos', 'Upscale with tiny_x4.safetensors']);
  await picker.selectOption({ label: 'Upscale with tiny_x4.safetensors' });
  const before = await galleryTotal(page);
  await item.getByTestId('gallery-upscale').click();
  await expect(page.getByTestId('gallery-total')).toHaveText(String(before + 1), { timeout: 240_000 });
  const [upscaled] = (await (await request.get(`/api/inference/outputs?limit=1&job=${jobId}`, { headers: authHeaders() })).json()) as OutputEntry[];
  expect(upscaled.meta?.result).toMatchObject({ width: 128, height: 128 });
  expect(upscaled.meta!.config!.sample).toMatchObject({ init_image: source.path, upscale: 2, upscaler: UPSCALER });
});
