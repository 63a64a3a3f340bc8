/**
 * The model and LoRA libraries on the real stack (see playwright.config.ts): a checkpoint folder under the
 * engine's model folder (MODELS_PATH) picked from the library sets the arch to its family and the CPU engine's
 * dtype; a LoRA AI Toolkit trained into the training folder is found by its job's name, shows its trigger word
 * and sample image, and the result's caption names it; `<lora:job:0.5>` in the prompt applies the job's LoRA,
 * and a tag naming no LoRA is refused by name.
 */
import { type Page, expect, test } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  E2E_DIR, TRAINING_FOLDER, authHeaders, authedPage, ensureEngine, galleryItems, galleryTotal, runStatus, setNumber, stopAllEngines,
} from './helpers';

test.describe.configure({ mode: 'serial' });

let page: Page;
let modelsBefore = '';
const MODELS = path.join(E2E_DIR, 'library_models');
const CHECKPOINT = path.join(MODELS, 'e2e-sd15');
const JOB = 'fox_library';
const TINY_CACHE = process.env.AITK_TINY_CACHE ?? path.join(E2E_DIR, 'tiny_cache');

function python(args: string[]) {
  const done = spawnSync(path.resolve('..', '.venv', 'bin', 'python'), args, {
    cwd: path.resolve('..'), env: { ...process.env, AITK_TINY_CACHE: TINY_CACHE }, encoding: 'utf8',
  });
  expect(done.status, done.stderr).toBe(0);
  return done.stdout.trim();
}

test.beforeAll(async ({ browser, request }) => {
  await stopAllEngines(request); // the engine this spec starts reads the models folder set below
  const settings = await (await request.get('/api/settings', { headers: authHeaders() })).json();
  modelsBefore = settings.MODELS_PATH ?? '';
  // a diffusers folder of its own under the models folder: the tiny SD 1.5 checkpoint, copied
  mkdirSync(MODELS, { recursive: true });
  cpSync(python(['-c', "from toolkit.models.tiny import tiny_checkpoint; print(tiny_checkpoint('sd1'))"]), CHECKPOINT, { recursive: true });
  const saved = await request.post('/api/settings', { headers: authHeaders(), data: { MODELS_PATH: MODELS } });
  expect(saved.status(), await saved.text()).toBe(200);
  // what a finished training run leaves: the save, its config with the trigger word, a sample at that step
  const jobDir = path.join(TRAINING_FOLDER, JOB);
  mkdirSync(path.join(jobDir, 'samples'), { recursive: true });
  writeFileSync(path.join(jobDir, 'config.yaml'),
    `job: extension\nconfig:\n  name: ${JOB}\n  process:\n    - type: sd_trainer\n      trigger_word: f0x style\n      model:\n        arch: sd1\n`);
  python(['testing/write_tiny_lora.py', path.join(jobDir, `${JOB}_000000250.safetensors`)]);
  python(['-c', `from PIL import Image; Image.new('RGB', (16, 16), (220, 90, 20)).save(${JSON.stringify(path.join(jobDir, 'samples', '1700000000__000000250_0.jpg'))})`]);
  page = await authedPage(browser);
});

test.afterAll(async ({ request }) => {
  await page?.close();
  await stopAllEngines(request);
  await request.post('/api/settings', { headers: authHeaders(), data: { MODELS_PATH: modelsBefore } });
});

test('a checkpoint picked from the model library brings its family and the engine’s dtype', async () => {
  await ensureEngine(page);
  await page.getByTestId('arch-select').selectOption('flux');
  await setNumber(page, 'width', 512);
  await page.getByTestId('model-search').fill('e2e-sd15');
  const row = page.getByTestId('model-library-item').and(page.locator(`[data-path="${CHECKPOINT}"]`));
  await expect(row).toContainText('sd1 · diffusers folder');
  await row.click();
  await expect(page.getByTestId('arch-select')).toHaveValue('sd1'); // the arch follows the checkpoint
  await expect(page.getByTestId('model-path')).toHaveValue(CHECKPOINT);
  await expect(page.locator('#dtype')).toHaveValue('float32'); // a CPU engine computes in float32
  // the size its config says it was trained at: the tiny UNet's sample_size times the VAE's 8
  const native = String(JSON.parse(readFileSync(path.join(CHECKPOINT, 'unet', 'config.json'), 'utf8')).sample_size * 8);
  await expect(page.getByTestId('width')).toHaveValue(native);
  await expect(page.getByTestId('height')).toHaveValue(native);
  // a published checkpoint of each family is in the library too, found by family
  await page.getByTestId('model-search').fill('zimage:turbo');
  await expect(page.getByTestId('model-library-item').first()).toContainText('Tongyi-MAI/Z-Image-Turbo');
});

test('a LoRA found by its job name shows its trigger word and sample, and the caption names it', async () => {
  await page.getByTestId('lora-refresh').click();
  await page.getByTestId('lora-search').fill(JOB);
  await expect(page.getByTestId('lora-select').locator('option', { hasText: `${JOB} · step 250 · sd1` })).toHaveCount(1);
  await page.getByTestId('lora-add').click(); // the search picked its first match
  const chosen = page.getByTestId('lora-chosen');
  await expect(chosen).toHaveCount(1);
  await expect(chosen).toContainText(`${JOB} · step 250`);
  await expect(page.getByTestId('lora-triggers')).toContainText('f0x style');
  await expect(page.getByTestId('lora-preview')).toBeVisible();
  await expect(chosen).toContainText(`<lora:${JOB}_000000250:1>`);

  await setNumber(page, 'width', 64);
  await setNumber(page, 'height', 64);
  await setNumber(page, 'num_inference_steps', 3);
  await page.getByTestId('prompt').fill('a fox');
  const before = await galleryTotal(page);
  await page.getByTestId('generate').click();
  await expect(runStatus(page)).toHaveText('done', { timeout: 240_000 });
  await expect.poll(() => galleryTotal(page), { timeout: 30_000 }).toBe(before + 1);
  await expect(galleryItems(page).first()).toContainText(`LoRA ${JOB}_000000250 1`, { timeout: 30_000 });
  // the checkpoint's newest result is its thumbnail in the library
  await page.getByTestId('model-refresh').click();
  await page.getByTestId('model-search').fill('e2e-sd15');
  await expect(page.getByTestId('model-library-item').first().getByTestId('model-thumbnail')).toBeVisible();
  await page.getByTestId('lora-remove').click();
});

test('<lora:job:0.5> in the prompt applies the job’s LoRA; a tag naming none is refused by name', async () => {
  await page.getByTestId('prompt').fill(`a fox <lora:${JOB}:0.5>`);
  const before = await galleryTotal(page);
  await page.getByTestId('generate').click();
  await expect.poll(() => galleryTotal(page), { timeout: 240_000 }).toBe(before + 1);
  await expect(runStatus(page)).toHaveText('done');
  await expect(galleryItems(page).first()).toContainText(`LoRA ${JOB}_000000250 0.5`, { timeout: 30_000 });
  const outputs = await (await page.request.get('/api/inference/outputs?limit=1', { headers: authHeaders() })).json();
  expect(outputs[0].meta.config.sample.prompt).toBe('a fox'); // the tag is not encoded
  expect(outputs[0].meta.config.loras[0]).toMatchObject({ name: `${JOB}_000000250`, multiplier: 0.5, hash: expect.stringMatching(/^[0-9a-f]{12}$/) });

  await page.getByTestId('prompt').fill('a fox <lora:nobody_trained_this:0.8>');
  await page.getByTestId('generate').click();
  await expect(page.getByText(/nobody_trained_this.*names no LoRA/).first()).toBeVisible({ timeout: 30_000 });
});
