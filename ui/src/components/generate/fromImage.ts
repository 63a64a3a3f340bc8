/**
 * Starting from an image (README "Starting from an image"): what the form sends for its start image, strength,
 * mask blur and outpaint margins, the "Upscale ×2" request built from a gallery result's sidecar, and the start
 * settings a result's config or A1111 text gives back. Pure: the panel (StartImage.tsx) and the mask editor
 * (MaskEditor.tsx) hold the pixels.
 */
import type { ArchInfo, OutputEntry, Task } from '@/utils/types';
import type { ControlRef } from './formState';

export interface Outpaint {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

export const NO_OUTPAINT: Outpaint = { left: 0, right: 0, top: 0, bottom: 0 };
export const OUTPAINT_SIDES = ['left', 'right', 'top', 'bottom'] as const;

/** The engine's defaults (toolkit/models/from_image.py strength_of): the slider shows these until moved. */
export const DEFAULT_STRENGTH = 0.75;
export const MASKED_STRENGTH = 1;
export const DEFAULT_MASK_BLUR = 4;
export const UPSCALE_FACTOR = 2;
/** A1111's inpaint area: the whole picture, or only the region around the mask at the form's size, pasted back. */
export type InpaintArea = 'whole' | 'only_masked';
export const DEFAULT_INPAINT_PADDING = 32;

/** The start-image part of the form. `strength` null: the engine's default for the task (0.75, 1.0 masked). */
export interface StartFields {
  init_image: ControlRef | null;
  strength: number | null;
  mask_blur: number;
  outpaint: Outpaint;
  inpaint_area?: InpaintArea;
  /** only_masked: pixels of context around the mask's box */
  inpaint_padding?: number;
  /** video-to-video (a family listing `vid2vid`): the start video, re-noised to `strength` as a start image is */
  init_video?: ControlRef | null;
}

export const DEFAULT_START: StartFields = {
  init_image: null,
  strength: null,
  mask_blur: DEFAULT_MASK_BLUR,
  outpaint: NO_OUTPAINT,
  inpaint_area: 'whole',
  inpaint_padding: DEFAULT_INPAINT_PADDING,
};

/** The family's tasks (GET /models `tasks`; an engine that does not list them: text-to-image only). */
export function tasksOf(arch: Pick<ArchInfo, 'tasks'> | undefined): Task[] {
  return arch?.tasks?.length ? arch.tasks : ['txt2img'];
}

/** Whether the form offers a start image: the family can start from one, by image-to-image or inpainting. */
export function takesStartImage(arch: Pick<ArchInfo, 'tasks'> | undefined): boolean {
  const t = tasksOf(arch);
  return t.includes('img2img') || t.includes('inpaint');
}

/** Whether the form offers a start video: the family does video-to-video (Wan 2.1/2.2, LTX-Video). */
export function takesStartVideo(arch: Pick<ArchInfo, 'tasks'> | undefined): boolean {
  return tasksOf(arch).includes('vid2vid');
}

export function canInpaint(arch: Pick<ArchInfo, 'tasks'> | undefined): boolean {
  return tasksOf(arch).includes('inpaint');
}

export function outpaints(o: Outpaint | null | undefined): boolean {
  return Boolean(o && OUTPAINT_SIDES.some((k) => o[k] > 0));
}

/** What the strength slider shows when none was picked: the value the engine will run with. */
export function effectiveStrength(strength: number | null | undefined, masked: boolean): number {
  return strength ?? (masked ? MASKED_STRENGTH : DEFAULT_STRENGTH);
}

/** The result's size: the start image's grown by the margins (the engine sets it so: request_checks set_canvas). */
export function outpaintSize(width: number, height: number, o: Outpaint): { width: number; height: number } {
  return { width: width + o.left + o.right, height: height + o.top + o.bottom };
}

/**
 * Why the start settings cannot run on this family, or null: a family that only inpaints needs a mask (or
 * margins to fill), one that only starts from an image cannot take a mask.
 */
export function startProblem(arch: Pick<ArchInfo, 'arch' | 'tasks'> | undefined, s: Partial<StartFields>, masked: boolean): string | null {
  if (!s.init_image || !arch) return null;
  const t = tasksOf(arch);
  const repaint = masked || outpaints(s.outpaint);
  if (repaint && !t.includes('inpaint')) return `${arch.arch} cannot inpaint: clear the mask and margins`;
  if (!repaint && !t.includes('img2img')) return `${arch.arch} only inpaints: paint a mask or add margins`;
  return null;
}

/**
 * The sample fields of the start image (none without one, or on a family that cannot start from one). `mask` is
 * the uploaded mask's asset id, when one was painted.
 */
export function startFields(arch: Pick<ArchInfo, 'tasks'>, s: Partial<StartFields>, mask?: string | null): Record<string, unknown> {
  if (!s.init_image || !takesStartImage(arch)) return {};
  const out: Record<string, unknown> = { init_image: s.init_image.ref };
  if (typeof s.strength === 'number' && Number.isFinite(s.strength)) out.strength = Math.min(1, Math.max(0, s.strength));
  if (!canInpaint(arch)) return out;
  if (mask) out.mask = mask;
  const o = s.outpaint;
  if (o && outpaints(o)) {
    const clean = (v: number) => (Number.isFinite(v) ? Math.min(2048, Math.max(0, Math.round(v))) : 0);
    out.outpaint = Object.fromEntries(OUTPAINT_SIDES.map((k) => [k, clean(o[k])]));
  }
  const blur = s.mask_blur ?? DEFAULT_MASK_BLUR;
  if ((mask || out.outpaint) && Number.isFinite(blur)) out.mask_blur = Math.min(64, Math.max(0, Math.round(blur)));
  // only a painted mask on the picture as it is (an outpaint repaints the whole grown canvas)
  if (mask && !out.outpaint && s.inpaint_area === 'only_masked') {
    out.inpaint_area = 'only_masked';
    const pad = s.inpaint_padding ?? DEFAULT_INPAINT_PADDING;
    out.inpaint_padding = Number.isFinite(pad) ? Math.min(1024, Math.max(0, Math.round(pad))) : DEFAULT_INPAINT_PADDING;
  }
  return out;
}

/** The sample fields of the start video: none without one, or on a family that cannot start from one. */
export function videoStartFields(arch: Pick<ArchInfo, 'tasks'>, s: Partial<StartFields>): Record<string, unknown> {
  if (!s.init_video || !takesStartVideo(arch)) return {};
  const out: Record<string, unknown> = { init_video: s.init_video.ref };
  if (typeof s.strength === 'number' && Number.isFinite(s.strength)) out.strength = Math.min(1, Math.max(0, s.strength));
  return out;
}

/** A request that names files of one engine (uploads to its assets, results of its gallery) must go to it. */
export function namesEngineFiles(sample: Record<string, unknown>): boolean {
  return ['ctrl_img', 'ctrl_img_2', 'ctrl_img_3', 'init_image', 'mask', 'init_video'].some((k) => typeof sample[k] === 'string' && sample[k]);
}

/** A gallery result as the start image: its path on the engine's machine, shown through /api/files. */
export function startFromEntry(entry: Pick<OutputEntry, 'name' | 'path' | 'url' | 'meta'>): { ref: ControlRef; width?: number; height?: number } {
  const r = entry.meta?.result;
  return {
    ref: { ref: entry.path, preview: entry.url, info: `gallery result ${entry.name}` },
    ...(typeof r?.width === 'number' && typeof r?.height === 'number' ? { width: r.width, height: r.height } : {}),
  };
}

export function isVideoResult(entry: Pick<OutputEntry, 'name' | 'meta'>): boolean {
  const kind = entry.meta?.result?.kind;
  return kind ? kind === 'video' : /\.(mp4|webm)$/i.test(entry.name);
}

export function isImageResult(entry: Pick<OutputEntry, 'name' | 'meta'>): boolean {
  const kind = entry.meta?.result?.kind;
  return kind ? kind === 'image' : /\.(png|jpe?g|webp)$/i.test(entry.name);
}

const MODEL_KEYS = ['dtype', 'quantize', 'low_vram'] as const;
const SAMPLE_KEYS = ['prompt', 'negative_prompt', 'guidance_scale', 'num_inference_steps', 'sampler', 'scheduler', 'speed'] as const;

/**
 * "Upscale ×2" on a result: its own model, prompt, seed and sampling from its sidecar config (what restore reads),
 * with the result itself as init_image; the engine sizes the new one from the file (set_canvas). Null when the
 * sidecar says too little to ask again.
 */
export function upscaleBody(entry: Pick<OutputEntry, 'path' | 'name' | 'meta'>, factor = UPSCALE_FACTOR, upscaler = '') {
  const cfg = entry.meta?.config;
  const m = cfg?.model as Record<string, unknown> | undefined;
  const s = cfg?.sample;
  if (!m || typeof m.arch !== 'string' || typeof m.name_or_path !== 'string' || !s || typeof s.prompt !== 'string') return null;
  const model: { arch: string; name_or_path: string; [key: string]: unknown } = { arch: m.arch, name_or_path: m.name_or_path };
  for (const k of MODEL_KEYS) if (m[k] !== undefined && m[k] !== null && m[k] !== false) model[k] = m[k];
  // every LoRA the result was made with, those its prompt's <lora:…> tags named included (config.model.loras)
  const loras = [
    ...(typeof m.lora_path === 'string' && m.lora_path ? [{ path: m.lora_path, multiplier: typeof m.lora_multiplier === 'number' ? m.lora_multiplier : 1 }] : []),
    ...(Array.isArray(m.loras) ? (m.loras as { path: string; multiplier: number }[]) : []),
  ];
  if (loras.length) model.loras = loras.map((l) => ({ path: l.path, multiplier: l.multiplier }));
  const sample: Record<string, unknown> = {};
  for (const k of SAMPLE_KEYS) if (s[k] !== undefined && s[k] !== null) sample[k] = s[k];
  const seed = typeof entry.meta?.seed === 'number' ? entry.meta.seed : s.seed;
  if (typeof seed === 'number' && seed >= 0) sample.seed = seed;
  const ext = /\.(png|jpe?g|webp)$/i.exec(entry.name)?.[1]?.toLowerCase();
  if (ext) sample.output_ext = ext === 'jpeg' ? 'jpg' : ext;
  sample.init_image = entry.path;
  // an upscaler file (GET /upscalers) resizes it before the refine; none: Lanczos
  sample.upscale = upscaler ? { factor, model: upscaler } : { factor };
  return { model, sample, stream: { latents: 'x0' as const, every_n_steps: 1, max_frames: 0 } };
}

/** The start settings a resolved config (sidecar or `aitk` chunk) holds: what restore puts back. */
export interface RestoredStart {
  init_image?: string;
  init_video?: string;
  strength?: number;
  mask_blur?: number;
  outpaint?: Outpaint;
  inpaint_area?: InpaintArea;
  inpaint_padding?: number;
}

export function startFromConfig(s: Record<string, unknown>): RestoredStart {
  const out: RestoredStart = {};
  if (typeof s.init_image === 'string' && s.init_image) out.init_image = s.init_image;
  if (typeof s.init_video === 'string' && s.init_video) out.init_video = s.init_video;
  if (typeof s.strength === 'number' && s.strength >= 0 && s.strength <= 1) out.strength = s.strength;
  if (typeof s.mask_blur === 'number' && Number.isFinite(s.mask_blur)) out.mask_blur = s.mask_blur;
  if (s.inpaint_area === 'whole' || s.inpaint_area === 'only_masked') out.inpaint_area = s.inpaint_area;
  if (typeof s.inpaint_padding === 'number' && s.inpaint_padding >= 0 && s.inpaint_padding <= 1024) out.inpaint_padding = s.inpaint_padding;
  const o = s.outpaint as Record<string, unknown> | null | undefined;
  if (o && typeof o === 'object') {
    const sides = Object.fromEntries(OUTPAINT_SIDES.map((k) => [k, typeof o[k] === 'number' && (o[k] as number) >= 0 ? (o[k] as number) : 0])) as unknown as Outpaint;
    if (outpaints(sides)) out.outpaint = sides;
  }
  return out;
}

/**
 * An outpaint handle dragged by `delta` screen px (`outward`: 1 where moving right or down grows that side, -1 where
 * moving left or up does) at `scale` screen px per image px: the side's new margin, a multiple of the family's
 * divisibility in 0-2048 (the engine's range), so the result's size stays one the family can make.
 */
export function dragMargin(start: number, delta: number, scale: number, divisibility: number, outward: 1 | -1): number {
  const d = Math.max(1, divisibility);
  const raw = start + (outward * delta) / (scale > 0 ? scale : 1);
  return Math.min(Math.floor(2048 / d) * d, Math.max(0, Math.round(raw / d) * d));
}
