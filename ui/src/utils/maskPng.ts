/**
 * The inpainting mask as the engine reads it (docs/PROTOCOL.md `sample.mask`): a PNG the start image's size,
 * white where it repaints, black where it keeps. The editor paints strokes into a canvas's alpha channel (their
 * colour is only for show); these helpers turn that alpha into the grey PNG, invert it and say whether anything
 * is painted. The PNG is written here rather than by canvas.toBlob so that what is sent is exactly the alpha
 * (a canvas may premultiply or colour-manage what it encodes) and so that it can be checked outside a browser.
 */

/** Any painted pixel in RGBA data (alpha above zero). */
export function hasPaint(rgba: Uint8ClampedArray | Uint8Array): boolean {
  for (let i = 3; i < rgba.length; i += 4) if (rgba[i] > 0) return true;
  return false;
}

/** Painted becomes unpainted and the reverse, in place: alpha' = 255 - alpha, in the stroke colour. */
export function invertAlpha(rgba: Uint8ClampedArray | Uint8Array, color: [number, number, number]): void {
  for (let i = 0; i < rgba.length; i += 4) {
    rgba[i] = color[0];
    rgba[i + 1] = color[1];
    rgba[i + 2] = color[2];
    rgba[i + 3] = 255 - rgba[i + 3];
  }
}

/** One grey byte per pixel: the alpha (a stroke's soft edge stays a soft edge; the engine blurs it further). */
export function maskGray(rgba: Uint8ClampedArray | Uint8Array): Uint8Array {
  const out = new Uint8Array(rgba.length / 4);
  for (let p = 0; p < out.length; p++) out[p] = rgba[p * 4 + 3];
  return out;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** zlib's deflate (PNG's IDAT format) through the platform's CompressionStream: browsers and Node both have it. */
async function deflate(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as BlobPart]).stream().pipeThrough(new CompressionStream('deflate'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** An 8-bit greyscale PNG of `gray` (width × height bytes, row by row). */
export async function encodeGrayPng(width: number, height: number, gray: Uint8Array): Promise<Uint8Array> {
  if (!(width > 0 && height > 0) || gray.length !== width * height) throw new Error(`a ${width}×${height} mask needs ${width * height} bytes, not ${gray.length}`);
  const ihdr = new Uint8Array(13);
  const view = new DataView(ihdr.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  ihdr.set([8, 0, 0, 0, 0], 8); // 8 bits, greyscale, deflate, no filter method beyond 0, no interlace
  const rows = new Uint8Array(height * (width + 1)); // each row: filter byte 0 (none), then the row
  for (let y = 0; y < height; y++) rows.set(gray.subarray(y * width, (y + 1) * width), y * (width + 1) + 1);
  const parts = [
    new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk('IHDR', ihdr),
    chunk('IDAT', await deflate(rows)),
    chunk('IEND', new Uint8Array(0)),
  ];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
