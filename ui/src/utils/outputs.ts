/**
 * Pure helpers about one output entry, shared by the server listing and the gallery: what model made it,
 * its caption, and the name a download should get.
 */
import type { OutputEntry } from './types';

type Meta = OutputEntry['meta'];

export interface OutputFilter {
  arch?: string | null;
  model?: string | null;
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
  return parts;
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
