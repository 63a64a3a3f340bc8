/**
 * Compare mode on the real stack (see playwright.config.ts): a training run that saved three checkpoints of one
 * LoRA (steps 250, 500, 750) into the training folder shows as a job with three checkpoints by step; its own
 * sample prompts are the grid's rows; the grid's three columns fill in live, each cell painting its latents
 * before its result, and a reload attaches again to the grid, the engine's; a cell opens in the result viewer,
 * whose Reuse sends its settings to the form, and the grid lands in the gallery as one item.
 */
import { type Page, expect, test } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TRAINING_FOLDER, authedPage, ensureEngine, screenshot, setNumber, stopAllEngines } from './helpers';

test.describe.configure({ mode: 'serial' });

let page: Page;
const JOB = 'fox_compare';
const STEPS = [250, 500, 750];

function python(args: string[]) {
  const done = spawnSync(path.resolve('..', '.venv', 'bin', 'python'), args, { cwd: path.resolve('..'), encoding: 'utf8' });
  expect(done.status, done.stderr).toBe(0);
  return done.stdout.trim();
}

test.beforeAll(async ({ browser, request }) => {
  await stopAllEngines(request);
  const jobDir = path.join(TRAINING_FOLDER, JOB);
  mkdirSync(jobDir, { recursive: true });
  writeFileSync(
    path.join(jobDir, 'config.yaml'),
    `job: extension\nconfig:\n  name: ${JOB}\n  process:\n    - type: sd_trainer\n      trigger_word: f0x\n` +
      `      model:\n        arch: sd1\n      sample:\n        prompts:\n          - "[trigger] in a field"\n          - "a red house"\n`,
  );
  for (const [i, step] of STEPS.entries())
    python(['testing/write_tiny_lora.py', path.join(jobDir, `${JOB}_${String(step).padStart(9, '0')}.safetensors`), '--step', String(step), '--seed', String(i + 1)]);
  page = await authedPage(browser);
});

test.afterAll(async ({ request }) => {
  await page?.close();
  await stopAllEngines(request);
});

test('a training job’s three checkpoints compare as three columns that fill in live, and a cell opens in the viewer', async () => {
  await ensureEngine(page);
  await page.getByTestId('arch-select').selectOption('sd1');
  await page.getByTestId('model-path').fill('tiny:sd1');
  await setNumber(page, 'width', 64);
  await setNumber(page, 'height', 64);
  await setNumber(page, 'num_inference_steps', 40); // a cell takes about a second: the grid is seen filling in
  await setNumber(page, 'seed', 5);
  await expect(page.getByTestId('gallery')).toHaveAttribute('data-loaded', 'true');
  const before = Number(await page.getByTestId('gallery-total').textContent());

  await page.getByTestId('compare-mode').click();
  await expect(page.getByTestId('compare-panel')).toBeVisible();
  await page.getByTestId('compare-job').selectOption(JOB);
  const boxes = page.getByTestId('compare-checkpoint');
  await expect(boxes).toHaveCount(3);
  for (const [i, step] of STEPS.entries()) {
    await expect(boxes.nth(i)).toHaveAttribute('data-step', String(step));
    await expect(boxes.nth(i)).toBeChecked();
  }
  // the job's own sample prompts, its trigger word filled in
  await expect(page.getByTestId('compare-prompts')).toHaveValue('f0x in a field\na red house');

  await page.getByTestId('compare-run').click();
  await expect(page.getByTestId('grid-column')).toHaveText(STEPS.map((s) => `step ${s}`));
  await expect(page.getByTestId('grid-row')).toHaveText(['f0x in a field', 'a red house']);
  const cells = page.getByTestId('grid-cell');
  await expect(cells).toHaveCount(6);
  // live: a cell's result shows while later cells still wait
  await expect(page.locator('[data-testid="grid-cell"][data-status="done"]').first()).toBeVisible({ timeout: 240_000 });
  await expect(page.locator('[data-testid="grid-cell"][data-status="queued"]').first()).toBeVisible();
  const done = page.locator('[data-testid="grid-cell"][data-status="done"]');
  for (let i = 0; i < (await done.count()); i++) expect(Number(await done.nth(i).getAttribute('data-latents'))).toBeGreaterThan(0); // each painted its own
  // the grid is the engine's: a reload comes back to Compare mode and attaches to it where it stands
  await page.reload();
  await expect(page.getByTestId('compare-panel')).toBeVisible();
  await expect(page.getByTestId('grid-column')).toHaveText(STEPS.map((s) => `step ${s}`));
  await expect(page.getByTestId('grid-cell-result')).toHaveCount(6, { timeout: 240_000 });
  await expect(page.getByTestId('compare-status')).toHaveText('6 of 6 cells · done');

  await expect(page.getByTestId('compare-page')).toHaveAttribute('href', /grid_.*\.png/);
  const replay = JSON.parse(decodeURIComponent((await page.getByTestId('compare-replay').getAttribute('href'))!.split(',')[1]));
  expect(replay.axes[0]).toEqual({ name: 'lora', values: STEPS.map((s) => path.join(TRAINING_FOLDER, JOB, `${JOB}_${String(s).padStart(9, '0')}.safetensors`)) });
  await screenshot(page, 'compare.png');
  await cells.nth(4).click(); // the 500-step checkpoint on the second prompt
  const viewer = page.getByTestId('viewer');
  await expect(viewer).toBeVisible();
  await expect(page.getByTestId('viewer-position')).toHaveText('5 / 6');
  await expect(viewer).toContainText('a red house');
  await page.getByTestId('viewer-reuse').click(); // the cell's settings to the form
  await expect(viewer).toBeHidden();
  await expect(page.getByTestId('prompt')).toHaveValue('a red house');
  await expect(page.getByTestId('seed')).toHaveValue('5');
  // the grid is one item of the gallery, its page, which opens in the viewer too
  await expect(page.getByTestId('gallery-total')).toHaveText(String(before + 1), { timeout: 30_000 });
  const item = page.getByTestId('gallery-item').first();
  await expect(item).toHaveAttribute('data-name', /^grid_.*\.png$/);
  await item.getByTestId('gallery-open').click();
  await expect(viewer).toBeVisible();
  await expect(viewer.locator('img').first()).toHaveAttribute('src', /grid_/);
});
