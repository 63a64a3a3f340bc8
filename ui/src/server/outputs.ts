/**
 * An engine job's results read straight from disk, so the gallery works while the engine is stopped: the same
 * entries as the engine's GET /outputs (extensions_built_in/inference_engine/outputs.py), with paging and a
 * model filter, and deleting one result the way the engine's DELETE /outputs/{name} does.
 *
 * Every path is confined to the training folder (links followed): a job folder linked elsewhere, or a name with
 * folders in it, reaches nothing.
 */
import { lstatSync, readFileSync, readdirSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { resolveInside } from './files';
import { isInferenceJob } from './jobConfig';
import { type Job, listJobs } from './jobs';
import { engineFolder } from './engines';
import { trainingFolder } from './paths';
import { type OutputFacet, type OutputFilter, type OutputPage, archOf, modelOf } from '@/utils/outputs';
import type { OutputEntry } from '@/utils/types';

export const MAX_PAGE = 500;

/** An engine job by id or name (the `?job=` of the engine proxy), or null when there is none. */
export function findEngineJob(selector: string): Job | null {
  const job = listJobs().find((j) => j.id === selector || j.name === selector);
  return job && isInferenceJob(job) ? job : null;
}

/** Where the engine writes: the `engine.output_folder` startJob gives it (server/uiFolders.ts), whatever the row says. */
export function outputsFolderOf(job: Job): string {
  return path.join(/*turbopackIgnore: true*/ engineFolder(job), 'outputs');
}

const inside = (file: string, root: string) => file === root || file.startsWith(root + path.sep);

function realOrSelf(p: string): string {
  try {
    return realpathSync(/*turbopackIgnore: true*/ p);
  } catch {
    return p;
  }
}

/**
 * `folder` when it lies under `root` both as written and with links followed, else null. A folder that does
 * not exist yet passes (an engine that has made nothing): listing it finds nothing.
 */
export function confineFolder(folder: string, root: string): string | null {
  const resolved = resolveInside([path.resolve(/*turbopackIgnore: true*/ folder)], [root]);
  if (!resolved || resolved === path.resolve(/*turbopackIgnore: true*/ root)) return null;
  return inside(realOrSelf(resolved), realOrSelf(root)) ? resolved : null;
}

/** The job's outputs folder, confined to the training folder; null when the config sends it elsewhere. */
export function safeOutputsFolder(job: Job): string | null {
  return confineFolder(outputsFolderOf(job), trainingFolder());
}

/** A result's file name as the engine lists it: no folders, nothing hidden, not a sidecar or a file being written. */
export function isResultName(name: string): boolean {
  return (
    name.length > 0 && path.basename(name) === name && name !== '..' && !name.startsWith('.') && !name.endsWith('.json') &&
    !name.endsWith('.tmp') && !name.includes('\0')
  );
}

/** outputs.py `sidecar_of`: the result's path with its extension replaced by `.json`. */
export function sidecarOf(file: string): string {
  const ext = path.extname(file);
  return `${ext ? file.slice(0, -ext.length) : file}.json`;
}

export function thumbnailOf(file: string): string {
  return path.join(/*turbopackIgnore: true*/ path.dirname(file), '.thumbs', `${path.basename(file)}.jpg`);
}

// Sidecars never change once written (atomic rename), so one read per file version is enough even when the
// gallery polls a folder of thousands.
const sidecarCache = new Map<string, { mtimeMs: number; meta: OutputEntry['meta'] }>();

function readSidecar(file: string): OutputEntry['meta'] {
  const sidecar = sidecarOf(file);
  let mtimeMs: number;
  try {
    mtimeMs = statSync(/*turbopackIgnore: true*/ sidecar).mtimeMs;
  } catch {
    sidecarCache.delete(sidecar);
    return null;
  }
  const cached = sidecarCache.get(sidecar);
  if (cached && cached.mtimeMs === mtimeMs) return cached.meta;
  let meta: OutputEntry['meta'] = null;
  try {
    const parsed = JSON.parse(readFileSync(/*turbopackIgnore: true*/ sidecar, 'utf8'));
    meta = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : null;
  } catch {
    meta = null; // being written by another tool, or not JSON: the result is still listed
  }
  sidecarCache.set(sidecar, { mtimeMs, meta });
  return meta;
}

export function fileUrl(file: string): string {
  return `/api/files/${encodeURIComponent(file)}`;
}

/** Every finished result in `folder`, newest first (outputs.py `listing` without its limit). */
export function readOutputs(folder: string): OutputEntry[] {
  let names: string[];
  try {
    names = readdirSync(/*turbopackIgnore: true*/ folder);
  } catch {
    return [];
  }
  const entries: OutputEntry[] = [];
  for (const name of names) {
    if (!isResultName(name)) continue;
    const file = path.join(/*turbopackIgnore: true*/ folder, name);
    let st;
    try {
      st = statSync(/*turbopackIgnore: true*/ file);
    } catch {
      continue; // renamed or removed between readdir and stat
    }
    if (!st.isFile()) continue;
    entries.push({ name, path: file, url: fileUrl(file), bytes: st.size, mtime: st.mtimeMs / 1000, meta: readSidecar(file) });
  }
  return entries.sort((a, b) => b.mtime - a.mtime || a.name.localeCompare(b.name));
}

export function matches(entry: OutputEntry, filter: OutputFilter): boolean {
  if (filter.arch && archOf(entry.meta) !== filter.arch) return false;
  if (filter.model && modelOf(entry.meta) !== filter.model) return false;
  return true;
}

export function facetsOf(entries: OutputEntry[]): OutputFacet[] {
  const counts = new Map<string, OutputFacet>();
  for (const e of entries) {
    const arch = archOf(e.meta);
    const model = modelOf(e.meta);
    const key = JSON.stringify([arch, model]);
    const facet = counts.get(key) ?? { arch, model, count: 0 };
    facet.count += 1;
    counts.set(key, facet);
  }
  return [...counts.values()].sort((a, b) => (a.arch ?? '~').localeCompare(b.arch ?? '~') || (a.model ?? '').localeCompare(b.model ?? ''));
}

/** Clamp paging parameters from a query string: bad or missing values fall back, never throw. */
export function pageParams(offset: string | null, limit: string | null, defaultLimit = 48): { offset: number; limit: number } {
  const o = Number(offset);
  const l = Number(limit);
  return {
    offset: Number.isInteger(o) && o > 0 ? o : 0,
    limit: Number.isInteger(l) && l > 0 ? Math.min(l, MAX_PAGE) : defaultLimit,
  };
}

/** Filter, then page; the facets count the whole folder so the filter can switch to any model. */
export function pageOutputs(entries: OutputEntry[], filter: OutputFilter, offset: number, limit: number): OutputPage {
  const matching = entries.filter((e) => matches(e, filter));
  return { items: matching.slice(offset, offset + limit), total: matching.length, offset, limit, facets: facetsOf(entries) };
}

export class OutputError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * outputs.py `Outputs.remove`: the result, its thumbnail and its sidecar. The result must be a regular file
 * of `folder` itself (a link is refused, whatever it points at). Returns the paths removed.
 */
export function deleteOutput(folder: string, name: string): string[] {
  if (!isResultName(name)) throw new OutputError(404, `no output named ${JSON.stringify(name)}`);
  const file = path.join(/*turbopackIgnore: true*/ folder, name);
  let st;
  try {
    st = lstatSync(/*turbopackIgnore: true*/ file);
  } catch {
    throw new OutputError(404, `no output named ${JSON.stringify(name)}`);
  }
  if (!st.isFile()) throw new OutputError(404, `no output named ${JSON.stringify(name)}`);
  const removed: string[] = [];
  for (const p of [file, thumbnailOf(file), sidecarOf(file)]) {
    try {
      // the thumbnail or sidecar could be a link planted to point elsewhere: unlink removes the link only
      unlinkSync(/*turbopackIgnore: true*/ p);
      removed.push(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
  return removed;
}
