/** A job's log.txt: rotation at start (AI Toolkit keeps old runs as logs/<n>_log.txt) and tail reads. */
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readSync, renameSync, statSync } from 'node:fs';
import path from 'node:path';

/** Move an existing log.txt to logs/<n>_log.txt, n = the first unused number from 0. */
export function rotateLog(folder: string): void {
  const log = path.join(/*turbopackIgnore: true*/ folder, 'log.txt');
  if (!existsSync(log)) return;
  const logs = path.join(folder, 'logs');
  mkdirSync(logs, { recursive: true });
  let n = 0;
  while (existsSync(path.join(logs, `${n}_log.txt`))) n++;
  renameSync(log, path.join(logs, `${n}_log.txt`));
}

function readRange(file: string, start: number, end: number): Buffer {
  const fd = openSync(/*turbopackIgnore: true*/ file, 'r');
  try {
    const buf = Buffer.alloc(Math.max(0, end - start));
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, start + got);
      if (!n) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

export const MAX_TAIL_BYTES = 5 * 1024 * 1024;

/**
 * AI Toolkit's `GET /api/jobs/:id/log[?offset=n]`: without an offset the last ≤5 MiB (partial first line
 * dropped); with one, what was appended since, ≤5 MiB at a time. An offset past the end means the log was rotated.
 */
export function readLogTail(file: string, offset?: number): { log: string; offset: number; reset: boolean } {
  let size: number;
  try {
    size = statSync(/*turbopackIgnore: true*/ file).size;
  } catch {
    return { log: '', offset: 0, reset: offset !== undefined && offset > 0 };
  }
  if (offset !== undefined && offset <= size) {
    // At most MAX_TAIL_BYTES a call (`?offset=0` on a huge log must not read it all into memory); the
    // returned offset says where to go on from.
    const end = Math.min(size, offset + MAX_TAIL_BYTES);
    return { log: readRange(file, offset, end).toString('utf8'), offset: end, reset: false };
  }
  const start = Math.max(0, size - MAX_TAIL_BYTES);
  let text = readRange(file, start, size).toString('utf8');
  if (start > 0) text = text.slice(text.indexOf('\n') + 1);
  return { log: text, offset: size, reset: offset !== undefined };
}

/** The last non-empty line of a log (≤300 chars), for error messages. */
export function lastLogLine(file: string): string {
  try {
    const fd = openSync(/*turbopackIgnore: true*/ file, 'r');
    const size = fstatSync(fd).size;
    closeSync(fd);
    const tail = readRange(file, Math.max(0, size - 8192), size).toString('utf8');
    const lines = tail.split(/\r?\n|\r/).map((l) => l.trim()).filter(Boolean);
    return (lines.at(-1) ?? '').slice(-300);
  } catch {
    return '';
  }
}
