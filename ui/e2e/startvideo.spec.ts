/**
 * Video-to-video on the real stack (CPU engine, tiny:wan21 at 64 px, 9 frames): a gallery video sent to the Start
 * video panel with "Use as input" (by its path), run at a picked strength, the result's sidecar recording both and
 * Reuse putting them back; an mp4 picked from disk uploaded to the engine's assets (every frame decoded there) and
 * named by its asset id; a family without the task shows no panel.
 */
import { type Page, expect, test } from '@playwright/test';
import { authHeaders, authedPage, ensureEngine, galleryItems, galleryTotal, runStatus, screenshotOf, setNumber } from './helpers';
import type { OutputEntry } from '../src/utils/types';

test.describe.configure({ mode: 'serial' });

let page: Page;
let source: OutputEntry;

test.beforeAll(async ({ browser }) => {
  page = await authedPage(browser, { width: 1440, height: 1000 });
  await ensureEngine(page);
});

test.afterAll(async () => {
  await page?.close();
});

async function newest(): Promise<OutputEntry> {
  const [made] = await (await page.request.get('/api/inference/outputs?limit=1', { headers: authHeaders() })).json();
  return made;
}

async function generateAndWait() {
  const before = await galleryTotal(page);
  await page.getByTestId('generate').click();
  await expect(page.getByTestId('gallery-total')).toHaveText(String(before + 1), { timeout: 240_000 });
  await expect(runStatus(page)).toHaveText('done');
}

const panel = () => page.getByTestId('start-video');

test('a gallery video as the start video: the result records it and its strength, Reuse brings both back', async () => {
  // the form's starting settings (remembered, or the demo model) are decided once the engine's families load
  await expect(page.getByTestId('generate-form')).toHaveAttribute('data-ready', 'true');
  await page.getByTestId('arch-select').selectOption('wan21');
  await expect(page.getByTestId('model-path')).toHaveValue('tiny:wan21');
  await expect(page.getByTestId('start-image')).toHaveCount(0); // Wan 2.1 does not start from a picture
  await setNumber(page, 'width', 64);
  await setNumber(page, 'height', 64);
  await setNumber(page, 'num_frames', 9);
  await setNumber(page, 'num_inference_steps', 6);
  await page.getByTestId('output_ext').selectOption('mp4');
  await generateAndWait();
  source = await newest();
  expect(source.name).toMatch(/\.mp4$/);

  await expect(panel()).toHaveAttribute('data-ref', '');
  const item = page.locator(`[data-testid="gallery-item"][data-name="${source.name}"]`);
  await item.getByTestId('gallery-use-input').click();
  await expect(panel()).toHaveAttribute('data-ref', source.path); // its path: nothing uploaded
  await expect(page.getByTestId('start-video-preview')).toBeVisible();
  await expect(page.getByTestId('video-strength-value')).toHaveText('0.75'); // the engine's default
  await page.getByTestId('video-strength').fill('0.5');
  await expect(page.getByTestId('video-strength-value')).toHaveText('0.50');
  await screenshotOf(panel(), 'start-video.png');

  const uploads: string[] = [];
  page.on('request', (r) => r.url().includes('/api/inference/assets') && r.method() === 'POST' && uploads.push(r.url()));
  await generateAndWait();
  expect(uploads).toHaveLength(0);
  const made = await newest();
  expect(made.meta!.config!.sample).toMatchObject({ init_video: source.path, strength: 0.5, num_frames: 9 });
  expect(made.meta?.result).toMatchObject({ kind: 'video', width: 64, height: 64 });

  await page.getByTestId('start-video-clear').click();
  await expect(panel()).toHaveAttribute('data-ref', '');
  await galleryItems(page).first().getByTestId('gallery-open').click();
  await page.getByTestId('viewer-reuse').click();
  await expect(panel()).toHaveAttribute('data-ref', source.path);
  await expect(page.getByTestId('video-strength-value')).toHaveText('0.50');
});

test('an mp4 picked from disk is uploaded and named by its asset id; a family without the task shows no panel', async () => {
  const bytes = await (await page.request.get(source.url, { headers: authHeaders() })).body();
  await page.getByTestId('start-video-clear').click();
  await page.getByTestId('start-video-file').setInputFiles({ name: 'clip.mp4', mimeType: 'video/mp4', buffer: bytes });
  await expect(page.getByTestId('start-video-info')).toContainText('uploaded video 64×64');
  const id = await panel().getAttribute('data-ref');
  expect(id).toBeTruthy();
  expect(id).not.toContain('/'); // an asset id, not a path on the engine's machine
  await generateAndWait();
  expect((await newest()).meta!.config!.sample!.init_video).toContain(id);

  // a picture that is not a video is refused by the engine's upload check, by name
  await page.getByTestId('start-video-clear').click();
  await page.getByTestId('start-video-file').setInputFiles({ name: 'clip.mp4', mimeType: 'video/mp4', buffer: Buffer.from('not a video') });
  await expect(page.getByTestId('start-video-error')).toBeVisible();
  await expect(panel()).toHaveAttribute('data-ref', '');

  await page.getByTestId('arch-select').selectOption('sd1');
  await expect(panel()).toHaveCount(0);
  await expect(page.getByTestId('start-image')).toBeVisible();
});
