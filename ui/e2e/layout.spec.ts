/**
 * Phone and desktop layout on the real stack: at 390×844 and 1440×900 no page scrolls sideways (/generate,
 * /jobs, a job's page), the controls that matter are on screen and work: the menu button below `md`, the
 * engine's start/stop, Generate, the jobs table's name, status and actions, the gallery and its viewer. The
 * Generate page is built around the picture: at 390×844, 1440×900 and 2560×1440, with a result shown, the whole
 * stage and Generate are in the window at once, the stage takes half the window or more on a desktop, the
 * picture in it is as large as fits at the requested aspect ratio, the settings scroll on their own, the bar
 * stays with the results scrolled into view, and a message shows just above the bar.
 */
import { type Locator, type Page, expect, test } from '@playwright/test';
import path from 'node:path';
import {
  ENGINE_JOB_NAME, authHeaders, authedPage, ensureEngine, galleryItems, generateTiny, horizontalOverflow, screenshot, screenshotOf,
  stopEngine,
} from './helpers';

test.describe.configure({ mode: 'serial' });

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
const WIDE = { width: 2560, height: 1440 };
let jobId = '';

/** The element is visible and lies inside the window sideways (it may be below the fold). */
async function onScreen(page: Page, testId: string, nth = 0) {
  const el = page.getByTestId(testId).nth(nth);
  await el.scrollIntoViewIfNeeded();
  await expect(el).toBeVisible();
  const box = (await el.boundingBox())!;
  const width = page.viewportSize()!.width;
  expect(box.x, `${testId} left edge`).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width, `${testId} right edge`).toBeLessThanOrEqual(width);
}

type Box = { x: number; y: number; width: number; height: number };

/** The element's box lies wholly inside the window. */
async function inWindow(page: Page, locator: Locator, what: string): Promise<Box> {
  const box = (await locator.boundingBox())!;
  const { width, height } = page.viewportSize()!;
  expect(box.x, `${what}: left edge`).toBeGreaterThanOrEqual(0);
  expect(box.y, `${what}: top edge`).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width, `${what}: right edge`).toBeLessThanOrEqual(width);
  expect(box.y + box.height, `${what}: bottom edge`).toBeLessThanOrEqual(height);
  return box;
}

/** Nothing lies over the element: the point at its centre belongs to it. */
function onTop(locator: Locator): Promise<boolean> {
  return locator.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
    return Boolean(hit && el.contains(hit));
  });
}

/** What shows once a page has its data (the widest content arrives with it). */
const LOADED: [RegExp, string][] = [
  [/^\/generate/, '[data-testid="gallery"][data-loaded="true"]'],
  [/^\/jobs$/, '[data-testid="job-row"]'],
  [/^\/jobs\//, '[data-testid="job-status"]'],
];

async function noSidewaysScroll(page: Page, url: string) {
  await page.goto(url);
  await expect(page.locator(LOADED.find(([re]) => re.test(url))![1]).first()).toBeVisible();
  expect(await horizontalOverflow(page), `${url} at ${page.viewportSize()!.width} px`).toBeLessThanOrEqual(0);
}

test('phone: start an engine and generate from a 390 px window', async ({ browser, request }) => {
  const page = await authedPage(browser, PHONE);
  await ensureEngine(page);
  await onScreen(page, 'engine-stop');
  await onScreen(page, 'engine-health');
  await generateTiny(page, 'a small boat on a calm lake at sunrise, phone test', 7, 3);
  await onScreen(page, 'generate');
  const jobs = (await (await request.get('/api/jobs?job_type=inference', { headers: authHeaders() })).json()).jobs;
  jobId = jobs.find((j: { name: string }) => j.name === ENGINE_JOB_NAME).id;
  await page.close();
});

for (const viewport of [PHONE, DESKTOP, WIDE]) {
  const { width, height } = viewport;
  test(`${width}×${height}: the picture and Generate are on screen at once; settings scroll apart; messages show by the bar`, async ({ browser }) => {
    const page = await authedPage(browser, viewport);
    await page.goto(`/generate?job=${jobId}`);
    await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 60_000 });
    await generateTiny(page, `a lighthouse on a cliff at dusk, ${width} px window`, 11, 3);
    const stage = page.getByTestId('preview-panel');
    const result = page.getByTestId('stage-result').getByTestId('media-image');
    await expect(result).toBeVisible();
    await expect.poll(() => result.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(64);

    // Generate brought the stage into view (on a phone the settings had been scrolled to): all of it, with the
    // Generate button, which nothing covers, and the bar under the stage, not over it
    await expect.poll(async () => {
      const box = (await stage.boundingBox())!;
      return box.y >= 0 && box.y + box.height <= height;
    }, { message: 'the whole stage in the window' }).toBe(true);
    const stageBox = await inWindow(page, stage, 'the stage');
    await inWindow(page, page.getByTestId('generate'), 'Generate');
    expect(await onTop(page.getByTestId('generate')), 'Generate is not covered').toBe(true);
    const bar = (await page.getByTestId('prompt-bar').boundingBox())!;
    expect(stageBox.y + stageBox.height, 'the stage ends above the bar').toBeLessThanOrEqual(bar.y + 1);
    if (width >= 1024) expect(stageBox.width * stageBox.height, 'the stage\'s share of the window').toBeGreaterThanOrEqual(0.5 * width * height);

    // the picture: the 64×64 result at 1:1, as large as the stage allows (it meets the stage's sides or its
    // top and bottom; the stage has a 1 px border), and the image fills it
    const picture = (await page.getByTestId('picture').boundingBox())!;
    expect(Math.abs(picture.width / picture.height - 1), 'the picture keeps 1:1').toBeLessThan(0.01);
    const meetsSides = Math.abs(picture.width - (stageBox.width - 2)) <= 1;
    const meetsEnds = Math.abs(picture.height - (stageBox.height - 2)) <= 1;
    expect(meetsSides || meetsEnds, `picture ${JSON.stringify(picture)} in stage ${JSON.stringify(stageBox)}`).toBe(true);
    const image = (await result.boundingBox())!;
    expect(Math.abs(image.width - picture.width)).toBeLessThanOrEqual(1);
    expect(Math.abs(image.height - picture.height)).toBeLessThanOrEqual(1);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await screenshot(page, `generate-${width}x${height}.png`);

    if (width >= 1024) {
      // the settings scroll on their own: the window, the stage and Generate stay where they are
      // (at 1440×900 they are longer than the panel, so scrolling is tried; at 2560×1440 they may fit)
      const side = page.getByTestId('side-panel');
      await inWindow(page, side, 'the settings panel');
      const overflows = await side.evaluate((el) => el.scrollHeight > el.clientHeight);
      if (viewport === DESKTOP) expect(overflows, 'the settings are longer than the panel').toBe(true);
      await side.evaluate((el) => el.scrollTo(0, el.scrollHeight));
      if (overflows) await expect.poll(() => side.evaluate((el) => el.scrollTop)).toBeGreaterThan(0);
      expect(await page.evaluate(() => window.scrollY)).toBe(0);
      expect(await stage.boundingBox()).toEqual(stageBox);
      await inWindow(page, page.getByTestId('generate'), 'Generate, the settings scrolled');
    }

    // the results scrolled into view: the bar is still there
    await page.evaluate(() => window.scrollTo(0, document.scrollingElement!.scrollHeight));
    await expect.poll(() => page.evaluate(() => window.scrollY)).toBeGreaterThan(0);
    await inWindow(page, page.getByTestId('generate'), 'Generate, the results scrolled into view');
    expect(await onTop(page.getByTestId('generate')), 'Generate is not covered').toBe(true);

    // a message shows just above the bar, in the window
    await page.getByTestId('restore-file').setInputFiles(path.join(__dirname, '..', 'tests', 'fixtures', 'engine_written.png'));
    const status = page.getByTestId('restore-status');
    await expect(status).toHaveText(/^Restored .* from engine_written\.png$/);
    const message = await inWindow(page, status, 'the restore message');
    const barNow = (await page.getByTestId('prompt-bar').boundingBox())!;
    expect(message.y + message.height).toBeLessThanOrEqual(barNow.y);
    expect(barNow.y - (message.y + message.height), 'the message is right above the bar').toBeLessThan(40);
    await page.getByTestId('restore-status-dismiss').click();
    await expect(status).toHaveCount(0);
    await page.close();
  });
}

for (const viewport of [PHONE, DESKTOP]) {
  test(`${viewport.width}×${viewport.height}: no page scrolls sideways`, async ({ browser }) => {
    const page = await authedPage(browser, viewport);
    for (const url of ['/generate', '/jobs', `/jobs/${jobId}`, `/generate?job=${jobId}`]) await noSidewaysScroll(page, url);
    await page.goto(`/jobs/${jobId}`);
    await page.getByRole('button', { name: 'Config file' }).click();
    expect(await horizontalOverflow(page), 'the job config tab').toBeLessThanOrEqual(0);
    await page.close();
  });
}

test('phone: the sidebar folds into a menu button that opens and closes it', async ({ browser }) => {
  const page = await authedPage(browser, PHONE);
  await page.goto('/generate');
  const menu = page.getByTestId('menu-button');
  const nav = page.getByTestId('sidebar');
  await expect(menu).toBeVisible();
  await expect(menu).toHaveAttribute('aria-label', 'Open the menu');
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  await expect(nav).toBeHidden();
  // the page gets the whole width
  const strip = (await page.getByTestId('engine-strip').boundingBox())!;
  expect(strip.width).toBeGreaterThan(PHONE.width - 40);

  await menu.click();
  await expect(menu).toHaveAttribute('aria-expanded', 'true');
  await expect(nav).toBeVisible();
  await expect(nav.getByRole('link', { name: 'Jobs' })).toBeVisible();
  await expect(nav).toContainText(ENGINE_JOB_NAME); // the active jobs are there too
  expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
  await screenshot(page, 'phone-menu.png');
  await page.keyboard.press('Escape');
  await expect(nav).toBeHidden();
  // the drawer opens under the top bar: the same button closes it
  await menu.click();
  await expect(nav).toBeVisible();
  await expect(menu).toHaveAttribute('aria-label', 'Close the menu');
  await menu.click();
  await expect(nav).toBeHidden();

  await menu.click();
  await nav.getByRole('link', { name: 'Jobs' }).click();
  await expect(page).toHaveURL(/\/jobs$/);
  await expect(nav).toBeHidden(); // following a link closes the drawer
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  await page.close();
});

test('desktop: the sidebar stays and there is no menu button', async ({ browser }) => {
  const page = await authedPage(browser, DESKTOP);
  await page.goto('/generate');
  await expect(page.getByTestId('menu-button')).toBeHidden();
  await expect(page.getByTestId('sidebar')).toBeVisible();
  expect((await page.getByTestId('sidebar').boundingBox())!.width).toBe(208);
  await page.close();
});

test('phone: the jobs table keeps name, status and actions readable; the job page keeps its actions', async ({ browser }) => {
  const page = await authedPage(browser, PHONE);
  await page.goto('/jobs');
  const row = page.locator(`[data-testid="job-row"][data-job-id="${jobId}"]`);
  await expect(row).toBeVisible();
  const name = row.getByRole('link', { name: ENGINE_JOB_NAME });
  for (const el of [name, row.locator('td').nth(3), row.getByTestId('job-stop'), row.getByRole('button', { name: 'Delete' })]) {
    await expect(el).toBeVisible();
    const box = (await el.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
  }
  await expect(row.getByTestId('job-row-details')).toContainText('inference · GPU 0');
  // the name has a line of its own, not broken mid-word into a narrow column
  expect((await name.boundingBox())!.height).toBeLessThan(24);
  await screenshot(page, 'phone-jobs.png');

  await name.click();
  await expect(page.getByTestId('job-status')).toHaveText('running');
  await onScreen(page, 'job-stop');
  await onScreen(page, 'open-generate');
  await onScreen(page, 'job-log');
  await page.close();
});

test('phone: engine strip, form, gallery and viewer fit; text inputs show where the focus is', async ({ browser }) => {
  const page = await authedPage(browser, PHONE);
  await page.goto(`/generate?job=${jobId}`);
  await expect(page.getByTestId('engine-health')).toContainText('online', { timeout: 60_000 });
  for (const id of ['engine-stop', 'engine-gpu', 'arch-select', 'model-path', 'prompt', 'generate', 'gallery']) await onScreen(page, id);
  // the health line wraps onto more lines rather than being cut
  const health = page.getByTestId('engine-health');
  expect(await health.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
  await expect(galleryItems(page).first()).toBeVisible();
  await onScreen(page, 'gallery-item');

  const gpu = page.getByTestId('engine-gpu');
  await gpu.focus();
  const outline = await gpu.evaluate((el) => {
    const s = getComputedStyle(el);
    return { style: s.outlineStyle, width: parseFloat(s.outlineWidth) };
  });
  expect(outline.style).not.toBe('none');
  expect(outline.width).toBeGreaterThanOrEqual(2);
  await gpu.blur();

  await screenshot(page, 'phone-generate.png');
  await screenshotOf(page.getByTestId('gallery'), 'phone-gallery.png');
  await galleryItems(page).first().getByTestId('gallery-open').click();
  await expect(page.getByTestId('viewer')).toBeVisible();
  for (const id of ['viewer-close', 'viewer-zoom-in', 'viewer-delete', 'download', 'viewer-pane']) await onScreen(page, id);
  expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
  await screenshot(page, 'phone-viewer.png');
  await page.getByTestId('viewer-close').click();
  await expect(page.getByTestId('viewer')).toHaveCount(0);

  await stopEngine(page);
  await onScreen(page, 'engine-start');
  await page.close();
});
