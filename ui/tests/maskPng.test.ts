import { describe, expect, it } from 'vitest';
import { inflateSync } from 'node:zlib';
import { crc32, encodeGrayPng, hasPaint, invertAlpha, maskGray } from '../src/utils/maskPng';

/** The PNG's chunks, each CRC checked. */
function chunks(png: Uint8Array) {
  const buf = Buffer.from(png);
  expect([...buf.subarray(0, 8)]).toEqual([137, 80, 78, 71, 13, 10, 26, 10]);
  const out: { type: string; data: Buffer }[] = [];
  for (let at = 8; at < buf.length; ) {
    const len = buf.readUInt32BE(at);
    const type = buf.toString('ascii', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + len);
    expect(buf.readUInt32BE(at + 8 + len)).toBe(crc32(buf.subarray(at + 4, at + 8 + len)));
    out.push({ type, data });
    at += 12 + len;
  }
  return out;
}

describe('the mask', () => {
  it('is painted where any alpha is; invert swaps painted and unpainted', () => {
    const rgba = new Uint8ClampedArray(4 * 3);
    expect(hasPaint(rgba)).toBe(false);
    rgba[7] = 1;
    expect(hasPaint(rgba)).toBe(true);
    invertAlpha(rgba, [9, 8, 7]);
    expect([...rgba]).toEqual([9, 8, 7, 255, 9, 8, 7, 254, 9, 8, 7, 255]);
    expect([...maskGray(rgba)]).toEqual([255, 254, 255]);
  });

  it('is a greyscale PNG of the image size: white where painted, black kept, rows as given', async () => {
    const width = 5;
    const height = 3;
    const gray = Uint8Array.from({ length: width * height }, (_, i) => (i % width === 2 ? 255 : i === 0 ? 128 : 0));
    const parts = chunks(await encodeGrayPng(width, height, gray));
    expect(parts.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    const ihdr = parts[0].data;
    expect([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ...ihdr.subarray(8)]).toEqual([5, 3, 8, 0, 0, 0, 0]);
    const rows = inflateSync(parts[1].data);
    expect(rows.length).toBe(height * (width + 1));
    for (let y = 0; y < height; y++) {
      expect(rows[y * (width + 1)]).toBe(0); // filter: none
      expect([...rows.subarray(y * (width + 1) + 1, (y + 1) * (width + 1))]).toEqual([...gray.subarray(y * width, (y + 1) * width)]);
    }
  });

  it('refuses pixels that do not match the size', async () => {
    await expect(encodeGrayPng(4, 4, new Uint8Array(15))).rejects.toThrow(/16 bytes/);
    expect(crc32(new TextEncoder().encode('IEND'))).toBe(0xae426082);
  });
});
