/**
 * EXIF UserComment of a JPEG or WebP: where the engine (and A1111) put the `parameters` text for those formats,
 * as "UNICODE\0" + UTF-16. A1111 and the engine write big-endian whatever the TIFF byte order (Pillow's is
 * little-endian), so big-endian is the default; a BOM or an ASCII-looking zero byte says otherwise.
 */

const USER_COMMENT = 0x9286;
const EXIF_IFD = 0x8769;
const ascii = new TextDecoder('latin1');

/** The TIFF block (starting "II" or "MM") inside a JPEG APP1 "Exif\0\0" segment or a WebP EXIF chunk. */
export function findTiff(bytes: Uint8Array): Uint8Array | null {
  if (bytes[0] === 0xff && bytes[1] === 0xd8) {
    for (let pos = 2; pos + 4 <= bytes.length; ) {
      if (bytes[pos] !== 0xff) return null;
      const marker = bytes[pos + 1];
      if (marker === 0xda || marker === 0xd9) return null; // image data: no metadata after this
      const size = (bytes[pos + 2] << 8) | bytes[pos + 3];
      if (marker === 0xe1 && ascii.decode(bytes.subarray(pos + 4, pos + 10)) === 'Exif\0\0')
        return bytes.subarray(pos + 10, pos + 2 + size);
      pos += 2 + size;
    }
    return null;
  }
  if (ascii.decode(bytes.subarray(0, 4)) === 'RIFF' && ascii.decode(bytes.subarray(8, 12)) === 'WEBP') {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let pos = 12; pos + 8 <= bytes.length; ) {
      const type = ascii.decode(bytes.subarray(pos, pos + 4));
      const size = view.getUint32(pos + 4, true);
      if (type === 'EXIF') {
        const body = bytes.subarray(pos + 8, pos + 8 + size);
        // some writers keep JPEG's "Exif\0\0" prefix inside the chunk
        return ascii.decode(body.subarray(0, 6)) === 'Exif\0\0' ? body.subarray(6) : body;
      }
      pos += 8 + size + (size & 1);
    }
  }
  return null;
}

function entryValue(tiff: Uint8Array, view: DataView, ifd: number, tag: number, le: boolean): { offset: number; count: number } | null {
  if (ifd + 2 > tiff.length) return null;
  const n = view.getUint16(ifd, le);
  for (let i = 0; i < n; i++) {
    const e = ifd + 2 + i * 12;
    if (e + 12 > tiff.length) return null;
    if (view.getUint16(e, le) !== tag) continue;
    const count = view.getUint32(e + 4, le);
    // values of 4 bytes or less sit in the entry itself; longer ones at the offset it holds
    return { offset: count <= 4 ? e + 8 : view.getUint32(e + 8, le), count };
  }
  return null;
}

function decodeComment(raw: Uint8Array): string {
  const prefix = ascii.decode(raw.subarray(0, 8));
  const body = raw.subarray(8);
  if (prefix === 'UNICODE\0') {
    let le = false;
    if (body[0] === 0xff && body[1] === 0xfe) le = true;
    else if (body[0] === 0xfe && body[1] === 0xff) le = false;
    else if (body.length >= 2 && body[0] !== 0 && body[1] === 0) le = true; // ASCII text in little-endian UTF-16
    else if (body.length >= 2 && body[0] === 0 && body[1] !== 0) le = false;
    return new TextDecoder(le ? 'utf-16le' : 'utf-16be').decode(body).replace(/^\ufeff/, '').replace(/\0+$/, '');
  }
  return new TextDecoder('utf-8').decode(prefix.startsWith('ASCII') ? body : raw).replace(/\0+$/, '');
}

/** The UserComment text, or null when the file has none. */
export function readUserComment(bytes: Uint8Array): string | null {
  const tiff = findTiff(bytes);
  if (!tiff || tiff.length < 8) return null;
  const view = new DataView(tiff.buffer, tiff.byteOffset, tiff.byteLength);
  const le = tiff[0] === 0x49; // "II"
  const ifd0 = view.getUint32(4, le);
  const exif = entryValue(tiff, view, ifd0, EXIF_IFD, le);
  if (!exif) return null;
  const comment = entryValue(tiff, view, view.getUint32(exif.offset, le), USER_COMMENT, le);
  if (!comment || comment.offset + comment.count > tiff.length) return null;
  return decodeComment(tiff.subarray(comment.offset, comment.offset + comment.count));
}
