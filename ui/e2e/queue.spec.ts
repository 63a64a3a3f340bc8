/**
 * Runs are the engine's, not the tab's (useGeneration: `?detach=1`, `GET /requests/{id}/frames`, `GET /queue`):
 * the form stays editable while a run goes on, more runs queue behind it with their places in line, one can be
 * cancelled while it waits, and a reload mid-run re-attaches to the same run, which continues and finishes.
 * Its own engine job, started through the jobs API as the UI starts jobs.
 */
import { type Page, expect, test } from '@playwright/test';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { TOKEN, TRAINING_FOLDER, currentStep, runStatus, screenshot, setNumber, startEngineJob, stopEngineJob, waitForStep } from './helpers';

test.describe.configure({ mode: 'serial' });

const NAME = 'queue_engine';
const OUTPUTS = path.join(TRAINING_FOLDER, NAME, 'outputs');
let jobId = '';
let page: Page;

function jobConfig() {
  const engine = { warm_up: false };
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
