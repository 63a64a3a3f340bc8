/**
 * The text chunks of a PNG (tEXt, zTXt, iTXt): where the engine, A1111, ComfyUI and InvokeAI put generation
 * settings. Pure, so the same code runs in the browser (a dropped file) and under Vitest.
 */

const SIGNATURE = [137, 80, 78, 71, 13, 10, 26, 10];
const latin1 = new TextDecoder('latin1');
const utf8 = new TextDecoder('utf-8');

export function isPng(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && SIGNATURE.every((b, i) => bytes[i] === b);
}

/** zlib data (PNG's compression method 0). Where the runtime has no DecompressionStream the chunk is skipped. */
async function inflate(data: Uint8Array): Promise<Uint8Array | null> {
  if (typeof DecompressionStream === 'undefined') return null;
  try {
    const stream = new Blob([data as BlobPart]).stream().pipeThrough(new DecompressionStream('deflate'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  } catch {
    return null; // a corrupt chunk costs that chunk, not the others
  }
}

function zeroAt(data: Uint8Array, from: number): number {
  const i = data.indexOf(0, from);
  return i < 0 ? data.length : i;
}

async function textOf(type: string, data: Uint8Array): Promise<[string, string] | null> {
  const keyEnd = zeroAt(data, 0);
  const key = latin1.decode(data.subarray(0, keyEnd));
  if (type === 'tEXt') return [key, latin1.decode(data.subarray(keyEnd + 1))];
  if (type === 'zTXt') {
    const text = await inflate(data.subarray(keyEnd + 2)); // skip the compression method byte
    return text ? [key, latin1.decode(text)] : null;
  }
  // iTXt: keyword 0, compression flag, method, language tag 0, translated keyword 0, UTF-8 text
  const compressed = data[keyEnd + 1] === 1;
  const langEnd = zeroAt(data, keyEnd + 3);
  const transEnd = zeroAt(data, langEnd + 1);
  const body = data.subarray(transEnd + 1);
  const text = compressed ? await inflate(body) : body;
  return text ? [key, utf8.decode(text)] : null;
}

/** Every text chunk before the image data, by keyword (the first one wins when a keyword repeats). */
export async function readPngText(bytes: Uint8Array): Promise<Record<string, string>> {
  if (!isPng(bytes)) return {};
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Record<string, string> = {};
  for (let pos = 8; pos + 8 <= bytes.length; ) {
    const length = view.getUint32(pos);
    const type = latin1.decode(bytes.subarray(pos + 4, pos + 8));
    const start = pos + 8;
    if (type === 'IEND' || start + length > bytes.length) break;
    if (type === 'tEXt' || type === 'zTXt' || type === 'iTXt') {
      const entry = await textOf(type, bytes.subarray(start, start + length));
      if (entry && !(entry[0] in out)) out[entry[0]] = entry[1];
    }
    pos = start + length + 4; // data + CRC
  }
  return out;
}
