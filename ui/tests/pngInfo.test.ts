import { readFileSync } from 'node:fs';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { fromEmbedded } from '../src/components/generate/restore';
import { readUserComment } from '../src/utils/exifComment';
import { readImageInfo } from '../src/utils/imageInfo';
import { readPngText } from '../src/utils/pngInfo';

// written by tests/fixtures/make_png_info.py through toolkit.media_info, the engine's own writer
const fixture = (name: string) => new Uint8Array(readFileSync(path.join(__dirname, 'fixtures', name)));
const expected = JSON.parse(readFileSync(path.join(__dirname, 'fixtures', 'png_info_expected.json'), 'utf8'));

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body) >>> 0);
  return Buffer.concat([len, body, crc]);
}

/** The engine PNG with one more chunk spliced in after IHDR. */
function withChunk(type: string, data: Buffer): Uint8Array {
  const png = Buffer.from(fixture('engine_written.png'));
  const afterIhdr = 8 + 8 + 13 + 4;
  return new Uint8Array(Buffer.concat([png.subarray(0, afterIhdr), chunk(type, data), png.subarray(afterIhdr)]));
}

describe('readPngText', () => {
  it('reads both iTXt chunks of an engine-written PNG, UTF-8 intact', async () => {
    const texts = await readPngText(fixture('engine_written.png'));
    expect(texts.parameters).toBe(expected.texts.parameters);
    expect(texts.aitk).toBe(expected.texts.aitk);
    expect(texts.parameters).toContain('café ☕');
  });

  it('inflates the compressed iTXt of a parameters-only PNG', async () => {
    expect(await readPngText(fixture('parameters_only.png'))).toEqual({ parameters: expected.texts.parameters });
  });

  it('inflates a zTXt chunk (Latin-1 by the PNG spec)', async () => {
    const ztxt = Buffer.concat([Buffer.from('parameters2\0\0', 'latin1'), deflateSync(Buffer.from('caf\xe9, Steps: 3', 'latin1'))]);
    expect((await readPngText(withChunk('zTXt', ztxt))).parameters2).toBe('café, Steps: 3');
  });

  it('inflates a compressed iTXt chunk and reads a tEXt one', async () => {
    const itxt = Buffer.concat([Buffer.from('comment\0\x01\x00en\0\0', 'latin1'), deflateSync(Buffer.from('zürich ✓', 'utf8'))]);
    const texts = await readPngText(withChunk('iTXt', itxt));
    expect(texts.comment).toBe('zürich ✓');
    const plain = await readPngText(withChunk('tEXt', Buffer.from('Software\0Pillow \xe9', 'latin1')));
    expect(plain.Software).toBe('Pillow é');
  });

  it('keeps the other chunks when one is corrupt, and returns nothing for a non-PNG or a cut file', async () => {
    const broken = Buffer.concat([Buffer.from('bad\0\x01\x00\0\0', 'latin1'), Buffer.from('not zlib at all')]);
    const texts = await readPngText(withChunk('iTXt', broken));
    expect(texts.bad).toBeUndefined();
    expect(texts.parameters).toBe(expected.texts.parameters);
    expect(await readPngText(fixture('engine_written.jpg'))).toEqual({});
    const png = fixture('engine_written.png');
    await expect(readPngText(png.subarray(0, 60))).resolves.toEqual({});
  });
});

describe('readUserComment', () => {
  it('reads the UTF-16 UserComment of an engine-written JPEG', () => {
    expect(readUserComment(fixture('engine_written.jpg'))).toBe(expected.texts.parameters);
    expect(readUserComment(fixture('engine_written.png'))).toBeNull();
  });
});

describe('readImageInfo + fromEmbedded: restoring what the engine wrote', () => {
  const cfg = expected.config;

  it('an engine PNG restores every setting from its aitk request', async () => {
    const restored = fromEmbedded(await readImageInfo(fixture('engine_written.png')))!;
    expect(restored.source).toBe('config');
    expect(restored.arch).toBe('sd1');
    expect(restored.name_or_path).toBe('builtin:shapes');
    expect(restored.sample).toMatchObject({
      prompt: cfg.sample.prompt, negative_prompt: cfg.sample.negative_prompt, seed: 1234567, num_inference_steps: 20,
      guidance_scale: 5.5, width: 64, height: 48, output_ext: 'png',
    });
  });

  it('a file with only the parameters text (JPEG, or a PNG from another tool) restores the same core settings', async () => {
    for (const name of ['engine_written.jpg', 'parameters_only.png']) {
      const restored = fromEmbedded(await readImageInfo(fixture(name)))!;
      expect(restored.source).toBe('parameters');
      expect(restored).toMatchObject({ arch: 'sd1', name_or_path: 'builtin:shapes' });
      expect(restored.sample).toMatchObject({
        negative_prompt: 'blurry, lowres', seed: 1234567, num_inference_steps: 20, guidance_scale: 5.5, width: 64, height: 48,
      });
    }
    const jpg = fromEmbedded(await readImageInfo(fixture('engine_written.jpg')))!;
    expect(jpg.sample.prompt).toBe(cfg.sample.prompt);
  });

  it('a damaged aitk chunk falls back to the parameters text; no settings at all is null', async () => {
    const restored = fromEmbedded({ aitk: '{"model": ', parameters: expected.texts.parameters })!;
    expect(restored.source).toBe('parameters');
    expect(restored.sample.seed).toBe(1234567);
    expect(fromEmbedded({})).toBeNull();
  });
});
