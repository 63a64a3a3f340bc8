/**
 * Starting from an image on the real stack (CPU engine, tiny:sd1 at 64 px): a gallery result used as the start
 * image by its path, a mask painted on it with the mouse and uploaded as a PNG at Generate, the result's sidecar
 * and A1111 text recording the mask and strength, the kept pixels the input's own; Reuse putting the start image
 * and strength back; outpaint margins growing the result; "Upscale ×2" on a 64 px result making a 128 px one; a
 * pasted and a dropped file uploaded as the start image, and Undo taking a stroke back.
 */
import { type Page, expect, test } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { readPngText } from '../src/utils/pngInfo';
import { authHeaders, authedPage, ensureEngine, galleryItems, galleryTotal, generateTiny, runStatus, screenshotOf, setNumber } from './helpers';
import type { OutputEntry } from '../src/utils/types';

test.describe.configure({ mode: 'serial' });

const PYTHON = path.resolve('..', '.venv', 'bin', 'python');
let page: Page;
let source: OutputEntry;

test.beforeAll(async ({ browser }) => {
  page = await authedPage(browser, { width: 1440, height: 1000 });
  await ensureEngine(page);
});

test.afterAll(async () => {
  await page?.close();
});

const sourceItem = () => page.locator(`[data-testid="gallery-item"][data-name="${source.name}"]`);

async function newest(): Promise<OutputEntry> {
  const [made] = await (await page.request.get('/api/inference/outputs?limit=1', { headers: authHeaders() })).json();
  return made;
}

async function bytesOf(url: string): Promise<Buffer> {
  const res = await page.request.get(url, { headers: authHeaders() });
  expect(res.status()).toBe(200);
  return res.body();
}

/** Pixels read by PIL (what the engine reads with): `script` gets the images as a, b, … and prints JSON. */
function pil(images: Buffer[], script: string): unknown {
  const code = [
    'import io, json, sys, base64',
    'from PIL import Image',
    'imgs = [Image.open(io.BytesIO(base64.b64decode(s))) for s in json.load(sys.stdin)]',
    script,
  ].join('\n');
  const out = execFileSync(PYTHON, ['-c', code], { input: JSON.stringify(images.map((b) => b.toString('base64'))) });
  return JSON.parse(out.toString());
}

/** Run the form's request and wait for its result in the gallery. */
async function generateAndWait() {
  const before = await galleryTotal(page);
  await page.getByTestId('generate').click();
  await expect(page.getByTestId('gallery-total')).toHaveText(String(before + 1), { timeout: 240_000 });
  await expect(runStatus(page)).toHaveText('done');
}

test('a gallery result as the start image, a mask painted with the mouse: the result records mask and strength', async () => {
  await generateTiny(page, 'a start image for inpainting', 11);
  source = await newest();
  expect(source.meta?.result).toMatchObject({ width: 64, height: 64 });

  const panel = page.getByTestId('start-image');
  await expect(panel).toBeVisible(); // sd1 lists img2img and inpaint
  await sourceItem().getByTestId('gallery-use-input').click();
  await expect(panel).toHaveAttribute('data-ref', source.path); // its path: nothing uploaded
  await expect(page.getByTestId('width')).toHaveValue('64');

  const canvas = page.getByTestId('mask-canvas');
  await expect.poll(() => canvas.evaluate((c: HTMLCanvasElement) => `${c.width}x${c.height}`)).toBe('64x64');
  await expect(page.getByTestId('mask-editor')).toHaveAttribute('data-painted', 'false');
  await page.getByTestId('mask-size').fill('8');
  await canvas.scrollIntoViewIfNeeded();
  const box = (await canvas.boundingBox())!;
  // a horizontal stroke through the middle, from a quarter to three quarters of the width
  await page.mouse.move(box.x + box.width * 0.25, box.y + box.height * 0.5);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.75, box.y + box.height * 0.5, { steps: 8 });
  await page.mouse.up();
  await expect(page.getByTestId('mask-editor')).toHaveAttribute('data-painted', 'true');
  await expect(page.getByTestId('strength-value')).toHaveText('1.00'); // masked: the engine's inpainting default
  await page.getByTestId('strength').fill('0.6');
  await expect(page.getByTestId('strength-value')).toHaveText('0.60');
  await screenshotOf(page.getByTestId('start-image'), 'start-image-mask.png');

  const uploads: string[] = [];
  page.on('request', (r) => r.url().includes('/api/inference/assets') && r.method() === 'POST' && uploads.push(r.url()));
  await generateAndWait();
  expect(uploads).toHaveLength(1); // the mask; the start image went by its path

  const made = await newest();
  const s = made.meta!.config!.sample!;
  expect(s).toMatchObject({ init_image: source.path, strength: 0.6, mask_blur: 4 });
  expect(typeof s.mask).toBe('string');
  const text = (await readPngText(new Uint8Array(await bytesOf(made.url)))).parameters;
  expect(text).toContain('Denoising strength: 0.6');
  expect(text).toContain('Mask blur: 4');
  expect(text).toContain(`Mask image: ${path.basename(String(s.mask))} `); // the upload, named by its asset id
  expect(text).toMatch(new RegExp(`Init image: "?${source.name.replace('.', '\\.')} [0-9a-f]{10}`));

  // the mask the engine got: 64x64 greyscale, white along the stroke, black in the corners
  const mask = await bytesOf(`/api/files/${encodeURIComponent(String(s.mask))}`);
  expect(pil([mask], 'm = imgs[0]; print(json.dumps([m.size, m.mode, m.getpixel((32, 32)), m.getpixel((20, 32)), m.getpixel((2, 2)), m.getpixel((60, 60))]))'))
    .toEqual([[64, 64], 'L', 255, 255, 0, 0]);
  // inpainting keeps the input's own pixels outside the (blurred) mask, and repaints under the stroke
  const [src, out] = [await bytesOf(source.url), await bytesOf(made.url)];
  expect(pil([src, out], [
    'a, b = (i.convert("RGB") for i in imgs)',
    'box = (0, 0, 64, 16)',
    'print(json.dumps([a.crop(box).tobytes() == b.crop(box).tobytes(), a.getpixel((32, 32)) != b.getpixel((32, 32))]))',
  ].join('\n'))).toEqual([true, true]);

  // Reuse on the new result puts the start image (still on disk) and the strength back
  await page.getByTestId('start-image-clear').click();
  await expect(page.getByTestId('start-image')).toHaveAttribute('data-ref', '');
  await page.getByTestId('strength-value').waitFor({ state: 'detached' });
  await galleryItems(page).first().getByTestId('gallery-open').click();
  await page.getByTestId('viewer-reuse').click();
  await expect(page.getByTestId('start-image')).toHaveAttribute('data-ref', source.path);
  await expect(page.getByTestId('strength-value')).toHaveText('0.60');
});

test("Only masked: the mask's box is repainted at the form's size, the result keeps the start image's, Reuse brings it back", async () => {
  await expect(page.getByTestId('start-image')).toHaveAttribute('data-ref', source.path); // back from Reuse
  const canvas = page.getByTestId('mask-canvas');
  await canvas.scrollIntoViewIfNeeded();
  const box = (await canvas.boundingBox())!;
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  await expect(page.getByTestId('mask-editor')).toHaveAttribute('data-painted', 'true');
  await page.getByTestId('inpaint_area').selectOption('only_masked');
  await setNumber(page, 'inpaint_padding', 8);
  await generateAndWait();
  const made = await newest();
  expect(made.meta?.result).toMatchObject({ width: 64, height: 64 });
  expect(made.meta!.config!.sample).toMatchObject({ init_image: source.path, inpaint_area: 'only_masked', inpaint_padding: 8 });
  expect((await readPngText(new Uint8Array(await bytesOf(made.url)))).parameters).toContain('Inpaint area: Only masked, Masked area padding: 8');

  await page.getByTestId('inpaint_area').selectOption('whole');
  await expect(page.getByTestId('inpaint_padding')).toHaveCount(0);
  await galleryItems(page).first().getByTestId('gallery-open').click();
  await page.getByTestId('viewer-reuse').click();
  await expect(page.getByTestId('inpaint_area')).toHaveValue('only_masked');
  await expect(page.getByTestId('inpaint_padding')).toHaveValue('8');
  await page.getByTestId('inpaint_area').selectOption('whole'); // as the tests after expect
  await page.getByTestId('mask-clear').click();
  await expect(page.getByTestId('mask-editor')).toHaveAttribute('data-painted', 'false');
});

test('outpaint margins, one dragged on the frame, grow the result by their pixels', async () => {
  await expect(page.getByTestId('start-image')).toHaveAttribute('data-ref', source.path);
  await page.getByTestId('mask-invert').click(); // whole picture painted …
  await page.getByTestId('mask-invert').click(); // … and unpainted again: nothing painted, no mask sent
  await expect(page.getByTestId('mask-editor')).toHaveAttribute('data-painted', 'false');
  // the right handle dragged 40 screen px out: 40 / (176 / 64) = 14.5 image px, snapped to sd1's 8 -> 16
  const handle = page.getByTestId('outpaint-handle-right');
  await handle.scrollIntoViewIfNeeded();
  const h = (await handle.boundingBox())!;
  await page.mouse.move(h.x + h.width / 2, h.y + h.height / 2);
  await page.mouse.down();
  await page.mouse.move(h.x + h.width / 2 + 40, h.y + h.height / 2, { steps: 5 });
  await page.mouse.up();
  await expect(page.getByTestId('outpaint-right')).toHaveValue('16');
  await setNumber(page, 'outpaint-top', 8);
  await expect.poll(() => page.getByTestId('outpaint-canvas').evaluate((el: HTMLElement) => [el.offsetWidth, el.offsetHeight])).toEqual([176, 158]);
  await expect(page.getByTestId('outpaint-size')).toHaveText('outpainted to 80×72');
  await screenshotOf(page.getByTestId('start-image'), 'start-image-outpaint.png');
  await generateAndWait();
  const made = await newest();
  expect(made.meta?.result).toMatchObject({ width: 80, height: 72 });
  expect(made.meta!.config!.sample).toMatchObject({ init_image: source.path, outpaint: { left: 0, right: 16, top: 8, bottom: 0 } });
  expect(made.meta!.config!.sample!.mask ?? null).toBeNull();
  await setNumber(page, 'outpaint-right', 0);
  await setNumber(page, 'outpaint-top', 0);
});

test('Upscale ×2 on a 64 px result queues it with its own settings and a 128 px result lands in the gallery', async () => {
  const item = sourceItem();
  const before = await galleryTotal(page);
  await item.getByTestId('gallery-upscale').click();
  await expect(page.getByTestId('gallery-total')).toHaveText(String(before + 1), { timeout: 240_000 });
  const made = await newest();
  expect(made.meta?.result).toMatchObject({ width: 128, height: 128 });
  expect(made.meta!.config!.sample).toMatchObject({ init_image: source.path, prompt: 'a start image for inpainting', seed: 11, strength: 0.35 });
  await expect(galleryItems(page).first().getByTestId('gallery-caption')).toContainText('128×128');
  expect(pil([await bytesOf(made.url)], 'print(json.dumps(imgs[0].size))')).toEqual([128, 128]);
});

test('a pasted image is uploaded as the start image at its own size; a stroke is taken back by Undo; a dropped one replaces it', async () => {
  await page.getByTestId('start-image-clear').click();
  await expect(page.getByTestId('start-image-zone')).toBeVisible();
  await setNumber(page, 'width', 96);
  const png = await bytesOf(source.url);
  const send = (kind: 'paste' | 'drop', selector: string) =>
    page.evaluate(({ b64, kind, selector }) => {
      const dt = new DataTransfer();
      dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], `${kind}.png`, { type: 'image/png' }));
      const target = document.querySelector(selector)!;
      if (kind === 'paste') return void target.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
      for (const type of ['dragenter', 'dragover', 'drop']) target.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, { b64: png.toString('base64'), kind, selector });

  await send('paste', 'body'); // anywhere outside a text field
  await expect(page.getByTestId('start-image')).toHaveAttribute('data-ref', /^[0-9a-f]{32}$/); // an asset id
  await expect(page.getByTestId('start-image-info')).toContainText('uploaded 64×64');
  await expect(page.getByTestId('width')).toHaveValue('64');
  const pasted = await page.getByTestId('start-image').getAttribute('data-ref');

  const canvas = page.getByTestId('mask-canvas');
  await expect.poll(() => canvas.evaluate((c: HTMLCanvasElement) => c.width)).toBe(64);
  await canvas.scrollIntoViewIfNeeded();
  const box = (await canvas.boundingBox())!;
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  await expect(page.getByTestId('mask-editor')).toHaveAttribute('data-painted', 'true');
  await page.getByTestId('mask-undo').click();
  await expect(page.getByTestId('mask-editor')).toHaveAttribute('data-painted', 'false');
  await expect(page.getByTestId('mask-undo')).toBeDisabled();

  await send('drop', '[data-testid="start-image"]');
  await expect(page.getByTestId('start-image')).toHaveAttribute('data-ref', /^[0-9a-f]{32}$/);
  await expect(page.getByTestId('start-image')).not.toHaveAttribute('data-ref', pasted!);
  await expect(page.getByTestId('restore-status')).toHaveCount(0); // the panel took the drop, not the page's restore
});
