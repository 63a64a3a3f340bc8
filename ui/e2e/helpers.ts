/** Small page helpers for the generate flow. */
import { type APIRequestContext, type Browser, type Locator, type Page, expect } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { crc32, deflateSync } from 'node:zlib';
import path from 'node:path';

export const TOKEN = process.env.E2E_TOKEN!;
export const E2E_DIR = process.env.AITK_E2E_DIR!;
export const TRAINING_FOLDER = path.join(E2E_DIR, 'output');
export const ENGINE_JOB_NAME = 'inference_engine_gpu0';

/** Screenshots land in test-results/screenshots; E2E_SCREENSHOT_DIR=../docs/img refreshes the checked-in ones. */
export async function screenshot(page: Page, name: string) {
  const dir = path.resolve(process.env.E2E_SCREENSHOT_DIR ?? 'test-results/screenshots');
  mkdirSync(dir, { recursive: true });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(dir, name), fullPage: false });
}

export async function setNumber(page: Page, testId: string, value: number) {
  const input = page.getByTestId(testId);
  await input.fill(String(value));
  await input.blur();
}

/** The step counter's current step ("12 / 400" -> 12). */
export async function currentStep(page: Page): Promise<number> {
  const text = (await page.getByTestId('step-counter').textContent()) ?? '';
  return Number(text.split('/')[0].trim()) || 0;
}

export async function waitForStep(page: Page, atLeast: number, timeout = 60_000): Promise<number> {
  await expect.poll(() => currentStep(page), { timeout, intervals: [20, 50, 100] }).toBeGreaterThanOrEqual(atLeast);
  return currentStep(page);
}

/** The preview canvas read back as a compact string of its RGBA bytes. */
export function canvasPixels(page: Page): Promise<string> {
  return page.getByTestId('preview-canvas').evaluate((c: HTMLCanvasElement) => {
    const data = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    return `${c.width}x${c.height}:${Array.from(data).join(',')}`;
  });
}

export const runStatus = (page: Page) => page.getByTestId('run-status');
export const galleryItems = (page: Page) => page.getByTestId('gallery-item');

export function authHeaders(token = TOKEN): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** An uncompressed-deflate RGB PNG of random pixels: big on purpose (2048² px is ~12.6 MB, over Next's 10 MB proxy cap). */
export function bigNoisePng(size = 2048): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body) >>> 0);
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const rows = Buffer.alloc(size * (1 + size * 3));
  for (let y = 0; y < size; y++) randomBytes(size * 3).copy(rows, y * (1 + size * 3) + 1); // filter byte 0
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(rows, { level: 0 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A screenshot of one element (below the fold on a phone, where `screenshot` would miss it). */
export async function screenshotOf(locator: Locator, name: string) {
  const dir = path.resolve(process.env.E2E_SCREENSHOT_DIR ?? 'test-results/screenshots');
  mkdirSync(dir, { recursive: true });
  await locator.screenshot({ path: path.join(dir, name) });
}

/** A page that sends the e2e token, as a person who typed it into the AuthGate. */
export async function authedPage(browser: Browser, viewport?: { width: number; height: number }): Promise<Page> {
  const page = await browser.newPage(viewport ? { viewport } : {});
  await page.addInitScript((token) => localStorage.setItem('AI_TOOLKIT_AUTH', token), TOKEN);
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  return page;
}

/** Start the GPU-0 engine from /generate (or keep the one running) and wait until it answers /health. */
export async function ensureEngine(page: Page) {
  await page.goto('/generate');
  // Start before the job list has loaded would try to create the job again (409: the name exists)
  const jobs = (await (await page.request.get('/api/jobs?job_type=inference', { headers: authHeaders() })).json()).jobs;
  if (jobs.some((j: { name: string }) => j.name === ENGINE_JOB_NAME)) await expect(page.getByTestId('engine-status')).toBeVisible();
  const start = page.getByTestId('engine-start');
  const stop = page.getByTestId('engine-stop');
  await expect(start.or(stop)).toBeVisible();
  if (await start.isVisible()) {
    await page.getByTestId('engine-gpu').fill('0');
    await start.click();
  }
  await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 120_000 });
}

/** Stop it from the page, and wait until its process has exited too (Python writes `stopped` just before). */
export async function stopEngine(page: Page) {
  const pid = Number(readFileSync(path.join(TRAINING_FOLDER, ENGINE_JOB_NAME, 'pid.txt'), 'utf8'));
  await page.getByTestId('engine-stop').click();
  await expect(page.getByTestId('engine-status')).toHaveText('stopped', { timeout: 60_000 });
  await expect(page.getByTestId('engine-health')).toHaveText('offline');
  await waitForExit(pid);
}

/** A job's process is gone (Python records `stopped` just before it ends): no engine may outlive its spec. */
export async function waitForExit(pidOrJobName: number | string) {
  const pid = typeof pidOrJobName === 'number'
    ? pidOrJobName
    : Number(readFileSync(path.join(TRAINING_FOLDER, pidOrJobName, 'pid.txt'), 'utf8'));
  await expect
    .poll(() => {
      try {
        process.kill(pid, 0);
        return 'alive';
      } catch {
        return 'gone';
      }
    }, { timeout: 30_000 })
    .toBe('gone');
}

/** An engine job of its own for a spec, created and started through the job API as the UI does; its id. */
export async function startEngineJob(request: APIRequestContext, name: string, jobConfig: unknown): Promise<string> {
  const created = await request.post('/api/jobs', {
    headers: authHeaders(),
    data: { name, gpu_ids: '0', job_config: jobConfig, job_type: 'inference' },
  });
  expect(created.status()).toBe(200);
  const jobId = (await created.json()).id as string;
  expect((await request.post(`/api/jobs/${jobId}/start`, { headers: authHeaders() })).status()).toBe(200);
  expect((await request.post('/api/queue/0/start', { headers: authHeaders() })).status()).toBe(200);
  return jobId;
}

/** Stop a spec's own engine job and wait for its process to exit. */
export async function stopEngineJob(request: APIRequestContext, jobId: string, name: string) {
  await request.post(`/api/jobs/${jobId}/stop`, { headers: authHeaders() });
  await expect
    .poll(async () => (await (await request.get(`/api/jobs?id=${jobId}`, { headers: authHeaders() })).json()).status, { timeout: 60_000 })
    .toBe('stopped');
  await waitForExit(name);
}

/** One tiny:sd1 picture: 64 px, a few steps, this prompt and seed; waits until it is in the gallery. */
export async function generateTiny(page: Page, prompt: string, seed: number, steps = 4) {
  await page.getByTestId('arch-select').selectOption('sd1');
  await page.getByTestId('model-path').fill('tiny:sd1');
  await setNumber(page, 'width', 64);
  await setNumber(page, 'height', 64);
  await setNumber(page, 'num_inference_steps', steps);
  await setNumber(page, 'seed', seed);
  await page.getByTestId('prompt').fill(prompt);
  await expect(page.getByTestId('gallery')).toHaveAttribute('data-loaded', 'true');
  const before = Number(await page.getByTestId('gallery-total').textContent());
  await page.getByTestId('generate').click();
  await expect(runStatus(page)).toHaveText('done', { timeout: 240_000 });
  await expect(page.getByTestId('gallery-total')).toHaveText(String(before + 1));
}

/** document.scrollingElement overflows the window sideways by this many px (0: no horizontal scroll). */
export function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.scrollingElement!.scrollWidth - window.innerWidth);
}

/** Stop every running engine job and wait until none is active: specs that start their own from the page (and
 * check the page's "Start an engine first" state) must not find one another spec left running. */
export async function stopAllEngines(request: APIRequestContext) {
  const active = ['running', 'queued', 'stopping'];
  const list = async () => (await (await request.get('/api/jobs?job_type=inference', { headers: authHeaders() })).json()).jobs as { id: string; status: string }[];
  for (const job of await list()) {
    if (job.status === 'running') await request.post(`/api/jobs/${job.id}/stop`, { headers: authHeaders() });
  }
  await expect.poll(async () => (await list()).filter((j) => active.includes(j.status)).length, { timeout: 60_000 }).toBe(0);
}

/** How many results the gallery holds in all (it shows them a page at a time). */
export async function galleryTotal(page: Page): Promise<number> {
  await expect(page.getByTestId('gallery')).toHaveAttribute('data-loaded', 'true');
  return Number(await page.getByTestId('gallery-total').textContent());
}
