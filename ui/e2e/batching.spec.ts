/**
 * Requests on one model share steps (`engine.max_batch: 0`): runs sent while one runs join
 * it instead of waiting, the queue panel lists them as sharing, one of them is cancelled from there, and the
 * others finish with their own files. Its own engine job, started through the jobs API as the UI starts jobs.
 */
import { type Page, expect, test } from '@playwright/test';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { TOKEN, TRAINING_FOLDER, authHeaders, startEngineJob, stopEngineJob } from './helpers';

test.describe.configure({ mode: 'serial' });

const NAME = 'batching_engine';
const OUTPUTS = path.join(TRAINING_FOLDER, NAME, 'outputs');
let jobId = '';
let page: Page;

function resultsOf(requestId: string): string[] {
  try {
    return readdirSync(OUTPUTS).filter((n) => n.startsWith(requestId) && n.endsWith('.png'));
  } catch {
    return [];
  }
}

test.beforeAll(async ({ browser, request }) => {
  const config = { job: 'extension', config: { name: NAME, process: [{ type: 'InferenceEngine', device: 'auto', engine: { warm_up: false, max_batch: 0 } }] } };
  jobId = await startEngineJob(request, NAME, config);
  page = await browser.newPage();
  await page.addInitScript((token) => localStorage.setItem('AI_TOOLKIT_AUTH', token), TOKEN);
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
});

test.afterAll(async ({ request }) => {
  await page?.close();
  if (jobId) await stopEngineJob(request, jobId, NAME);
});

test('runs sent while one runs share its steps: listed as sharing, one cancelled from the list, the rest finish', async ({ request }) => {
  const run = async (prompt: string, steps: number, seed: number) => {
    const data = {
      model: { arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float32' },
      sample: { prompt, width: 256, height: 256, num_inference_steps: steps, guidance_scale: 5, seed },
    };
    const res = await request.post(`/api/inference/generate?detach=1&job=${jobId}`, { headers: authHeaders(), data });
    expect(res.status()).toBe(202);
    return (await res.json()).request_id as string;
  };
  await page.goto(`/generate?job=${jobId}`);
  await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 120_000 });
  const first = await run('the first run', 500, 1);
  await expect(page.getByTestId('queue-running')).toBeVisible({ timeout: 120_000 });
  const second = await run('a second run', 450, 2);
  const third = await run('a third run', 20, 3);

  // The second joins at once (the third may too, and finish): nobody waits in line.
  await expect(page.locator(`[data-testid="queue-sharing"][data-request-id="${second}"]`)).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId('queue-item')).toHaveCount(0);
  await expect.poll(() => resultsOf(third).length, { timeout: 60_000 }).toBe(1);

  // Cancelled from the list, the second ends; the first goes on and is cancelled after it.
  await page.locator(`[data-testid="queue-sharing"][data-request-id="${second}"]`).getByTestId('queue-sharing-cancel').click();
  await expect(page.getByTestId('queue-sharing')).toHaveCount(0, { timeout: 30_000 });
  await expect(page.getByTestId('queue-running')).toBeVisible();
  const health = await (await request.get(`/api/inference/health?job=${jobId}`, { headers: authHeaders() })).json();
  const merged = Object.entries(health.batching.calls_by_size as Record<string, number>).filter(([size]) => Number(size) > 1);
  expect(merged.length).toBeGreaterThan(0);
  await request.post(`/api/inference/cancel/${first}?job=${jobId}`, { headers: authHeaders() });
  await expect(page.getByTestId('queue')).toHaveCount(0, { timeout: 60_000 });
  expect(resultsOf(second)).toEqual([]);
  expect(resultsOf(first)).toEqual([]);
});
