/**
 * The gallery's favourites, kept beside the results in the engine's outputs folder as `.favourites.json`
 * (`{"names": [...]}`, result file names).
 *
 * Why there and not in the UI's sqlite: a favourite belongs to a file, so it lives and moves with the folder
 * (copied, backed up, or read by another UI on the same training folder), survives UI and engine restarts and
 * works while the engine is stopped; the sqlite schema is AI Toolkit's own, kept identical to its Prisma schema
 * (tests/schema.test.ts), where an extra table would be dropped by AI Toolkit's `prisma db push`. The engine lists
 * no dotfile (outputs.py `listing`), serves none (`/outputs/{name}` refuses hidden names) and never deletes this
 * one; names of results deleted since are dropped at the next write and never shown.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const FAVOURITES_FILE = '.favourites.json';

function fileOf(folder: string): string {
  return path.join(/*turbopackIgnore: true*/ folder, FAVOURITES_FILE);
}

/** The names marked favourite; empty when the file is missing or not ours to read. */
export function readFavourites(folder: string): Set<string> {
  try {
    const parsed = JSON.parse(readFileSync(/*turbopackIgnore: true*/ fileOf(folder), 'utf8'));
    const names = Array.isArray(parsed?.names) ? parsed.names : [];
    return new Set(names.filter((n: unknown): n is string => typeof n === 'string'));
  } catch {
    return new Set();
  }
}

/**
 * Mark (`favourite`) or unmark `names`, keeping only names in `existing` (the folder's results now), and write the
 * file atomically (a reader never sees half of it). Synchronous from read to rename: two requests of this server
 * cannot interleave inside it. Returns the new set.
 */
export function setFavourites(folder: string, names: string[], favourite: boolean, existing: Set<string>): Set<string> {
  const current = readFavourites(folder);
  for (const name of names) {
    if (favourite) current.add(name);
    else current.delete(name);
  }
  const kept = [...current].filter((n) => existing.has(n)).sort();
  const file = fileOf(folder);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(/*turbopackIgnore: true*/ tmp, JSON.stringify({ names: kept }) + '\n');
  renameSync(/*turbopackIgnore: true*/ tmp, file);
  return new Set(kept);
}
