/**
 * The gallery and its viewer on the real stack (see playwright.config.ts): three tiny:sd1 pictures, the viewer's
 * zoom, 1:1, keys, full screen and compare, deleting through the engine, a result dragged into an edit family's
 * control-image slot (no upload) and, with the engine stopped, listing, paging, filtering, downloading and
 * deleting straight from disk; a video and an audio result play in the viewer; search by prompt, sort by date or
 * seed, favourites that survive a reload, and a multi-selection downloaded as one zip and deleted together.
 */
import { type Page, expect, test } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  ENGINE_JOB_NAME, TRAINING_FOLDER, authHeaders, authedPage, ensureEngine, galleryItems, generateTiny, runStatus, screenshot, screenshotOf, setNumber,
  stopEngine,
} from './helpers';

test.describe.configure({ mode: 'serial' });

let page: Page;
const outputs = path.join(TRAINING_FOLDER, ENGINE_JOB_NAME, 'outputs');
const PROMPTS = ['a red fox in the snow', 'a lighthouse at dusk, long exposure, with a very long prompt that must wrap in the caption', 'three green apples'];
const sidecarOf = (name: string) => path.join(outputs, name.replace(/\.[^.]+$/, '.json'));
const zoomPercent = async () => Number((await page.getByTestId('viewer-zoom').textContent())!.replace('%', ''));
/** How far the zoom readout is from `percent` (it is rounded, so 1 off is the same zoom). */
const zoomOff = (percent: number) => async () => Math.abs((await zoomPercent()) - percent);
let jobId = '';

test.beforeAll(async ({ browser }) => {
  page = await authedPage(browser, { width: 1440, height: 900 });
});

test.afterAll(async () => {
  await page?.close();
});

test('three tiny:sd1 pictures land in the gallery with model, steps, CFG and seed in their captions', async ({ request }) => {
  // This spec counts and pages what it makes: the shared engine job's earlier results (other specs') go first.
  for (const name of existsSync(outputs) ? readdirSync(outputs) : []) rmSync(path.join(outputs, name), { recursive: true, force: true });
  await ensureEngine(page);
  for (const [i, prompt] of PROMPTS.entries()) await generateTiny(page, prompt, 1000 + i, 3 + i);
  const jobs = (await (await request.get('/api/jobs?job_type=inference', { headers: authHeaders() })).json()).jobs;
  jobId = jobs.find((j: { name: string }) => j.name === ENGINE_JOB_NAME).id;
  // newest first
  await expect(galleryItems(page).first().getByTestId('gallery-caption')).toContainText(PROMPTS[2]);
  await expect(galleryItems(page).first().getByTestId('gallery-caption')).toContainText('sd1 · tiny:sd1 · 64×64 · 5 steps · CFG');
  await expect(galleryItems(page).first().getByTestId('gallery-caption')).toContainText('seed 1002');
  // the long prompt is shown in full within two lines' clamp or its title, never cut mid-caption by overflow
  const caption = galleryItems(page).nth(1).getByTestId('gallery-caption');
  const fits = await caption.evaluate((el) => el.scrollWidth <= el.clientWidth);
  expect(fits).toBe(true);
  // the listing is the UI server's, read from disk: the same files the engine lists
  const disk = await (await request.get(`/api/outputs?job=${jobId}`, { headers: authHeaders() })).json();
  const engine = await (await request.get(`/api/inference/outputs?job=${jobId}`, { headers: authHeaders() })).json();
  expect(disk.items.map((e: { name: string }) => e.name)).toEqual(engine.map((e: { name: string }) => e.name));
  expect(disk.total).toBe(3);
  await screenshotOf(page.getByTestId('gallery'), 'gallery.png');
});

test('the viewer zooms by buttons, keys and wheel, shows 1:1, steps with ←/→, goes full screen, closes on Esc', async () => {
  await galleryItems(page).first().getByTestId('gallery-open').click();
  const viewer = page.getByTestId('viewer');
  await expect(viewer).toBeVisible();
  await expect(viewer).toHaveAttribute('role', 'dialog');
  await expect(page.getByTestId('viewer-position')).toHaveText('1 / 3');
  await expect(page.getByTestId('viewer-caption')).toContainText(PROMPTS[2]);
  await expect.poll(zoomPercent).toBeGreaterThan(100); // 64 px fitted into the window
  const fit = await zoomPercent();

  await page.getByTestId('viewer-zoom-in').click();
  await expect.poll(zoomOff(fit * 1.25)).toBeLessThanOrEqual(1);
  await page.keyboard.type('-');
  await expect.poll(zoomOff(fit)).toBeLessThanOrEqual(1);
  await page.keyboard.type('+');
  await expect.poll(zoomOff(fit * 1.25)).toBeLessThanOrEqual(1);

  await page.getByTestId('viewer-actual').click();
  await expect(page.getByTestId('viewer-zoom')).toHaveText('100%');
  const img = page.getByTestId('viewer-image');
  expect(await img.evaluate((el: HTMLImageElement) => [el.getBoundingClientRect().width, el.naturalWidth])).toEqual([64, 64]);
  await page.getByTestId('viewer-pane').hover();
  await page.mouse.wheel(0, -200);
  await expect.poll(zoomPercent).toBeGreaterThan(100);
  await page.getByTestId('viewer-actual').click(); // back to fit
  await page.getByTestId('viewer-zoom-in').click();
  await page.keyboard.type('+');
  await expect.poll(zoomOff(fit * 1.25 * 1.25)).toBeLessThanOrEqual(1);
  await screenshot(page, 'viewer-zoom.png');
  await page.keyboard.press('0');
  await expect.poll(zoomOff(fit)).toBeLessThanOrEqual(1);

  const first = await img.getAttribute('src');
  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('viewer-position')).toHaveText('2 / 3');
  await expect(page.getByTestId('viewer-caption')).toContainText(PROMPTS[1]);
  expect(await page.getByTestId('viewer-image').getAttribute('src')).not.toBe(first);
  await page.keyboard.press('ArrowLeft');
  await expect(page.getByTestId('viewer-position')).toHaveText('1 / 3');
  await page.keyboard.press('ArrowLeft'); // already the first
  await expect(page.getByTestId('viewer-position')).toHaveText('1 / 3');

  await page.getByTestId('viewer-fullscreen').click();
  await expect.poll(() => page.evaluate(() => document.fullscreenElement?.getAttribute('data-testid') ?? null)).toBe('viewer');
  await expect(page.getByTestId('viewer-fullscreen')).toHaveAttribute('aria-pressed', 'true');
  await page.getByTestId('viewer-fullscreen').click();
  await expect.poll(() => page.evaluate(() => document.fullscreenElement)).toBeNull();

  await page.keyboard.press('Escape');
  await expect(viewer).toHaveCount(0);
});

test('compare: a second result beside the first, at the same zoom', async () => {
  const third = await galleryItems(page).nth(2).getAttribute('data-name');
  await galleryItems(page).first().getByTestId('gallery-open').click();
  await page.getByTestId('viewer-compare').click();
  await expect(page.getByTestId('compare-pick')).toHaveCount(2);
  await page.locator(`[data-testid="compare-pick"][data-name="${third}"]`).click();
  const a = page.getByTestId('viewer-pane');
  const b = page.getByTestId('viewer-pane-b');
  await expect(b).toBeVisible();
  await expect(b).toHaveAttribute('data-name', third!);
  expect(await a.getAttribute('data-name')).not.toBe(third);
  await expect(page.getByTestId('viewer-caption-b')).toContainText(PROMPTS[0]);
  // side by side on a desktop window
  const [boxA, boxB] = [await a.boundingBox(), await b.boundingBox()];
  expect(boxB!.x).toBeGreaterThanOrEqual(boxA!.x + boxA!.width - 1);
  await page.getByTestId('viewer-actual').click();
  for (const pane of [a, b]) {
    await expect.poll(() => pane.locator('img').evaluate((el) => el.getBoundingClientRect().width)).toBe(64);
  }
  await page.getByTestId('viewer-actual').click();
  await screenshot(page, 'viewer-compare.png');
  await page.getByTestId('viewer-compare-end').click();
  await expect(b).toHaveCount(0);
  await page.getByTestId('viewer-close').click();
  await expect(page.getByTestId('viewer')).toHaveCount(0);
});

test('download through the engine is named from the prompt and seed', async () => {
  await galleryItems(page).first().getByTestId('gallery-open').click();
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download').click()]);
  expect(download.suggestedFilename()).toBe('three_green_apples_1002.png');
  const saved = await download.path();
  expect(readFileSync(saved).subarray(1, 4).toString()).toBe('PNG');
  await page.getByTestId('viewer-close').click();
});

test('delete through the engine: asks first, then the file and its sidecar leave the disk and the gallery', async ({ request }) => {
  // while the engine runs, the UI server leaves its folder to it
  const name = (await galleryItems(page).nth(1).getAttribute('data-name'))!;
  const refused = await request.delete(`/api/outputs/${name}?job=${jobId}`, { headers: authHeaders() });
  expect(refused.status()).toBe(409);
  expect(existsSync(path.join(outputs, name))).toBe(true);

  await galleryItems(page).nth(1).getByTestId('gallery-open').click();
  await expect(page.getByTestId('viewer-pane')).toHaveAttribute('data-name', name);
  await page.getByTestId('viewer-delete').click();
  await page.getByTestId('viewer-delete-cancel').click(); // changed my mind: nothing happens
  expect(existsSync(path.join(outputs, name))).toBe(true);
  await page.getByTestId('viewer-delete').click();
  await page.getByTestId('viewer-delete-confirm').click();
  await expect(page.getByTestId('viewer-position')).toHaveText('2 / 2'); // the next one is shown
  expect(existsSync(path.join(outputs, name))).toBe(false);
  expect(existsSync(sidecarOf(name))).toBe(false);
  await page.keyboard.press('Escape');
  await expect(galleryItems(page)).toHaveCount(2);
  await expect(page.locator(`[data-testid="gallery-item"][data-name="${name}"]`)).toHaveCount(0);
});

test("a result dragged onto an edit family's control-image slot is its ctrl_img as it lies, with no upload", async ({ request }) => {
  const item = galleryItems(page).first();
  const name = (await item.getAttribute('data-name'))!;
  const assets = path.join(TRAINING_FOLDER, ENGINE_JOB_NAME, 'assets');
  const uploads = () => (existsSync(assets) ? readdirSync(assets).filter((n) => !n.startsWith('.')).length : 0);
  const uploadsBefore = uploads();
  await page.getByTestId('arch-select').selectOption('flux_kontext');
  await expect(page.getByTestId('model-path')).toHaveValue('tiny:flux_kontext');
  await setNumber(page, 'width', 64);
  await setNumber(page, 'height', 64);
  await setNumber(page, 'num_inference_steps', 2);
  await page.getByTestId('prompt').fill('make it blue');
  await expect(page.getByTestId('generate')).toBeDisabled(); // its control image is required
  await item.dragTo(page.getByTestId('ctrl-img-zone'));
  await expect(page.getByTestId('ctrl-img-zone')).toHaveAttribute('data-ref', path.join(outputs, name));
  await expect(page.getByTestId('ctrl-img-zone')).toContainText(`gallery result ${name}`);
  await expect.poll(() => page.getByTestId('ctrl-img-thumb').evaluate((el: HTMLImageElement) => el.naturalWidth)).toBe(64);
  await expect(page.getByTestId('generate')).toBeEnabled();
  const before = readdirSync(outputs).filter((n) => n.endsWith('.json')).length;
  await page.getByTestId('generate').click();
  await expect(runStatus(page)).toHaveText('done', { timeout: 240_000 });
  const made = await page.getByTestId('preview-panel').getAttribute('data-request-id');
  await expect.poll(() => readdirSync(outputs).filter((n) => n.endsWith('.json')).length, { timeout: 30_000 }).toBe(before + 1);
  const sidecar = JSON.parse(readFileSync(path.join(outputs, `${made}.json`), 'utf8'));
  expect(sidecar.request.sample.ctrl_img).toBe(path.join(outputs, name)); // the file itself, by its path
  expect(uploads()).toBe(uploadsBefore); // and nothing went through POST /assets
  // the edit's result goes again, so the counts below are the three pictures' as before
  const madeName = readdirSync(outputs).find((n) => n.startsWith(made!) && !n.endsWith('.json'))!;
  expect((await request.delete(`/api/inference/outputs/${madeName}?job=${jobId}`, { headers: authHeaders() })).status()).toBe(204);
  await page.getByTestId('ctrl-img-remove').click();
  await page.getByTestId('arch-select').selectOption('sd1');
  await page.reload();
  await expect(galleryItems(page)).toHaveCount(2);
});

test('with the engine stopped the gallery still lists the results, from disk', async () => {
  const names = await galleryItems(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-name')));
  await stopEngine(page);
  await page.reload();
  await expect(page.getByTestId('engine-health')).toHaveText('offline');
  await expect(page.getByTestId('gallery-total')).toHaveText('2');
  await expect(galleryItems(page)).toHaveCount(2);
  expect(await galleryItems(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-name')))).toEqual(names);
  await expect(page.getByTestId('gallery')).toContainText('engine off');
  // and the pictures load (served by /api/files, not the engine)
  await expect.poll(() => galleryItems(page).first().locator('img').evaluate((el: HTMLImageElement) => el.naturalWidth)).toBe(64);
});

test('offline: paged with "Load more" (not capped), filtered by model', async () => {
  // 30 more results of two other models, older than the real ones: what a long session leaves on disk
  const real = readdirSync(outputs).find((n) => n.endsWith('.png'))!;
  const old = Date.now() / 1000 - 3600;
  for (let i = 0; i < 30; i++) {
    const name = `bulk${String(i).padStart(2, '0')}.png`;
    copyFileSync(path.join(outputs, real), path.join(outputs, name));
    const arch = i < 10 ? 'flux' : 'sdxl';
    writeFileSync(sidecarOf(name), JSON.stringify({
      seed: i,
      config: { model: { arch, name_or_path: `tiny:${arch}` }, sample: { prompt: `bulk ${i}`, seed: i, num_inference_steps: 8, guidance_scale: 3.5, width: 64, height: 64 } },
    }));
    utimesSync(path.join(outputs, name), old + i, old + i);
  }
  await page.reload();
  await expect(page.getByTestId('gallery-total')).toHaveText('32');
  await expect(galleryItems(page)).toHaveCount(24);
  await page.getByTestId('gallery-more').click();
  await expect(galleryItems(page)).toHaveCount(32);
  await expect(page.getByTestId('gallery-more')).toHaveCount(0);
  expect(await galleryItems(page).last().getAttribute('data-name')).toBe('bulk00.png'); // the oldest comes last

  await page.getByTestId('gallery-filter').selectOption('flux');
  await expect(page.getByTestId('gallery-total')).toHaveText('10');
  await expect(galleryItems(page)).toHaveCount(10);
  for (const caption of await galleryItems(page).getByTestId('gallery-caption').allTextContents()) expect(caption).toContain('flux · tiny:flux');
  await page.getByTestId('gallery-filter').selectOption({ label: 'tiny:sd1 (2)' });
  await expect(galleryItems(page)).toHaveCount(2);
  await page.getByTestId('gallery-filter').selectOption('');
  await expect(page.getByTestId('gallery-total')).toHaveText('32');
});

test('offline: download named from the prompt and seed, delete from disk with its thumbnail and sidecar', async ({ request }) => {
  const name = 'bulk05.png';
  mkdirSync(path.join(outputs, '.thumbs'), { recursive: true });
  writeFileSync(path.join(outputs, '.thumbs', `${name}.jpg`), 'thumb');
  await page.reload();
  // bulk05 is the sixth-oldest, off the first page: the flux filter (bulk00..09) brings it up
  await page.getByTestId('gallery-filter').selectOption('flux');
  const item = page.locator(`[data-testid="gallery-item"][data-name="${name}"]`);
  await item.getByTestId('gallery-open').click();
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download').click()]);
  expect(download.suggestedFilename()).toBe('bulk_5_5.png');

  // the UI server refuses what is not a result of this job's folder
  for (const bad of ['..%2Fengine.json', '..%2F..%2Faitk_db.db', '.thumbs', 'bulk05.json', `${encodeURIComponent(path.join(outputs, name))}`]) {
    const res = await request.delete(`/api/outputs/${bad}?job=${jobId}`, { headers: authHeaders() });
    expect(res.status(), bad).toBe(404);
  }
  expect((await request.delete(`/api/outputs/${name}?job=no-such-job`, { headers: authHeaders() })).status()).toBe(404);
  expect((await request.delete(`/api/outputs/${name}?job=${jobId}`)).status()).toBe(401); // the token is needed
  expect(existsSync(path.join(outputs, name))).toBe(true);

  await page.getByTestId('viewer-delete').click();
  await page.getByTestId('viewer-delete-confirm').click();
  await expect(page.getByTestId('viewer-pane')).not.toHaveAttribute('data-name', name);
  await page.keyboard.press('Escape');
  await expect(item).toHaveCount(0);
  await expect(page.getByTestId('gallery-total')).toHaveText('9');
  expect(existsSync(path.join(outputs, name))).toBe(false);
  expect(existsSync(sidecarOf(name))).toBe(false);
  expect(existsSync(path.join(outputs, '.thumbs', `${name}.jpg`))).toBe(false);
  expect(existsSync(path.join(outputs, 'bulk04.png'))).toBe(true);
  expect(existsSync(path.join(TRAINING_FOLDER, ENGINE_JOB_NAME, 'engine.json'))).toBe(false);
  await page.getByTestId('gallery-filter').selectOption('');
  await expect(page.getByTestId('gallery-total')).toHaveText('31');
});

test('offline: a video and an audio result play in the viewer', async () => {
  // written by the toolkit's own media writer (H.264 mp4, PCM wav), as the engine saves them
  const script = [
    'import sys, numpy as np',
    'from toolkit.media import save_video, save_audio',
    'rng = np.random.default_rng(0)',
    'save_video(rng.integers(0, 255, (12, 64, 64, 3), dtype=np.uint8), sys.argv[1], fps=8)',
    'save_audio(np.sin(np.linspace(0, 880 * np.pi, 16000)).astype(np.float32) * 0.2, sys.argv[2], sample_rate=16000)',
  ].join('\n');
  const made = spawnSync(path.resolve('..', '.venv', 'bin', 'python'), ['-c', script, path.join(outputs, 'clip.mp4'), path.join(outputs, 'tone.wav')], {
    cwd: path.resolve('..'), encoding: 'utf8',
  });
  expect(made.status, made.stderr).toBe(0);
  await page.reload();
  await expect(page.getByTestId('gallery-total')).toHaveText('33');

  for (const [name, testId] of [['clip.mp4', 'viewer-video'], ['tone.wav', 'viewer-audio']]) {
    await page.locator(`[data-testid="gallery-item"][data-name="${name}"]`).getByTestId('gallery-open').click();
    const media = page.getByTestId(testId);
    await expect(media).toBeVisible();
    const played = await media.evaluate(async (m: HTMLMediaElement) => {
      m.muted = true;
      await m.play();
      await new Promise((r) => setTimeout(r, 400));
      return { time: m.currentTime, error: m.error?.code ?? null };
    });
    expect(played.error, name).toBeNull();
    expect(played.time, name).toBeGreaterThan(0.05);
    if (name === 'clip.mp4') await expect.poll(zoomPercent).toBeGreaterThan(100); // a video zooms like a picture
    await page.keyboard.press('Escape');
  }
});

test('offline: search by prompt words, sort by date or seed', async ({ request }) => {
  await page.reload();
  await expect(page.getByTestId('gallery-total')).toHaveText('33');
  await page.getByTestId('gallery-search').fill('GREEN apples');
  await expect(page.getByTestId('gallery-total')).toHaveText('1');
  await expect(galleryItems(page).first().getByTestId('gallery-caption')).toContainText('three green apples');
  await page.getByTestId('gallery-search').fill('no such words');
  await expect(page.getByTestId('gallery-empty')).toHaveText('Nothing matches.');
  await page.getByTestId('gallery-search').fill('');
  await expect(page.getByTestId('gallery-total')).toHaveText('33');

  const shown = () => galleryItems(page).evaluateAll((els) => els.slice(0, 3).map((e) => e.getAttribute('data-name')));
  await page.getByTestId('gallery-sort').selectOption('seed');
  await expect.poll(shown).toEqual(['bulk00.png', 'bulk01.png', 'bulk02.png']);
  await page.getByTestId('gallery-sort').selectOption('seed_desc');
  await expect(galleryItems(page).first().getByTestId('gallery-caption')).toContainText('seed 1002');
  await page.getByTestId('gallery-sort').selectOption('oldest');
  await expect.poll(shown).toEqual(['bulk00.png', 'bulk01.png', 'bulk02.png']);
  await page.getByTestId('gallery-sort').selectOption('newest');
  await expect.poll(async () => (await shown()).slice(0, 2).sort()).toEqual(['clip.mp4', 'tone.wav']); // the newest two
  // a bad query is a 400 naming the parameter
  for (const [query, field] of [['sort=random', 'sort'], ['favourites=maybe', 'favourites'], [`q=${'x'.repeat(501)}`, 'q']]) {
    const res = await request.get(`/api/outputs?job=${jobId}&${query}`, { headers: authHeaders() });
    expect(res.status(), query).toBe(400);
    expect((await res.json()).field).toBe(field);
  }
});

test('offline: a favourite stays one after a reload, and the favourites filter shows only those', async ({ request }) => {
  const item = page.locator('[data-testid="gallery-item"][data-name="clip.mp4"]');
  await expect(item).toHaveAttribute('data-favourite', 'false');
  await item.getByTestId('gallery-favourite').click();
  await expect(item).toHaveAttribute('data-favourite', 'true');
  await expect(page.getByTestId('gallery-favourites-only')).toContainText('(1)');
  await page.reload();
  await expect(page.locator('[data-testid="gallery-item"][data-name="clip.mp4"]')).toHaveAttribute('data-favourite', 'true');
  expect(JSON.parse(readFileSync(path.join(outputs, '.favourites.json'), 'utf8')).names).toEqual(['clip.mp4']);
  await page.getByTestId('gallery-favourites-only').click();
  await expect(page.getByTestId('gallery-total')).toHaveText('1');
  await expect(galleryItems(page)).toHaveCount(1);
  await page.getByTestId('gallery-favourites-only').click();
  await expect(page.getByTestId('gallery-total')).toHaveText('33');
  // the route names what is wrong with a body
  const bad = [
    [{ names: ['clip.mp4'] }, 'favourite', 400],
    [{ names: [], favourite: true }, 'names', 400],
    [{ names: ['clip.mp4', '../engine.json'], favourite: true }, 'names[1]', 400],
    [{ names: ['gone.png'], favourite: true }, 'names[0]', 404],
  ] as const;
  for (const [data, field, status] of bad) {
    const res = await request.post(`/api/outputs/favourites?job=${jobId}`, { headers: authHeaders(), data });
    expect(res.status(), field).toBe(status);
    expect((await res.json()).field).toBe(field);
  }
});

test('offline: a multi-selection downloads as one zip and is deleted together', async () => {
  await page.getByTestId('gallery-filter').selectOption('flux');
  await expect(galleryItems(page)).toHaveCount(9);
  const names = await galleryItems(page).evaluateAll((els) => els.slice(0, 3).map((e) => e.getAttribute('data-name')!));
  await galleryItems(page).nth(0).getByTestId('gallery-select').check();
  await galleryItems(page).nth(2).getByTestId('gallery-open').click({ modifiers: ['Shift'] }); // a range: 1 to 3
  await expect(page.getByTestId('gallery-selected-count')).toHaveText('3 selected');
  await expect(page.getByTestId('viewer')).toHaveCount(0); // selecting does not open the viewer
  await expect(page.locator('[data-testid="gallery-item"][data-selected="true"]')).toHaveCount(3);

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('gallery-bulk-download').click()]);
  expect(download.suggestedFilename()).toBe(`${ENGINE_JOB_NAME}-3-results.zip`);
  const listed = spawnSync('python3', ['-c', 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print("\\n".join(z.namelist()))', await download.path()], { encoding: 'utf8' });
  expect(listed.stderr).toBe('');
  const seeds = names.map((n) => Number(n.slice(4, 6)));
  expect(listed.stdout.trim().split('\n')).toEqual(seeds.map((seed) => `bulk_${seed}_${seed}.png`));

  await page.getByTestId('gallery-bulk-delete').click();
  await page.getByTestId('gallery-bulk-delete-confirm').click();
  await expect(page.getByTestId('gallery-notice')).toHaveText('Deleted 3.');
  await expect(galleryItems(page)).toHaveCount(6);
  for (const name of names) {
    expect(existsSync(path.join(outputs, name))).toBe(false);
    expect(existsSync(sidecarOf(name))).toBe(false);
  }
  await expect(page.getByTestId('gallery-selected-count')).toHaveText('0 selected');
  await page.getByTestId('gallery-filter').selectOption('');
  await expect(page.getByTestId('gallery-total')).toHaveText('30');
  await screenshotOf(page.getByTestId('gallery'), 'gallery-bulk.png');
});
