/**
 * Serving files from the training folder (AI Toolkit's /api/files): the path is confined to the folder,
 * Range requests are honoured (video seeking, audio players), and the body streams from disk.
 */
import { createReadStream, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';

const CONTENT_TYPES: Record<string, string> = {
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp',
  '.svg': 'image/svg+xml', '.bmp': 'image/bmp', '.mp4': 'video/mp4', '.webm': 'video/webm', '.mov': 'video/quicktime',
  '.mkv': 'video/x-matroska', '.avi': 'video/x-msvideo', '.m4v': 'video/x-m4v', '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav', '.flac': 'audio/flac', '.ogg': 'audio/ogg', '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8', '.safetensors': 'application/octet-stream', '.zip': 'application/zip',
};

/**
 * The catch-all segments joined back into one path: `/api/files/<whole path url-encoded>` and
 * `/api/files/<encoded folder>/<name>` both work. Returns null when it resolves outside every root.
 */
export function resolveInside(segments: string[], roots: string[]): string | null {
  let joined = segments.join('/');
  if (!path.isAbsolute(joined)) joined = path.join(roots[0], joined);
  const resolved = path.resolve(/*turbopackIgnore: true*/ joined);
  for (const root of roots.map((r) => path.resolve(/*turbopackIgnore: true*/ r))) {
    if (resolved === root || resolved.startsWith(root + path.sep)) return resolved;
  }
  return null;
}

/**
 * Files under the training folder that are never served, whatever the path: /api/files is public (media
 * elements cannot send a token), so it must not hand out what a job keeps for itself: dotfiles and dot-folders
 * (`.job_config.json`, `.tmp/`, the engine's `.engine.json.<random>.tmp`), an engine's `engine.json` (its bearer
 * token) and any `engine.json.*` (the file it is written as before its rename, a copy), `pid.txt`, configs, and
 * `*.tmp` files (being written: a result before its rename, a token before engine.json's).
 */
const PRIVATE_NAMES = new Set(['engine.json', 'pid.txt']);
const PRIVATE_PREFIXES = ['engine.json.'];
const PRIVATE_EXTS = new Set(['.json', '.yaml', '.yml', '.toml', '.env', '.tmp']);

export function isPrivate(file: string, root: string): boolean {
  const parts = path.relative(root, file).split(path.sep);
  const name = (parts.at(-1) ?? '').toLowerCase();
  return (
    parts.some((p) => p.startsWith('.')) ||
    PRIVATE_NAMES.has(name) ||
    PRIVATE_PREFIXES.some((prefix) => name.startsWith(prefix)) ||
    PRIVATE_EXTS.has(path.extname(name))
  );
}

/**
 * `resolveInside`, then the same check on the real path (links followed), then `isPrivate` on both: a link
 * inside the folder pointing outside it, or named like a media file but pointing at engine.json, is refused.
 * Returns null when the file is not to be served (or does not exist).
 */
export function resolveServable(segments: string[], roots: string[]): string | null {
  const file = resolveInside(segments, roots);
  if (!file) return null;
  let real: string;
  try {
    real = realpathSync(/*turbopackIgnore: true*/ file);
  } catch {
    return null;
  }
  for (const root of roots) {
    let realRoot: string;
    try {
      realRoot = realpathSync(/*turbopackIgnore: true*/ root);
    } catch {
      continue;
    }
    const absRoot = path.resolve(/*turbopackIgnore: true*/ root);
    const inside = (f: string, r: string) => f === r || f.startsWith(r + path.sep);
    if (inside(real, realRoot) && inside(file, absRoot) && !isPrivate(real, realRoot) && !isPrivate(file, absRoot)) {
      return real;
    }
  }
  return null;
}

function parseRange(header: string, size: number): { start: number; end: number } | 'invalid' | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'invalid';
  let start: number;
  let end: number;
  if (m[1] === '') {
    start = Math.max(0, size - Number(m[2])); // suffix range: the last N bytes
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'invalid';
  return { start, end };
}

export function serveFile(file: string, req: Request, opts: { download?: boolean } = {}): Response {
  let stat;
  try {
    stat = statSync(/*turbopackIgnore: true*/ file);
  } catch {
    return Response.json({ error: 'File not found' }, { status: 404 });
  }
  if (!stat.isFile()) return Response.json({ error: 'Not a file' }, { status: 400 });
  const headers = new Headers({
    'Content-Type': CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
    'Accept-Ranges': 'bytes',
    'Cache-Control': 'public, max-age=86400',
    'X-Content-Type-Options': 'nosniff',
    'Last-Modified': stat.mtime.toUTCString(),
  });
  // Media plays inline; everything else (and ?download=1) is an attachment, as AI Toolkit serves them all:
  // an HTML or SVG file from the training folder must never run as a page of this origin.
  const type = headers.get('Content-Type')!;
  const media = /^(image\/(png|jpeg|gif|webp|bmp)|video\/|audio\/)/.test(type);
  if (opts.download || !media) headers.set('Content-Disposition', `attachment; filename="${encodeURIComponent(path.basename(file))}"`);
  const size = stat.size;
  const rangeHeader = req.headers.get('range');
  const range = rangeHeader ? parseRange(rangeHeader, size) : null;
  if (range === 'invalid') {
    headers.set('Content-Range', `bytes */${size}`);
    return new Response(null, { status: 416, headers });
  }
  const start = range?.start ?? 0;
  const end = range?.end ?? size - 1;
  headers.set('Content-Length', String(Math.max(0, end - start + 1)));
  if (range) headers.set('Content-Range', `bytes ${start}-${end}/${size}`);
  if (req.method === 'HEAD' || size === 0) return new Response(null, { status: range ? 206 : 200, headers });
  const stream = createReadStream(/*turbopackIgnore: true*/ file, { start, end, highWaterMark: 4 * 1024 * 1024 });
  // Readable.toWeb: the client going away destroys the file stream
  return new Response(Readable.toWeb(stream) as ReadableStream<Uint8Array>, { status: range ? 206 : 200, headers });
}
