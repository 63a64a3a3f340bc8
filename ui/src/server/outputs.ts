/**
 * An engine job's results read straight from disk, so the gallery works while the engine is stopped: the same
 * entries as the engine's GET /outputs (extensions_built_in/inference_engine/outputs.py), with paging, a model
 * filter, a prompt search, favourites (server/favourites.ts) and an order, and deleting one result the way the
 * engine's DELETE /outputs/{name} does.
 *
 * Every path is confined to the training folder (links followed): a job folder linked elsewhere, or a name with
 * folders in it, reaches nothing.
 */
import { lstatSync, readFileSync, readdirSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { readFavourites } from './favourites';
import path from 'node:path';
import { resolveInside } from './files';
import { isInferenceJob } from './jobConfig';
import { type Job, listJobs } from './jobs';
import { engineFolder } from './engines';
import { trainingFolder } from './paths';
import {
  MAX_SEARCH_CHARS, OUTPUT_SORTS, type OutputFacet, type OutputFilter, type OutputPage, type OutputSort, archOf, isOutputSort,
  matchesSearch, modelOf, searchTerms, sortOutputs,
} from '@/utils/outputs';
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

/** Every finished result in `folder`, newest first (outputs.py `listing` without its limit), favourites marked. */
export function readOutputs(folder: string): OutputEntry[] {
  const favourites = readFavourites(folder);
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
    entries.push({
      name, path: file, url: fileUrl(file), bytes: st.size, mtime: st.mtimeMs / 1000, favourite: favourites.has(name), meta: readSidecar(file),
    });
  }
  return entries.sort((a, b) => b.mtime - a.mtime || a.name.localeCompare(b.name));
}

export function matches(entry: OutputEntry, filter: OutputFilter, terms = searchTerms(filter.q)): boolean {
  if (filter.arch && archOf(entry.meta) !== filter.arch) return false;
  if (filter.model && modelOf(entry.meta) !== filter.model) return false;
  if (filter.favourites && !entry.favourite) return false;
  return matchesSearch(entry.meta, terms);
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

/** A compare grid's cell whose grid page is there: the gallery shows the grid as one item, its page. */
export function inGrid(entry: OutputEntry, names: Set<string>): boolean {
  const page = entry.meta?.grid_cell?.page;
  return Boolean(page && names.has(page));
}

/** Filter, sort, then page; the facets count the whole folder so the filter can switch to any model. */
export function pageOutputs(entries: OutputEntry[], filter: OutputFilter, offset: number, limit: number, sort: OutputSort = 'newest'): OutputPage {
  const terms = searchTerms(filter.q);
  const names = new Set(entries.map((e) => e.name));
  const matching = sortOutputs(entries.filter((e) => !inGrid(e, names) && matches(e, filter, terms)), sort);
  return {
    items: matching.slice(offset, offset + limit), total: matching.length, offset, limit, facets: facetsOf(entries),
    favourites: entries.filter((e) => e.favourite).length,
  };
}

/** A 400's body: what is wrong, and the field (query parameter or body key) that is. */
export interface FieldError {
  error: string;
  field: string;
  /** 400 unless said */
  status?: number;
}

export function isFieldError(x: unknown): x is FieldError {
  return typeof x === 'object' && x !== null && 'field' in x && 'error' in x;
}

export function fieldErrorResponse(e: FieldError): Response {
  return Response.json({ error: e.error, field: e.field }, { status: e.status ?? 400 });
}

/** `?job=` to the job and its outputs folder, or the error response (400 no job named, 404 none such, 403 elsewhere). */
export function jobOutputs(selector: string | null): { job: Job; folder: string } | Response {
  if (!selector) return Response.json({ error: 'say which engine job: ?job=<id or name>', field: 'job' }, { status: 400 });
  const job = findEngineJob(selector);
  if (!job) return Response.json({ error: `no inference engine job ${JSON.stringify(selector)}`, field: 'job' }, { status: 404 });
  const folder = safeOutputsFolder(job);
  if (!folder) return Response.json({ error: `the outputs of ${job.name} are outside the training folder` }, { status: 403 });
  return { job, folder };
}

/** `GET /api/outputs`'s query: the filter and order, or the first bad parameter. */
export function outputQuery(q: URLSearchParams): { filter: OutputFilter; sort: OutputSort } | FieldError {
  const sort = q.get('sort') ?? 'newest';
  if (!isOutputSort(sort)) return { error: `sort must be one of ${OUTPUT_SORTS.join(', ')}, not ${JSON.stringify(sort)}`, field: 'sort' };
  const search = q.get('q') ?? '';
  if (search.length > MAX_SEARCH_CHARS) return { error: `q is at most ${MAX_SEARCH_CHARS} characters`, field: 'q' };
  const fav = q.get('favourites');
  if (fav !== null && fav !== '0' && fav !== '1') return { error: 'favourites is 1 (only favourites) or 0', field: 'favourites' };
  return { filter: { arch: q.get('arch'), model: q.get('model'), q: search || null, favourites: fav === '1' }, sort };
}

export const MAX_BULK = 1000;

/**
 * A JSON body's `names` for a bulk action: a non-empty list of at most MAX_BULK results of `folder`, each a
 * regular file there now. The first bad one is named (`names[3]`).
 */
export function bulkNames(body: unknown, folder: string): string[] | FieldError {
  const names = (body as { names?: unknown } | null)?.names;
  if (!Array.isArray(names) || !names.length) return { error: 'names must be a non-empty list of result file names', field: 'names' };
  if (names.length > MAX_BULK) return { error: `names lists at most ${MAX_BULK} results`, field: 'names' };
  for (const [i, name] of names.entries()) {
    if (typeof name !== 'string' || !isResultName(name)) return { error: `${JSON.stringify(name)} is not a result file name`, field: `names[${i}]` };
    let st;
    try {
      st = lstatSync(/*turbopackIgnore: true*/ path.join(/*turbopackIgnore: true*/ folder, name));
    } catch {
      st = null;
    }
    if (!st?.isFile()) return { error: `no output named ${JSON.stringify(name)}`, field: `names[${i}]`, status: 404 };
  }
  return [...new Set(names as string[])];
}

/** Every result name in `folder` now (what favourites may keep). */
export function resultNames(folder: string): Set<string> {
  return new Set(readOutputs(folder).map((e) => e.name));
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
