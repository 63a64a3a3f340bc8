/**
 * The model and LoRA libraries' logic, kept out of the components so it is tested alone: what the engine's
 * GET /checkpoints and GET /loras list (extensions_built_in/inference_engine/catalog.py), searched, and what
 * picking an entry does to the form.
 */
import type { ArchInfo } from '@/utils/types';
import { familyOf } from './archOptions';
import { BUILTIN_MODELS } from './formState';

/** One checkpoint of GET /checkpoints: a diffusers folder, a Hugging Face cache model (by hub id) or a single file. */
export interface LibraryCheckpoint {
  path: string;
  name: string;
  kind: 'diffusers' | 'single_file' | 'hub_cache';
  root: string;
  arch: string | null;
  pipeline?: string | null;
  bytes?: number;
  defaults?: { dtype?: string; width?: number; height?: number };
  thumbnail?: { name: string; url: string; ext: string } | null;
}

/** A family's (or tag's) published checkpoint: GET /checkpoints `hub`. */
export interface HubModel {
  arch: string;
  value: string;
  hub_id: string;
  description?: string;
}

export interface CheckpointListing {
  roots: string[];
  device?: string;
  dtype?: string;
  checkpoints: LibraryCheckpoint[];
  hub?: HubModel[];
}

/** What the model library shows, one row each: files on disk, published checkpoints, tiny and builtin ones. */
export interface LibraryItem {
  key: string;
  /** what the request's name_or_path gets */
  path: string;
  /** what the arch select gets: the family, or `family:tag` for a tag's published checkpoint */
  arch: string | null;
  label: string;
  detail: string;
  source: 'local' | 'hub' | 'tiny' | 'builtin';
  dtype?: string;
  width?: number;
  height?: number;
  thumbnail?: string | null;
}

const IMAGE_EXTS = new Set(['png', 'jpg', 'jpeg', 'webp']);

export function formatBytes(n: number | undefined): string {
  if (!n) return '';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 10 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

const KIND_LABEL: Record<LibraryCheckpoint['kind'], string> = {
  diffusers: 'diffusers folder',
  single_file: 'single file',
  hub_cache: 'in the Hugging Face cache',
};

/**
 * Every row: local checkpoints first (newest-result ones with their thumbnail), then each family's published
 * checkpoint (not already cached), then tiny and builtin checkpoints of the families this engine serves.
 */
export function libraryItems(listing: CheckpointListing | null, archs: Pick<ArchInfo, 'arch'>[]): LibraryItem[] {
  const served = new Set(archs.map((a) => a.arch));
  const dtype = listing?.dtype;
  const local: LibraryItem[] = (listing?.checkpoints ?? []).map((c) => ({
    key: `local:${c.path}`,
    path: c.path,
    arch: c.arch,
    label: c.name,
    detail: [c.arch ?? 'unknown family', KIND_LABEL[c.kind], formatBytes(c.bytes)].filter(Boolean).join(' · '),
    source: 'local',
    dtype: c.defaults?.dtype ?? dtype,
    width: c.defaults?.width,
    height: c.defaults?.height,
    thumbnail: c.thumbnail && IMAGE_EXTS.has(c.thumbnail.ext) ? c.thumbnail.url : null,
  }));
  const onDisk = new Set(local.map((i) => i.path));
  const hub: LibraryItem[] = (listing?.hub ?? [])
    .filter((h) => served.has(familyOf(h.value)) && !onDisk.has(h.hub_id))
    .map((h) => ({
      key: `hub:${h.value}`,
      path: h.hub_id,
      arch: h.value,
      label: h.hub_id,
      detail: `${h.value} · published checkpoint (downloads on first use)`,
      source: 'hub',
      dtype,
    }));
  const tiny: LibraryItem[] = [...served].sort().map((a) => ({
    key: `tiny:${a}`,
    path: `tiny:${a}`,
    arch: a,
    label: `tiny:${a}`,
    detail: `${a} · offline tiny checkpoint (random weights)`,
    source: 'tiny',
    dtype,
  }));
  const builtin: LibraryItem[] = Object.entries(BUILTIN_MODELS)
    .filter(([, b]) => served.has(b.arch))
    .map(([path, b]) => ({
      key: path,
      path,
      arch: b.arch,
      label: path,
      detail: `${b.arch} · trained demo checkpoint shipped with the toolkit`,
      source: 'builtin',
      dtype,
      width: b.native,
      height: b.native,
    }));
  return [...local, ...builtin, ...hub, ...tiny];
}

/** Every word of the query somewhere in the row's name, path, family or description (case-insensitive). */
export function matches(query: string, ...fields: (string | null | undefined)[]): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const text = fields.filter(Boolean).join(' ').toLowerCase();
  return words.every((w) => text.includes(w));
}

export function searchLibrary(items: LibraryItem[], query: string): LibraryItem[] {
  return items.filter((i) => matches(query, i.label, i.path, i.arch, i.detail));
}

/** The model form after picking a row: the arch follows the checkpoint (unknown family: the form's stays). */
export interface ModelPick {
  arch: string | null;
  name_or_path: string;
  dtype?: string;
  width?: number;
  height?: number;
}

export function pickOf(item: LibraryItem): ModelPick {
  return { arch: item.arch, name_or_path: item.path, dtype: item.dtype, width: item.width, height: item.height };
}

/** The arch value the select should take for a pick: the pick's family or tag where this engine serves it. */
export function archForPick(pick: ModelPick, archs: Pick<ArchInfo, 'arch'>[], current: string): string {
  if (!pick.arch) return current;
  if (!archs.some((a) => a.arch === familyOf(pick.arch!))) return current;
  // the form's own tag of the same family stays when the pick names the bare family (a local zimage file)
  if (!pick.arch.includes(':') && familyOf(current) === pick.arch) return current;
  return pick.arch;
}

// ------------------------------------------------------------------------------------------------ LoRAs

/** One LoRA of GET /loras. */
export interface LibraryLora {
  path: string;
  name: string;
  root: string;
  bytes: number;
  mtime: number;
  job: string | null;
  step: number | null;
  arch: string | null;
  base_model: string | null;
  title?: string;
  tag?: string;
  aliases?: string[];
  trigger_words?: string[];
  preview_url?: string | null;
  hash?: string | null;
}

export function loraLabel(e: Pick<LibraryLora, 'job' | 'name' | 'step' | 'arch' | 'title'>): string {
  const parts = [e.job ?? e.title ?? e.name];
  if (e.step != null) parts.push(`step ${e.step}`);
  if (e.arch) parts.push(e.arch);
  return parts.join(' · ');
}

/** LoRAs whose name, job, tag, file or trigger words hold every word of the query. */
export function searchLoras(entries: LibraryLora[], query: string): LibraryLora[] {
  return entries.filter((e) => matches(query, e.title, e.job, e.tag, e.name, e.arch, ...(e.aliases ?? []), ...(e.trigger_words ?? [])));
}

/** The `<lora:name:multiplier>` tag that names the entry in a prompt. */
export function loraTag(e: Pick<LibraryLora, 'tag' | 'name'>, multiplier = 1): string {
  const name = e.tag ?? e.name.replace(/\.safetensors$/, '');
  return `<lora:${name}:${Number(multiplier.toFixed(3))}>`;
}
