/**
 * Pure helpers about one output entry, shared by the server listing and the gallery: what model made it,
 * its caption, and the name a download should get.
 */
import type { OutputEntry } from './types';

type Meta = OutputEntry['meta'];

export interface OutputFilter {
  arch?: string | null;
  model?: string | null;
  /** words that must all appear in the prompt (any case) */
  q?: string | null;
  /** only the results marked favourite */
  favourites?: boolean;
}

/** Gallery orders: by file time (newest or oldest first), or by the seed actually used (ascending or descending). */
export const OUTPUT_SORTS = ['newest', 'oldest', 'seed', 'seed_desc'] as const;
export type OutputSort = (typeof OUTPUT_SORTS)[number];
export const MAX_SEARCH_CHARS = 500;

export function isOutputSort(value: string): value is OutputSort {
  return (OUTPUT_SORTS as readonly string[]).includes(value);
}

/** The search's words, lower-cased; empty when there is nothing to search for. */
export function searchTerms(q: string | null | undefined): string[] {
  return (q ?? '').toLowerCase().split(/\s+/).filter(Boolean);
}

/** Every term appears in the prompt (substring, any case); no terms: everything matches. */
export function matchesSearch(meta: Meta, terms: string[]): boolean {
  if (!terms.length) return true;
  const prompt = String(sampleOf(meta).prompt ?? '').toLowerCase();
  return terms.every((t) => prompt.includes(t));
}

/** A sorted copy. Seed orders put results without a seed last and break ties newest first. */
export function sortOutputs(entries: OutputEntry[], sort: OutputSort): OutputEntry[] {
  const newest = (a: OutputEntry, b: OutputEntry) => b.mtime - a.mtime || a.name.localeCompare(b.name);
  const bySeed = (dir: 1 | -1) => (a: OutputEntry, b: OutputEntry) => {
    const sa = seedOf(a.meta);
    const sb = seedOf(b.meta);
    if (sa === null || sb === null) return sa === sb ? newest(a, b) : sa === null ? 1 : -1;
    return (sa - sb) * dir || newest(a, b);
  };
  const order = { newest, oldest: (a: OutputEntry, b: OutputEntry) => -newest(a, b), seed: bySeed(1), seed_desc: bySeed(-1) }[sort];
  return [...entries].sort(order);
}

/**
 * Names for the files of a bulk download (a zip): each result's download name, made unique with -2, -3, …
 * (two results of one prompt and seed would otherwise overwrite each other).
 */
export function zipNames(entries: Pick<OutputEntry, 'name' | 'meta'>[]): string[] {
  const used = new Set<string>();
  return entries.map((e) => {
    const name = downloadName(e);
    const dot = name.lastIndexOf('.');
    const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
    let candidate = name;
    for (let i = 2; used.has(candidate.toLowerCase()); i++) candidate = `${stem}-${i}${ext}`;
    used.add(candidate.toLowerCase());
    return candidate;
  });
}

/** One (arch, model) pair present in the folder and how many results it has: the filter's choices. */
export interface OutputFacet {
  arch: string | null;
  model: string | null;
  count: number;
}

export interface OutputPage {
  items: OutputEntry[];
  /** results matching the filter (all pages) */
  total: number;
  offset: number;
  limit: number;
  facets: OutputFacet[];
  /** favourites in the whole folder */
  favourites?: number;
}

export interface OutputSample {
  prompt?: string;
  seed?: number;
  num_inference_steps?: number;
  guidance_scale?: number;
  width?: number;
  height?: number;
  duration_s?: number;
}

export function sampleOf(meta: Meta): OutputSample {
  const s = meta?.config?.sample;
  return s && typeof s === 'object' ? (s as OutputSample) : {};
}

export function archOf(meta: Meta): string | null {
  const a = meta?.config?.model?.arch;
  return typeof a === 'string' && a ? a : null;
}

export function modelOf(meta: Meta): string | null {
  const m = meta?.config?.model?.name_or_path;
  return typeof m === 'string' && m ? m : null;
}

/** The seed actually used: the sidecar's top-level `seed` (a random seed resolved), else the requested one. */
export function seedOf(meta: Meta): number | null {
  const seed = meta?.seed ?? sampleOf(meta).seed;
  return typeof seed === 'number' ? seed : null;
}

/** Caption parts in reading order; the ones the sidecar lacks are left out rather than shown as "?". */
export function captionParts(meta: Meta): string[] {
  const s = sampleOf(meta);
  const parts: string[] = [];
  const arch = archOf(meta);
  const model = modelOf(meta);
  if (arch || model) parts.push([arch, model].filter(Boolean).join(' · '));
  if (typeof s.width === 'number' && typeof s.height === 'number') parts.push(`${s.width}×${s.height}`);
  if (typeof s.duration_s === 'number') parts.push(`${s.duration_s} s`);
  if (typeof s.num_inference_steps === 'number') parts.push(`${s.num_inference_steps} steps`);
  if (typeof s.guidance_scale === 'number') parts.push(`CFG ${s.guidance_scale}`);
  const seed = seedOf(meta);
  if (seed !== null) parts.push(`seed ${seed}`);
  const loras = lorasOf(meta);
  if (loras.length) parts.push(`LoRA ${loras.map((l) => `${l.name} ${l.multiplier}`).join(', ')}`);
  return parts;
}

/**
 * The LoRAs a result was made with: the engine's `config.loras` (each with the name a `<lora:…>` tag finds it by),
 * else, from an older sidecar, the file names of `model.lora_path` and `model.loras`.
 */
export function lorasOf(meta: Meta): { name: string; multiplier: number; hash?: string | null }[] {
  const cfg = meta?.config as { loras?: unknown; model?: { lora_path?: unknown; lora_multiplier?: unknown; loras?: unknown } } | undefined;
  const fileName = (p: string) => (p.split('/').pop() ?? p).replace(/\.safetensors$/, '');
  if (Array.isArray(cfg?.loras)) {
    return cfg.loras
      .filter((l): l is { name: string; multiplier: number; hash?: string } => typeof l?.name === 'string' && typeof l?.multiplier === 'number')
      .map((l) => ({ name: l.name, multiplier: l.multiplier, hash: l.hash ?? null }));
  }
  const m = cfg?.model;
  const out: { name: string; multiplier: number }[] = [];
  if (typeof m?.lora_path === 'string' && m.lora_path) out.push({ name: fileName(m.lora_path), multiplier: typeof m.lora_multiplier === 'number' ? m.lora_multiplier : 1 });
  if (Array.isArray(m?.loras)) {
    for (const l of m.loras) if (typeof l?.path === 'string') out.push({ name: fileName(l.path), multiplier: typeof l.multiplier === 'number' ? l.multiplier : 1 });
  }
  return out;
}

/**
 * The engine's `download_name` (outputs.py), for when the engine is off: the prompt's first words and the
 * seed, because result files are named by request id and say nothing in a downloads folder.
 */
export function downloadName(entry: Pick<OutputEntry, 'name' | 'meta'>): string {
  const s = sampleOf(entry.meta);
  const words = String(s.prompt ?? '')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60)
    .replace(/_+$/, '');
  const dot = entry.name.lastIndexOf('.');
  const ext = dot > 0 ? entry.name.slice(dot) : '';
  const stem = [words, s.seed].filter((p) => p !== '' && p !== undefined && p !== null).join('_');
  return (stem || (dot > 0 ? entry.name.slice(0, dot) : entry.name)) + ext;
}

/** `attachment; filename="x.png"` or RFC 5987 `filename*=utf-8''x.png` -> `x.png`. */
export function filenameFromDisposition(header: string | null): string | null {
  if (!header) return null;
  const star = /filename\*\s*=\s*[^']*''([^;]+)/i.exec(header);
  if (star) {
    try {
      return decodeURIComponent(star[1].trim());
    } catch {
      /* fall through to the plain form */
    }
  }
  const plain = /filename\s*=\s*"?([^";]+)"?/i.exec(header);
  return plain ? plain[1].trim() : null;
}
