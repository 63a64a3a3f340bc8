/**
 * Runs are the engine's, not the tab's (useGeneration: `?detach=1`, `GET /requests/{id}/frames`, `GET /queue`):
 * the form stays editable while a run goes on, more runs queue behind it with their places in line, one can be
 * cancelled while it waits, and a reload mid-run re-attaches to the same run, which continues and finishes; waiting
 * runs are reordered from the list, each shows an ETA from the runs the engine measured, the running one its seed,
 * step and a thumbnail, and Cancel all empties the line. Its own engine job, started through the jobs API as the UI
 * starts jobs.
 */
import { type Page, expect, test } from '@playwright/test';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import {
  TOKEN, TRAINING_FOLDER, authHeaders, currentStep, runStatus, screenshot, screenshotOf, setNumber, startEngineJob, stopEngineJob, waitForStep,
} from './helpers';

test.describe.configure({ mode: 'serial' });

const NAME = 'queue_engine';
const OUTPUTS = path.join(TRAINING_FOLDER, NAME, 'outputs');
let jobId = '';
let page: Page;

function jobConfig() {
  // One run at a time: these tests need runs that wait in line, and requests on one model would share steps.
  const engine = { warm_up: false, max_batch: 1 };
  return { job: 'extension', config: { name: NAME, process: [{ type: 'InferenceEngine', device: 'auto', engine }] } };
}

function resultsOf(requestId: string): string[] {
  try {
    return readdirSync(OUTPUTS).filter((n) => n.startsWith(requestId) && !n.endsWith('.json'));
  } catch {
    return [];
  }
}

test.beforeAll(async ({ browser, request }) => {
  jobId = await startEngineJob(request, NAME, jobConfig());
  page = await browser.newPage();
  await page.addInitScript((token) => localStorage.setItem('AI_TOOLKIT_AUTH', token), TOKEN);
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
});

test.afterAll(async ({ request }) => {
  await page?.close();
  if (jobId) await stopEngineJob(request, jobId, NAME);
});

async function fillForm(prompt: string, steps: number) {
  await page.getByTestId('prompt').fill(prompt);
  await setNumber(page, 'num_inference_steps', steps);
}

test('queue three runs while one runs, cancel one, reload mid-run: the run continues and every queued run finishes', async () => {
  await page.goto(`/generate?job=${jobId}`);
  await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 120_000 });
  await page.getByTestId('arch-select').selectOption('sd1');
  await page.getByTestId('model-path').fill('tiny:sd1');
  await setNumber(page, 'width', 64);
  await setNumber(page, 'height', 64);
  await fillForm('the long run', 400);
  await page.getByTestId('generate').click();
  await waitForStep(page, 3, 120_000);
  const longRun = await page.getByTestId('preview-panel').getAttribute('data-request-id');
  expect(longRun).toMatch(/^[0-9a-f]{32}$/);

  // The form is editable mid-run, and Generate queues.
  for (const prompt of ['queued one', 'queued two', 'queued three']) {
    await fillForm(prompt, 4);
    await expect(page.getByTestId('generate')).toBeEnabled();
    await page.getByTestId('generate').click();
  }
  await expect(page.getByTestId('queue-item')).toHaveCount(3);
  await expect(page.getByTestId('queue-position')).toHaveText(['#1', '#2', '#3']);
  await expect(page.getByTestId('queue-item').nth(1)).toContainText('queued two');
  await screenshot(page, 'generate-queue.png');

  // Cancel the middle one while it waits: the one behind it moves up.
  await page.getByTestId('queue-cancel').nth(1).click();
  await expect(page.getByTestId('queue-item')).toHaveCount(2);
  await expect(page.getByTestId('queue-item')).toContainText(['queued one', 'queued three']);
  await expect(page.getByTestId('queue-position')).toHaveText(['#1', '#2']);

  // A reload mid-run: the page follows the same run again, from where it stands.
  const before = await currentStep(page);
  expect(before).toBeLessThan(400);
  await page.reload();
  await expect(page.getByTestId('preview-panel')).toHaveAttribute('data-request-id', longRun!, { timeout: 30_000 });
  await expect.poll(() => currentStep(page), { timeout: 60_000 }).toBeGreaterThan(before);
  await expect(page.getByTestId('queue-item')).toHaveCount(2);
  await expect.poll(() => resultsOf(longRun!).length, { timeout: 240_000 }).toBe(1);

  // Then the two still queued run in order, and the preview follows each; nothing is left waiting.
  await expect(page.getByTestId('queue')).toHaveCount(0, { timeout: 120_000 });
  await expect(runStatus(page)).toHaveText('done', { timeout: 60_000 });
  await expect(page.getByTestId('step-counter')).toHaveText('4 / 4');
  const files = readdirSync(OUTPUTS).filter((n) => n.endsWith('.png'));
  expect(files.length).toBe(3); // the long run and two queued ones: the cancelled one made nothing
});

test('a batch of 4 from the form: four results with consecutive seeds, each its own file, all in the gallery', async () => {
  const before = readdirSync(OUTPUTS).filter((n) => n.endsWith('.png')).length;
  await fillForm('four of a kind', 3);
  await setNumber(page, 'seed', 100);
  await setNumber(page, 'batch_count', 4);
  await page.getByTestId('generate').click();
  await expect(page.getByTestId('batch-progress')).toBeVisible({ timeout: 60_000 });
  await expect(runStatus(page)).toHaveText('done', { timeout: 240_000 });
  await expect(page.getByTestId('batch-progress')).toHaveText('image 4 of 4');
  const requestId = (await page.getByTestId('preview-panel').getAttribute('data-request-id'))!;
  const sidecars = readdirSync(OUTPUTS).filter((n) => n.startsWith(requestId) && n.endsWith('.json'));
  const seeds = sidecars.map((n) => JSON.parse(readFileSync(path.join(OUTPUTS, n), 'utf8')).seed).sort((a, b) => a - b);
  expect(seeds).toEqual([100, 101, 102, 103]);
  expect(readdirSync(OUTPUTS).filter((n) => n.endsWith('.png')).length).toBe(before + 4);
  const captions = page.getByTestId('gallery-item').filter({ hasText: 'four of a kind' }).getByTestId('gallery-caption');
  await expect(captions).toHaveCount(4);
  for (const seed of [100, 101, 102, 103]) await expect(captions.filter({ hasText: `seed ${seed}` })).toHaveCount(1);
});

test('waiting runs move up, down and to the front, each with an ETA; the running one shows its seed and a thumbnail; Cancel all empties the line', async ({ request }) => {
  // runs of tiny:sd1 at 64 px in 4 steps finished above: the engine has measured them
  const body = (prompt: string, steps: number, seed: number, size: number) => ({
    model: { arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float32' },
    sample: { prompt, width: size, height: size, num_inference_steps: steps, guidance_scale: 5, seed },
  });
  const queueRun = async (prompt: string, steps: number, seed: number, size = 64) => {
    const res = await request.post(`/api/inference/generate?detach=1&job=${jobId}`, { headers: authHeaders(), data: body(prompt, steps, seed, size) });
    expect(res.status()).toBe(202);
    return (await res.json()).request_id as string;
  };
  const long = await queueRun('the long run again', 500, 77, 256); // 500 steps (the most) at 64 px end in seconds
  await expect(page.getByTestId('queue-running')).toContainText('the long run again', { timeout: 60_000 });
  await expect(page.getByTestId('queue-running-seed')).toHaveText('seed 77');
  await expect(page.getByTestId('queue-running')).toContainText(/step \d+\/500/, { timeout: 60_000 });
  await expect(page.getByTestId('queue-running-thumb')).toHaveAttribute('data-drawn', 'true', { timeout: 60_000 });
  await expect(page.getByTestId('queue-running').getByTestId('queue-eta')).toHaveText(/^ETA \d/);
  for (const [i, prompt] of ['first in line', 'second in line', 'third in line'].entries()) await queueRun(prompt, 4, 200 + i);
  const items = page.getByTestId('queue-item');
  await expect(items).toHaveCount(3);
  for (let i = 0; i < 3; i++) await expect(items.nth(i).getByTestId('queue-eta')).toHaveText(/^ETA \d/); // measured runs: a number, not "unknown"
  const order = () => items.evaluateAll((els) => els.map((e) => e.textContent!.match(/(first|second|third) in line/)![1]));

  await items.nth(2).getByTestId('queue-move-top').click();
  await expect.poll(order).toEqual(['third', 'first', 'second']);
  await expect(page.getByTestId('queue-position')).toHaveText(['#1', '#2', '#3']);
  await items.nth(0).getByTestId('queue-move-down').click();
  await expect.poll(order).toEqual(['first', 'third', 'second']);
  await items.nth(2).getByTestId('queue-move-up').click();
  await expect.poll(order).toEqual(['first', 'second', 'third']);
  await expect(items.nth(0).getByTestId('queue-move-up')).toBeDisabled();
  await expect(items.nth(2).getByTestId('queue-move-down')).toBeDisabled();
  // the engine's own line says the same
  const line = await (await request.get(`/api/inference/queue?job=${jobId}`, { headers: authHeaders() })).json();
  expect(line.pending.map((r: { prompt: string }) => r.prompt)).toEqual(['first in line', 'second in line', 'third in line']);
  expect(line.pending.every((r: { eta_basis: string }) => r.eta_basis === 'measured')).toBe(true);
  // a bad move is a 422 naming the field
  const bad = await request.post(`/api/inference/queue/${line.pending[0].request_id}/move?job=${jobId}`, { headers: authHeaders(), data: { position: 0 } });
  expect(bad.status()).toBe(422);
  expect((await bad.json()).detail[0].loc).toEqual(['body', 'position']);
  await screenshotOf(page.getByTestId('queue'), 'generate-queue-controls.png');

  await page.getByTestId('queue-cancel-all').click();
  await page.getByTestId('queue-cancel-all-confirm').click();
  await expect(page.getByTestId('queue')).toHaveCount(0, { timeout: 60_000 });
  await expect(runStatus(page)).toHaveText('cancelled', { timeout: 60_000 });
  const after = await (await request.get(`/api/inference/queue?job=${jobId}`, { headers: authHeaders() })).json();
  expect(after).toEqual({ running: null, sharing: [], pending: [] });
  expect(resultsOf(long)).toEqual([]);
});
