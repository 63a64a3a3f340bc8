/** Generation settings embedded in an image file: PNG text chunks, or EXIF UserComment for JPEG and WebP. */
import { readUserComment } from './exifComment';
import { isPng, readPngText } from './pngInfo';

export interface EmbeddedInfo {
  /** A1111-style text (prompt, `Negative prompt:` line, `Key: value` pairs) */
  parameters?: string;
  /** the engine's full resolved request as JSON (PNG only) */
  aitk?: string;
}

export async function readImageInfo(bytes: Uint8Array): Promise<EmbeddedInfo> {
  if (isPng(bytes)) {
    const texts = await readPngText(bytes);
    const info: EmbeddedInfo = {};
    if (texts.parameters) info.parameters = texts.parameters;
    if (texts.aitk) info.aitk = texts.aitk;
    return info;
  }
  const comment = readUserComment(bytes);
  return comment ? { parameters: comment } : {};
}
