/**
 * One better-sqlite3 connection per DB path, cached on globalThis: Next bundles route handlers and
 * instrumentation into separate module graphs (and `next dev` reloads modules), but they share the process.
 *
 * Python job processes write the same file concurrently (status, info, step), each write in a short
 * `BEGIN IMMEDIATE`; WAL plus a busy timeout lets both sides wait for each other instead of failing.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { dbPath } from './envPaths';
import { createIfMissingSql } from './schema';

const JOURNAL_MODES = new Set(['DELETE', 'TRUNCATE', 'PERSIST', 'MEMORY', 'WAL', 'OFF']);
const g = globalThis as unknown as { __aitkDb?: Map<string, Database.Database> };

/** AI Toolkit's worker sets WAL unless AI_TOOLKIT_DB_JOURNAL_MODE names another mode. */
function journalMode(): string {
  const wanted = (process.env.AI_TOOLKIT_DB_JOURNAL_MODE || 'WAL').toUpperCase();
  if (JOURNAL_MODES.has(wanted)) return wanted;
  console.warn(`AI_TOOLKIT_DB_JOURNAL_MODE=${wanted} is not one of ${[...JOURNAL_MODES].join(', ')}; using WAL`);
  return 'WAL';
}

export function db(): Database.Database {
  const file = dbPath();
  g.__aitkDb ??= new Map();
  let conn = g.__aitkDb.get(file);
  if (!conn) {
    mkdirSync(path.dirname(/*turbopackIgnore: true*/ file), { recursive: true });
    conn = new Database(/*turbopackIgnore: true*/ file);
    conn.pragma('busy_timeout = 10000');
    conn.pragma(`journal_mode = ${journalMode()}`);
    conn.exec(createIfMissingSql()); // a DB made by AI Toolkit already has all of it: nothing changes
    g.__aitkDb.set(file, conn);
  }
  return conn;
}

/** Close every cached connection (tests). */
export function closeDb(): void {
  for (const conn of g.__aitkDb?.values() ?? []) conn.close();
  g.__aitkDb?.clear();
}

/** Prisma's DateTime storage: integer milliseconds since the epoch. */
export function nowMs(): number {
  return Date.now();
}
