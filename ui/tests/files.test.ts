import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isAuthorized } from '@/server/auth';
import { resolveInside, serveFile } from '@/server/files';

describe('resolveInside', () => {
  const root = '/data/output';
  it('keeps paths inside the root', () => {
    expect(resolveInside(['/data/output/job/outputs/a.png'], [root])).toBe('/data/output/job/outputs/a.png');
    expect(resolveInside(['/data/output/job', 'a.png'], [root])).toBe('/data/output/job/a.png');
    expect(resolveInside(['job/a.png'], [root])).toBe('/data/output/job/a.png');
  });
  it('refuses everything else', () => {
    expect(resolveInside(['/etc/passwd'], [root])).toBeNull();
    expect(resolveInside(['/data/output/../secret'], [root])).toBeNull();
    expect(resolveInside(['../../etc/passwd'], [root])).toBeNull();
    expect(resolveInside(['/data/output-other/x'], [root])).toBeNull();
  });
});

describe('serveFile ranges', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aitk-files-'));
  const file = path.join(dir, 'clip.mp4');
  writeFileSync(file, Buffer.from('0123456789'));
  const get = (range?: string) => serveFile(file, new Request('http://x/', { headers: range ? { range } : {} }));

  it('serves the whole file, then byte ranges', async () => {
    const whole = get();
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('video/mp4');
    expect(await whole.text()).toBe('0123456789');
    const part = get('bytes=2-4');
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 2-4/10');
    expect(await part.text()).toBe('234');
    expect(await get('bytes=7-').text()).toBe('789');
    expect(await get('bytes=-3').text()).toBe('789');
    const bad = get('bytes=20-30');
    expect(bad.status).toBe(416);
    expect(bad.headers.get('content-range')).toBe('bytes */10');
  });

  it('sends non-media files as attachments', () => {
    const html = path.join(dir, 'page.html');
    writeFileSync(html, '<script>alert(1)</script>');
    const res = serveFile(html, new Request('http://x/'));
    expect(res.headers.get('content-disposition')).toMatch(/^attachment/);
    expect(get().headers.get('content-disposition')).toBeNull();
  });
});

describe('isAuthorized', () => {
  afterEach(() => delete process.env.AI_TOOLKIT_AUTH);
  it('is open without AI_TOOLKIT_AUTH and checks the bearer token with it', () => {
    expect(isAuthorized(null)).toBe(true);
    process.env.AI_TOOLKIT_AUTH = 'sekret';
    expect(isAuthorized(null)).toBe(false);
    expect(isAuthorized('Bearer wrong')).toBe(false);
    expect(isAuthorized('Bearer sekret')).toBe(true);
    expect(isAuthorized('bearer sekret')).toBe(true);
    expect(isAuthorized('sekret')).toBe(false);
  });
});
