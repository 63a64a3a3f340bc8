/**
 * Several engines on one box (#16): one engine job per GPU, both started from /generate; the page lists them with
 * their status, health and resident model, sends a run to the engine picked by hand, and with "Any engine" to the
 * engine that already holds the form's model. On a CPU-only box `device: auto` puts both on the CPU. The Jobs
 * pages show each engine's health, resident model, queue and memory, and "Updated" is when it last answered.
 */
import { type Page, expect, test } from '@playwright/test';
import Database from 'better-sqlite3';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { E2E_DIR, TRAINING_FOLDER, authHeaders, authedPage, horizontalOverflow, runStatus, screenshotOf, setNumber, stopAllEngines, waitForExit } from './helpers';

test.describe.configure({ mode: 'serial' });

// what useEngines.start names an engine job for a GPU (engineJobName)
const ENGINES = [
  { gpu: '0', name: 'inference_engine_gpu0', model: 'tiny:sd1', id: '' },
  { gpu: '1', name: 'inference_engine_gpu1', model: 'builtin:shapes', id: '' },
];
type Engine = (typeof ENGINES)[number];
let page: Page;

/** The results in an engine job's own output folder made by this request. */
function resultsOf(engine: Engine, requestId: string): string[] {
  try {
    return readdirSync(path.join(TRAINING_FOLDER, engine.name, 'outputs')).filter((n) => n.startsWith(requestId) && !n.endsWith('.json'));
  } catch {
    return [];
  }
}

const option = (engine: Engine) => page.locator(`[data-testid="engine-option"][data-job-id="${engine.id}"]`);
const requestId = () => page.getByTestId('preview-panel').getAttribute('data-request-id');

/** Generate 64 px in 3 steps with this model; the request id of the run the preview followed to its end. */
async function generate(model: string, prompt: string, seed: number): Promise<string> {
  await page.getByTestId('arch-select').selectOption('sd1');
  await page.getByTestId('model-path').fill(model);
  await setNumber(page, 'width', 64);
  await setNumber(page, 'height', 64);
  await setNumber(page, 'num_inference_steps', 3);
  await setNumber(page, 'seed', seed);
  await page.getByTestId('prompt').fill(prompt);
  const previous = await requestId();
  await page.getByTestId('generate').click();
  await expect(page.getByTestId('preview-panel')).not.toHaveAttribute('data-request-id', previous ?? '', { timeout: 30_000 });
  await expect(runStatus(page)).toHaveText('done', { timeout: 120_000 });
  const id = (await requestId())!;
  expect(id).toMatch(/^[0-9a-f]{32}$/);
  return id;
}

/** The run's result is in this engine's folder and not in the other's. */
async function expectRanOn(engine: Engine, id: string) {
  await expect.poll(() => resultsOf(engine, id).length, { timeout: 30_000 }).toBe(1);
  for (const other of ENGINES.filter((e) => e !== engine)) expect(resultsOf(other, id)).toEqual([]);
}

async function activeModel(engine: Engine): Promise<string | null> {
  const health = await (await page.request.get(`/api/inference/health?job=${engine.id}`, { headers: authHeaders() })).json();
  return health.active?.name_or_path ?? null;
}

test.beforeAll(async ({ browser, request }) => {
  await stopAllEngines(request); // each GPU's queue runs one job: another spec's engine on GPU 0 would hold ours back
  page = await authedPage(browser);
});

test.afterAll(async ({ request }) => {
  await page?.close();
  await stopAllEngines(request);
  for (const engine of ENGINES) if (engine.id) await waitForExit(engine.name);
  // The GPU 1 engine is this spec's own: left behind, it is the newest engine job, and a later spec's page
  // with no engine running would pick it (the gallery's offline listing read its folder, not GPU 0's).
  const second = ENGINES.find((e) => e.gpu === '1');
  if (second?.id) expect((await request.delete(`/api/jobs/${second.id}/delete`, { headers: authHeaders() })).ok()).toBe(true);
});

test('start an engine on GPU 0 and another on GPU 1 from the page: both listed with their health', async ({ request }) => {
  await page.goto('/generate');
  await page.getByTestId('engine-gpu').fill('0');
  // the settings it starts with: a bad VRAM budget is refused on the page, before any job is written
  await page.getByTestId('engine-vram-budget').fill('lots');
  await expect(page.getByTestId('engine-start')).toBeDisabled();
  await expect(page.getByTestId('engine-controls-error')).toContainText('VRAM budget');
  await page.getByTestId('engine-vram-budget').fill('');
  await page.getByTestId('engine-compile').selectOption('off');
  await page.getByTestId('engine-start').click();
  // one engine per GPU: Start is offered again only for a GPU without one
  await expect(page.getByTestId('engine-start')).toHaveCount(0);
  await page.getByTestId('engine-gpu').fill('1');
  await page.getByTestId('engine-compile').selectOption('auto');
  await page.getByTestId('engine-start').click();
  await expect(page.getByTestId('engine-start')).toHaveCount(0);

  const jobs = (await (await request.get('/api/jobs?job_type=inference', { headers: authHeaders() })).json()).jobs as { id: string; name: string; gpu_ids: string; job_config: string }[];
  for (const [i, engine] of ENGINES.entries()) {
    const job = jobs.find((j) => j.name === engine.name)!;
    expect(job.gpu_ids).toBe(engine.gpu);
    expect(JSON.parse(job.job_config).config.process[0].engine.compile).toBe(['off', 'auto'][i]); // what each started with
    engine.id = job.id;
  }
  for (const engine of ENGINES) {
    await expect(option(engine)).toContainText(`GPU ${engine.gpu}`);
    await expect(option(engine)).toHaveAttribute('data-status', 'running', { timeout: 120_000 });
    await expect(option(engine).getByTestId('engine-option-health')).toHaveText('idle · queue 0 · no model loaded', { timeout: 120_000 });
  }
  await expect(page).toHaveURL(new RegExp(`job=${ENGINES[1].id}`)); // the engine started last is the one selected
});

test('a run sent to each engine picked by hand runs on that engine and leaves its model resident there', async () => {
  for (const [i, engine] of ENGINES.entries()) {
    await option(engine).click();
    await expect(option(engine).locator('input')).toBeChecked();
    await expect(page.getByTestId('engine-name')).toHaveText(engine.name);
    await expect(page.getByTestId('engine-health')).toContainText('online');
    const id = await generate(engine.model, `picked engine ${i}`, 10 + i);
    await expectRanOn(engine, id);
    expect(await activeModel(engine)).toBe(engine.model);
    await expect(option(engine).getByTestId('engine-option-health')).toHaveText(`idle · queue 0 · sd1 (${engine.model})`, { timeout: 10_000 });
  }
  expect(await activeModel(ENGINES[0])).toBe(ENGINES[0].model); // the second run did not touch the first engine
});

test('"Any engine" sends each run to the engine that holds its model, and stays chosen over a reload', async () => {
  await page.getByTestId('engine-any').click();
  await expect(page).toHaveURL(/job=any/);
  for (const [i, engine] of [ENGINES[0], ENGINES[1], ENGINES[0]].entries()) {
    const id = await generate(engine.model, `any engine ${i}`, 20 + i);
    await expect(page.getByTestId('engine-sent-to')).toHaveAttribute('data-job-id', engine.id);
    await expect(page.getByTestId('engine-sent-to')).toHaveText(`Last run sent to ${engine.name}: it holds sd1 (${engine.model})`);
    await expect(page.getByTestId('engine-name')).toHaveText(engine.name); // the page follows the engine it sent to
    await expectRanOn(engine, id);
  }
  for (const engine of ENGINES) await expect(option(engine).getByTestId('engine-option-health')).toContainText('idle');
  await screenshotOf(page.getByTestId('engine-strip'), 'generate-engines.png');

  await page.reload();
  await expect(page.getByTestId('engine-any').locator('input')).toBeChecked();
  await expect(page.getByTestId('engine-health')).toContainText('online');
  await page.setViewportSize({ width: 390, height: 844 });
  await expect(option(ENGINES[1])).toBeVisible();
  expect(await horizontalOverflow(page), 'the engine list on a phone').toBeLessThanOrEqual(0);
});

test("the Jobs pages show an engine's health, resident model, queue and memory, and an Updated that is not stale", async ({ request }) => {
  await page.setViewportSize({ width: 1400, height: 1000 });
  const engine = ENGINES[0];
  // An idle engine leaves its Job row alone: make the row's own time an hour old, as a long idle spell does
  const hourAgo = Date.now() - 3600_000;
  const db = new Database(path.join(E2E_DIR, 'aitk_db.db'));
  db.prepare('UPDATE Job SET updated_at = ? WHERE id = ?').run(hourAgo, engine.id);
  db.close();
  const row = await (await request.get(`/api/jobs?id=${engine.id}`, { headers: authHeaders() })).json();
  expect(new Date(row.updated_at).getTime()).toBe(hourAgo);

  await page.goto(`/jobs/${engine.id}`);
  await expect(page.getByTestId('engine-job-health')).toHaveText('online · idle', { timeout: 30_000 });
  await expect(page.getByTestId('engine-job-model')).toHaveText(`sd1 (${engine.model})`);
  await expect(page.getByTestId('engine-job-queue')).toHaveText('0 waiting');
  await expect(page.getByTestId('engine-job-memory')).toHaveText(/^(models \d+ MB in cpu memory|VRAM .+ used.*)$/);
  await expect(page.getByTestId('engine-job-requests')).not.toHaveText('0');
  await expect(page.getByTestId('job-overview')).not.toContainText('Speed'); // a training job's field, not an engine's
  const heard = async () => Number(await page.getByTestId('job-updated').getAttribute('data-ms'));
  await expect.poll(async () => Date.now() - (await heard()), { timeout: 10_000 }).toBeLessThan(10_000);
  await expect(page.getByTestId('job-updated')).toContainText(/just now|\d+ s ago/);
  await screenshotOf(page.getByTestId('job-overview'), 'jobs-engine-overview.png');

  await page.goto('/jobs');
  const listed = page.locator(`[data-testid="job-row"][data-job-id="${engine.id}"]`);
  await expect(listed.getByTestId('job-row-info')).toHaveText(`idle · queue 0 · sd1 (${engine.model})`, { timeout: 30_000 });
  const rowHeard = async () => Number(await listed.getByTestId('job-row-updated').getAttribute('data-ms'));
  await expect.poll(async () => Date.now() - (await rowHeard()), { timeout: 10_000 }).toBeLessThan(10_000);

  // a stopped engine: offline, and Updated is the row's own time again
  await request.post(`/api/jobs/${ENGINES[1].id}/stop`, { headers: authHeaders() });
  await waitForExit(ENGINES[1].name);
  await page.goto(`/jobs/${ENGINES[1].id}`);
  await expect(page.getByTestId('engine-job-health')).toHaveText('offline', { timeout: 30_000 });
  await expect(page.getByTestId('engine-job-model')).toHaveText('—');
});
