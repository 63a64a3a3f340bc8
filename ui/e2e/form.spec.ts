/**
 * The generate form on the real stack (see playwright.config.ts): an engine started from the page on the CPU,
 * builtin:shapes and tiny checkpoints. Ctrl+Enter, prompt history, the form remembered across a reload and per
 * arch, size presets, field errors that block Generate with a reason, restoring settings from a dropped image,
 * and control images pasted and dropped into an edit family's slots reaching its request.
 */
import { type Page, expect, test } from '@playwright/test';
import path from 'node:path';
import { readPngText } from '../src/utils/pngInfo';
import { authHeaders, bigNoisePng, galleryItems, runStatus, screenshot, setNumber, stopAllEngines } from './helpers';

test.describe.configure({ mode: 'serial' });

let page: Page;

test.beforeAll(async ({ browser, request }) => {
  await stopAllEngines(request); // this spec starts its engine from the page
  // taller than the default so the screenshots show the whole form, down to the restore line
  page = await browser.newPage({ viewport: { width: 1400, height: 1400 } });
  await page.addInitScript((token) => localStorage.setItem('AI_TOOLKIT_AUTH', token), process.env.E2E_TOKEN!);
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
});

test.afterAll(async () => {
  await page?.close(); // the global teardown interrupts the engine
});

async function newestOutput() {
  const res = await page.request.get('/api/inference/outputs?limit=1', { headers: authHeaders() });
  return (await res.json())[0];
}

async function outputCount(): Promise<number> {
  const res = await page.request.get('/api/inference/outputs?limit=500', { headers: authHeaders() });
  return (await res.json()).length;
}

/** Fire a drop (or a paste) of one file at an element, with a DataTransfer made in the page as a real one is. */
async function dropFile(selector: string, file: { name: string; type: string; bytes: Buffer }, kind: 'drop' | 'paste' = 'drop') {
  await page.evaluate(
    ({ selector, name, type, b64, kind }) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], name, { type }));
      const target = document.querySelector(selector)!;
      if (kind === 'paste') {
        target.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
        return;
      }
      for (const type of ['dragenter', 'dragover', 'drop'])
        target.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    },
    { selector, name: file.name, type: file.type, b64: file.bytes.toString('base64'), kind },
  );
}

test('a CPU engine starts the form on builtin:shapes with its own settings', async () => {
  await page.goto('/generate');
  await page.getByTestId('engine-gpu').fill('0');
  await page.getByTestId('engine-start').click();
  await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 120_000 });
  await expect(page.getByTestId('engine-health')).toContainText('cpu');
  await expect(page.getByTestId('arch-select')).toHaveValue('sd1');
  await expect(page.getByTestId('model-path')).toHaveValue('builtin:shapes'); // not tiny:sd1's noise
  await expect(page.getByTestId('width')).toHaveValue('64');
  await expect(page.getByTestId('num_inference_steps')).toHaveValue('20');
  await expect(page.getByTestId('generate')).toBeEnabled();
});

test('size presets set width and height at the checkpoint’s pixel count, snapped to the family', async () => {
  const presets = page.getByTestId('size-preset');
  await expect(presets).toHaveCount(7);
  await presets.filter({ hasText: /^16:9$/ }).click();
  await expect(page.getByTestId('width')).toHaveValue('88'); // 64² px at 16:9, multiples of 8
  await expect(page.getByTestId('height')).toHaveValue('48');
  await presets.filter({ hasText: /^3:4$/ }).click();
  await expect(page.getByTestId('width')).toHaveValue('56');
  await expect(page.getByTestId('height')).toHaveValue('72');
  await expect(presets.filter({ hasText: /^3:4$/ })).toHaveAttribute('aria-pressed', 'true');
  // a checkpoint at the family's native size: SD1's 512²
  await page.getByTestId('model-path').fill('tiny:sd1');
  await presets.filter({ hasText: /^16:9$/ }).click();
  await expect(page.getByTestId('width')).toHaveValue('680');
  await expect(page.getByTestId('height')).toHaveValue('384');
  await page.getByTestId('model-path').fill('builtin:shapes');
  await presets.filter({ hasText: /^1:1$/ }).click();
  await expect(page.getByTestId('width')).toHaveValue('64');
  await expect(page.getByTestId('height')).toHaveValue('64');
  await screenshot(page, 'form-presets.png');
});

test('a cleared Steps field disables Generate and says why; Ctrl+Enter does not run it', async () => {
  const before = await outputCount();
  await page.getByTestId('num_inference_steps').fill('');
  await expect(page.getByTestId('num_inference_steps-error')).toHaveText('enter a number');
  await expect(page.getByTestId('generate')).toBeDisabled();
  await expect(page.getByTestId('generate-reason')).toHaveText('Steps: enter a number');
  await page.getByTestId('prompt').press('Control+Enter');
  await page.getByTestId('guidance_scale').fill('101');
  await expect(page.getByTestId('guidance_scale-error')).toHaveText('at most 100');
  await setNumber(page, 'guidance_scale', 5);
  await setNumber(page, 'num_inference_steps', 12);
  await expect(page.getByTestId('generate-reason')).toHaveCount(0);
  await expect(page.getByTestId('generate')).toBeEnabled();
  await expect(runStatus(page)).not.toHaveText(/sampling|done/);
  expect(await outputCount()).toBe(before);
});

test('Ctrl+Enter generates from the prompt field and from any field of the form', async () => {
  await page.getByTestId('prompt').fill('a red circle on a blue background');
  await setNumber(page, 'seed', 4242);
  await page.getByTestId('prompt').press('Control+Enter');
  await expect(runStatus(page)).toHaveText('done', { timeout: 180_000 });
  await expect(page.getByTestId('prompt')).toHaveValue('a red circle on a blue background'); // no newline typed
  let newest = await newestOutput();
  expect(newest.meta.config.sample).toMatchObject({ prompt: 'a red circle on a blue background', seed: 4242, num_inference_steps: 12 });
  expect(newest.meta.config.model.name_or_path).toBe('builtin:shapes');
  const first = newest.name;

  await page.getByTestId('prompt').fill('a green square on a black background');
  await page.getByTestId('guidance_scale').press('Control+Enter');
  await expect(runStatus(page)).toHaveText('done', { timeout: 180_000 });
  newest = await newestOutput();
  expect(newest.name).not.toBe(first);
  expect(newest.meta.config.sample.prompt).toBe('a green square on a black background');
});

test('prompt history: newest first, Alt+Up/Down walks it and back to the draft, a pick restores, clear empties it', async () => {
  const prompt = page.getByTestId('prompt');
  await prompt.fill('my draft');
  await prompt.press('Alt+ArrowUp');
  await expect(prompt).toHaveValue('a green square on a black background');
  await prompt.press('Alt+ArrowUp');
  await expect(prompt).toHaveValue('a red circle on a blue background');
  await prompt.press('Alt+ArrowDown');
  await prompt.press('Alt+ArrowDown');
  await expect(prompt).toHaveValue('my draft');

  await page.getByTestId('prompt-history-toggle').click();
  await expect(page.getByTestId('prompt-history-item')).toHaveText(['a green square on a black background', 'a red circle on a blue background']);
  await page.getByTestId('prompt-history-item').nth(1).click();
  await expect(prompt).toHaveValue('a red circle on a blue background');
  // kept across a reload (and still there for the tests below); cleared on request
  await page.reload();
  await expect(page.getByTestId('prompt-history-toggle')).toHaveText(/\(2\)/);
  await page.getByTestId('prompt-history-toggle').click();
  await page.getByTestId('prompt-history-clear').click();
  await expect(page.getByTestId('prompt-history-toggle')).toHaveText(/\(0\)/);
  expect(await page.evaluate(() => localStorage.getItem('aitk.generate.promptHistory'))).toBeNull();
});

test('a reload keeps the arch, model, prompt and settings; each arch comes back with its own', async () => {
  await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 60_000 });
  // the form is remembered once the engine's families have arrived (GET /models, after /health): an edit before
  // that and a reload at once would test nothing but that race
  await expect(page.getByTestId('arch-select').locator('option[value="wan21"]')).toHaveCount(1);
  await page.getByTestId('prompt').fill('a purple triangle');
  await setNumber(page, 'num_inference_steps', 7);
  await page.reload();
  await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 60_000 });
  await expect(page.getByTestId('prompt')).toHaveValue('a purple triangle');
  await expect(page.getByTestId('model-path')).toHaveValue('builtin:shapes');
  await expect(page.getByTestId('num_inference_steps')).toHaveValue('7');

  await page.getByTestId('arch-select').selectOption('wan21');
  await expect(page.getByTestId('model-path')).toHaveValue('tiny:wan21');
  await setNumber(page, 'num_inference_steps', 3);
  await page.getByTestId('arch-select').selectOption('sd1');
  await expect(page.getByTestId('model-path')).toHaveValue('builtin:shapes');
  await expect(page.getByTestId('num_inference_steps')).toHaveValue('7');
  await expect(page.getByTestId('width')).toHaveValue('64');
  await page.getByTestId('arch-select').selectOption('wan21');
  await expect(page.getByTestId('num_inference_steps')).toHaveValue('3');
  await page.reload();
  await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 60_000 });
  await expect(page.getByTestId('arch-select')).toHaveValue('wan21');
  await expect(page.getByTestId('prompt')).toHaveValue('a purple triangle');
  await page.getByTestId('arch-select').selectOption('sd1');
});

test('an image dropped on the page restores its prompt, seed and settings (aitk chunk, or parameters text only)', async () => {
  // the PNG the first Ctrl+Enter run produced, as a browser download would have it
  const outputs = await (await page.request.get('/api/inference/outputs?limit=500', { headers: authHeaders() })).json();
  const made = outputs.find((o: { meta: { config: { sample: { prompt: string } } } }) => o.meta?.config?.sample?.prompt === 'a red circle on a blue background');
  // downloaded as the gallery's Download does: through the proxy, named from its prompt and seed
  const download = await page.request.get(`/api/inference/outputs/${made.name}?download=1`, { headers: authHeaders() });
  expect(download.headers()['content-disposition']).toContain(`a_red_circle_on_a_blue_background_${made.meta.config.sample.seed}.png`);
  const png = await download.body();
  expect(png.subarray(1, 4).toString()).toBe('PNG');
  // the file itself carries its settings: A1111's `parameters` text and the full request (`aitk`)
  const chunks = await readPngText(new Uint8Array(png));
  expect(chunks.parameters).toContain(`Seed: ${made.meta.config.sample.seed}`);
  expect(JSON.parse(chunks.aitk).sample.prompt).toBe('a red circle on a blue background');

  await page.getByTestId('prompt').fill('something else entirely');
  await setNumber(page, 'seed', 1);
  await setNumber(page, 'num_inference_steps', 30);
  await page.getByTestId('model-path').fill('tiny:sd1');
  await dropFile('[data-testid="gallery"]', { name: 'red_circle.png', type: 'image/png', bytes: png });
  await expect(page.getByTestId('restore-status')).toHaveText('Restored all settings from red_circle.png');
  await expect(page.getByTestId('prompt')).toHaveValue('a red circle on a blue background');
  await expect(page.getByTestId('seed')).toHaveValue('4242');
  await expect(page.getByTestId('num_inference_steps')).toHaveValue('12');
  await expect(page.getByTestId('model-path')).toHaveValue('builtin:shapes');
  await expect(page.getByTestId('width')).toHaveValue('64');
  await screenshot(page, 'form-restored.png');

  // a JPEG carries only the parameters text (EXIF UserComment): picked through the file input this time
  await page.getByTestId('restore-file').setInputFiles(path.join(__dirname, '..', 'tests', 'fixtures', 'engine_written.jpg'));
  await expect(page.getByTestId('restore-status')).toHaveText('Restored settings from its parameters text from engine_written.jpg');
  await expect(page.getByTestId('prompt')).toHaveValue('a red circle on a blue background, café ☕');
  await expect(page.getByTestId('negative_prompt')).toHaveValue('blurry, lowres');
  await expect(page.getByTestId('seed')).toHaveValue('1234567');
  await expect(page.getByTestId('height')).toHaveValue('48');
  await expect(page.getByTestId('guidance_scale')).toHaveValue('5.5');

  await dropFile('body', { name: 'noise.png', type: 'image/png', bytes: bigNoisePng(16) });
  await expect(page.getByTestId('restore-status')).toHaveText('noise.png carries no generation settings');
});

test('control images pasted and dropped into an edit family’s slots reach its request; Reuse keeps them', async () => {
  await page.getByTestId('arch-select').selectOption('qwen_image_edit_plus');
  await expect(page.getByTestId('model-path')).toHaveValue('tiny:qwen_image_edit_plus');
  await setNumber(page, 'width', 64);
  await setNumber(page, 'height', 64);
  await setNumber(page, 'num_inference_steps', 2);
  await page.getByTestId('prompt').fill('put the cat on the sofa');
  await expect(page.getByTestId('ctrl-img-3-zone')).toHaveCount(1); // three reference slots
  await expect(page.getByTestId('generate')).toBeDisabled();
  await expect(page.getByTestId('generate-reason')).toHaveText('Needs a control image');

  await page.getByTestId('ctrl-img-zone').focus();
  await dropFile('[data-testid="ctrl-img-zone"]', { name: 'pasted.png', type: 'image/png', bytes: bigNoisePng(64) }, 'paste');
  await expect(page.getByTestId('ctrl-img-thumb')).toBeVisible();
  await dropFile('[data-testid="ctrl-img-3-zone"]', { name: 'third.png', type: 'image/png', bytes: bigNoisePng(48) });
  await expect(page.getByTestId('ctrl-img-3-zone')).toContainText('uploaded 48×48');
  await dropFile('[data-testid="ctrl-img-2-zone"]', { name: 'second.png', type: 'image/png', bytes: bigNoisePng(32) });
  await expect(page.getByTestId('ctrl-img-2-zone')).toContainText('uploaded 32×32');
  await screenshot(page, 'form-control-images.png');
  await page.getByTestId('ctrl-img-2-remove').click();
  await expect(page.getByTestId('ctrl-img-2-thumb')).toHaveCount(0);
  // the slots took those drops: the page-wide restore did not also try them
  await expect(page.getByTestId('restore-status')).toHaveText('noise.png carries no generation settings');

  await expect(page.getByTestId('generate')).toBeEnabled();
  const before = await outputCount();
  await page.getByTestId('generate').click();
  await expect(runStatus(page)).toHaveText('done', { timeout: 240_000 });
  await expect.poll(outputCount, { timeout: 30_000 }).toBeGreaterThan(before);
  const newest = await newestOutput();
  expect(newest.meta.config.model.arch).toBe('qwen_image_edit_plus');
  const sent = newest.meta.request.sample;
  expect(sent.ctrl_img).toMatch(/^[0-9a-f]{32}$/);
  expect(sent.ctrl_img_2).toMatch(/^[0-9a-f]{32}$/); // the third slot's image, moved up: the second was removed
  expect(sent.ctrl_img_2).not.toBe(sent.ctrl_img);
  expect(sent.ctrl_img_3).toBeUndefined();

  // Reuse puts the references back (as the engine's paths), so the edit can be run again as it was
  await page.getByTestId('ctrl-img-remove').click();
  await page.getByTestId('ctrl-img-3-remove').click();
  await expect(page.getByTestId('generate-reason')).toHaveText('Needs a control image');
  await galleryItems(page).first().getByTestId('gallery-open').click();
  await page.getByTestId('viewer-reuse').click(); // the gallery's viewer holds Reuse
  await expect(page.getByTestId('ctrl-img-thumb')).toBeVisible();
  await expect(page.getByTestId('ctrl-img-2-thumb')).toBeVisible();
  await expect(page.getByTestId('generate')).toBeEnabled();
  const thumb = await page.getByTestId('ctrl-img-thumb').getAttribute('src');
  expect((await page.request.get(thumb!)).status()).toBe(200);
  await page.getByTestId('generate').click();
  await expect(runStatus(page)).toHaveText('done', { timeout: 240_000 });
  const again = (await newestOutput()).meta.request.sample;
  expect(again.ctrl_img).toBe(newest.meta.config.sample.ctrl_img_1);
  expect(again.ctrl_img_2).toBe(newest.meta.config.sample.ctrl_img_2);
});

test('the model panel’s advanced options and the audio family’s lyrics reach the request', async () => {
  await page.getByTestId('arch-select').selectOption('ace_step_15');
  await expect(page.getByTestId('size-presets')).toHaveCount(0);
  await page.getByTestId('model-advanced').locator('summary').click();
  await page.getByTestId('model-low-vram').check();
  await page.getByTestId('lyrics').fill('[verse]\nla la la');
  await setNumber(page, 'duration_s', 1);
  await setNumber(page, 'num_inference_steps', 2);
  await page.getByTestId('prompt').fill('a short jingle');
  await page.getByTestId('prompt').press('Control+Enter');
  await expect(runStatus(page)).toHaveText('done', { timeout: 240_000 });
  const newest = await newestOutput();
  expect(newest.meta.request.sample.lyrics).toBe('[verse]\nla la la');
  expect(newest.meta.request.model.low_vram).toBe(true);
  await page.getByTestId('model-low-vram').uncheck();
  // batch count: kept in the form, checked against the engine's 1-16
  await page.getByTestId('batch_count').fill('17');
  await expect(page.getByTestId('generate-reason')).toHaveText('Batch count: at most 16');
  await setNumber(page, 'batch_count', 1);
  await expect(page.getByTestId('generate')).toBeEnabled();
});

test('the Speed select offers the family’s tiers and the chosen one reaches the request', async () => {
  await page.getByTestId('arch-select').selectOption('wan21');
  const speed = page.getByTestId('speed');
  await expect(speed.locator('option')).toHaveText(['Lossless', 'cache (reuses steps)']); // a CPU engine: no fp8
  await speed.selectOption('cache');
  await setNumber(page, 'num_inference_steps', 2);
  await page.getByTestId('prompt').fill('a fox, cached steps');
  await page.getByTestId('prompt').press('Control+Enter');
  await expect(runStatus(page)).toHaveText('done', { timeout: 240_000 });
  expect((await newestOutput()).meta.request.sample.speed).toBe('cache');
  await page.getByTestId('arch-select').selectOption('sd1');
  await expect(page.getByTestId('speed')).toHaveCount(0); // lossless only: no select
  await page.getByTestId('arch-select').selectOption('wan21');
  await expect(page.getByTestId('speed')).toHaveValue('cache'); // each family comes back with its own settings
});
