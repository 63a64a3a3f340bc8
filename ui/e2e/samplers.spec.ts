/**
 * Sampler and schedule type on the real stack: the family's list from the engine, a pick that reaches the
 * request and the file's A1111 text, and a dropped file that puts the pick back.
 */
import { expect, test } from '@playwright/test';
import { readPngText } from '../src/utils/pngInfo';
import { authHeaders, authedPage, ensureEngine, generateTiny } from './helpers';

test('a sampler and schedule type picked in the form run, go into the file as A1111 writes them, and come back on drop', async ({ browser }) => {
  const page = await authedPage(browser, { width: 1440, height: 900 });
  await ensureEngine(page);
  await page.getByTestId('arch-select').selectOption('sd1');
  await page.getByTestId('model-path').fill('tiny:sd1');
  const sampler = page.getByTestId('sampler');
  const schedule = page.getByTestId('scheduler');
  await expect(sampler.locator('option')).toHaveText([/^Model's own/, 'Euler', 'Euler a', 'DPM++ 2M', 'DPM++ 2M SDE', 'DPM++ SDE', 'UniPC', 'DDIM', 'Heun', 'LMS', 'LCM', 'PLMS']);
  await sampler.selectOption('Euler a');
  await expect(schedule.locator('option')).toHaveText(['Automatic', 'Simple']); // Euler a has no Karras sigmas
  await sampler.selectOption('DPM++ 2M');
  await schedule.selectOption('karras');
  await generateTiny(page, 'a sampler picked in the form', 17);

  const [made] = await (await page.request.get('/api/inference/outputs?limit=1', { headers: authHeaders() })).json();
  expect(made.meta.config.sample).toMatchObject({ sampler: 'DPM++ 2M', scheduler: 'karras' });
  const png = await (await page.request.get(`/api/inference/outputs/${made.name}`, { headers: authHeaders() })).body();
  expect((await readPngText(new Uint8Array(png))).parameters).toContain('Sampler: DPM++ 2M, Schedule type: Karras');

  await sampler.selectOption('');
  await expect(schedule).toHaveValue('karras'); // the schedule type stays where the model's own sampler takes it
  await schedule.selectOption('default');
  await page.evaluate((b64) => {
    const dt = new DataTransfer();
    dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], 'picked.png', { type: 'image/png' }));
    for (const type of ['dragenter', 'dragover', 'drop'])
      document.querySelector('[data-testid="gallery"]')!.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, png.toString('base64'));
  await expect(page.getByTestId('restore-status')).toContainText('Restored all settings');
  await expect(sampler).toHaveValue('DPM++ 2M');
  await expect(schedule).toHaveValue('karras');
  await page.close();
});
