/** The generate form: values, arch defaults and size snapping (the engine snaps too and reports it). */
import type { ArchDefaults, ArchInfo, LoraChoice, SamplerInfo, Speed } from '@/utils/types';
import { DEFAULT_START, type StartFields, startFields, videoStartFields } from './fromImage';

export interface ModelForm {
  arch: string;
  name_or_path: string;
  dtype: string;
  loras: LoraChoice[];
  quantize: boolean;
  low_vram: boolean;
}

/** One control image: what the engine is sent (an asset id or a server path) and what the form shows. */
export interface ControlRef {
  ref: string;
  preview: string;
  info: string;
}

/** The start image, strength, mask blur and outpaint margins are StartFields (startImage.ts; absent: none). */
export interface SampleForm extends Partial<StartFields> {
  prompt: string;
  negative_prompt: string;
  width: number;
  height: number;
  num_inference_steps: number;
  guidance_scale: number;
  seed: number;
  num_frames: number;
  fps: number;
  duration_s: number;
  output_ext: string;
  lyrics: string;
  batch_count: number;
  /** the engine's speed tier (toolkit/models/speed.py); absent or 'lossless': the model as it is */
  speed?: Speed;
  /** A1111's sampler name ('' or absent: the checkpoint's own scheduler) and schedule type ('default': its own) */
  sampler?: string;
  scheduler?: string;
  /** by slot: ctrl_img, ctrl_img_2, ctrl_img_3 (null: empty slot) */
  ctrl_imgs: (ControlRef | null)[];
}

export interface StreamForm {
  latents: 'raw' | 'x0' | 'none';
  every_n_steps: number;
}

export const DEFAULT_MODEL: ModelForm = { arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float16', loras: [], quantize: false, low_vram: false };

export const DEFAULT_SAMPLE: SampleForm = {
  prompt: 'a red fox in the snow, golden hour',
  negative_prompt: '',
  width: 512,
  height: 512,
  num_inference_steps: 25,
  guidance_scale: 7,
  seed: -1,
  num_frames: 33,
  fps: 16,
  duration_s: 10,
  output_ext: 'png',
  lyrics: '',
  batch_count: 1,
  speed: 'lossless',
  ctrl_imgs: [],
  ...DEFAULT_START,
};

/** What the Speed select shows for each tier. */
export const SPEED_LABELS: Record<Speed, string> = {
  lossless: 'Lossless',
  fp8: 'fp8 (float8 denoiser)',
  cache: 'cache (reuses steps)',
  fast: 'fast (fp8 + cache)',
};

/** The tiers the family offers on this engine. */
export function speedsOf(arch: Pick<ArchInfo, 'speeds'>): Speed[] {
  return arch.speeds?.length ? arch.speeds : ['lossless'];
}

/** ``speed`` where the family offers it, else lossless (a remembered tier may not be offered by this engine). */
export function speedFor(arch: Pick<ArchInfo, 'speeds'>, speed: Speed | undefined): Speed {
  return speed && speedsOf(arch).includes(speed) ? speed : 'lossless';
}

/**
 * Trained checkpoints that ship in the repository, with the settings they were trained for
 * (toolkit/models/builtin/<name>/README.md). builtin:shapes is the CPU newcomer's default: it draws something,
 * where tiny:<arch> random weights draw noise.
 */
export const BUILTIN_MODELS: Record<string, { arch: string; sample: ArchDefaults; native: number; prompt: string }> = {
  'builtin:shapes': {
    arch: 'sd1',
    sample: { width: 64, height: 64, num_inference_steps: 20, guidance_scale: 5 },
    native: 64,
    prompt: 'a red circle on a blue background',
  },
};

/**
 * What GET /models does not say (toolkit/models/archs): optional extra references beyond the required
 * `control_images` (qwen_image_edit_plus: max_control_images = 3), and which audio families take lyrics.
 */
/** Reference slots the form shows: as many as the family may take (GET /models `max_control_images`). */
export function controlSlots(arch: Pick<ArchInfo, 'control_images'> & { max_control_images?: number }): number {
  return Math.max(arch.control_images, arch.max_control_images ?? 0);
}

export function takesLyrics(arch: Pick<ArchInfo, 'takes_lyrics'>): boolean {
  return Boolean(arch.takes_lyrics);
}

/** The pixel count presets aim at: the checkpoint's own training size where the form knows it. */
export function nativeResolution(arch: ArchInfo, modelPath: string): number {
  return BUILTIN_MODELS[modelPath]?.arch === arch.arch ? BUILTIN_MODELS[modelPath].native : arch.native_resolution;
}

/** The arch's defaults, then the checkpoint's (tiny:<arch> sample settings, a builtin model's training size). */
export function sampleDefaults(arch: ArchInfo, modelPath: string, current: SampleForm): SampleForm {
  const own = modelPath.startsWith('tiny:') ? (arch.tiny_sample ?? {}) : (BUILTIN_MODELS[modelPath]?.sample ?? {});
  const d = { ...arch.defaults, ...own };
  const slots = controlSlots(arch);
  return {
    ...current,
    width: d.width ?? current.width,
    height: d.height ?? current.height,
    num_inference_steps: d.num_inference_steps ?? current.num_inference_steps,
    guidance_scale: d.guidance_scale ?? current.guidance_scale,
    num_frames: d.num_frames ?? current.num_frames,
    fps: d.fps ?? current.fps,
    duration_s: d.duration_s ?? current.duration_s,
    output_ext: d.output_ext && arch.output_exts.includes(d.output_ext) ? d.output_ext : arch.output_exts[0],
    // a reference picked for one edit family still fits another; a family without references drops them
    ctrl_imgs: current.ctrl_imgs.slice(0, slots),
    speed: speedFor(arch, current.speed),
    // a sampler picked for one family stays where the next lists it too (Euler on SDXL, then on Flux)
    sampler: samplerFor(arch, current.sampler),
    scheduler: scheduleFor(arch, samplerFor(arch, current.sampler), current.scheduler),
  };
}

/** What A1111 shows for each schedule type the engine takes (toolkit/samplers.py SCHEDULE_LABELS). */
export const SCHEDULE_LABELS: Record<string, string> = {
  default: 'Automatic',
  karras: 'Karras',
  exponential: 'Exponential',
  beta: 'Beta',
  simple: 'Simple',
};

/** The family's samplers ('' first: the checkpoint's own scheduler, which needs no swap). */
export function samplersOf(arch: Pick<ArchInfo, 'samplers'> | undefined): SamplerInfo[] {
  return arch?.samplers ?? [];
}

/** ``sampler`` where the family lists it (a name restored from another family's file may not be), else ''. */
export function samplerFor(arch: Pick<ArchInfo, 'samplers'> | undefined, sampler: string | undefined): string {
  return sampler && samplersOf(arch).some((s) => s.name === sampler) ? sampler : '';
}

/** The schedule types of the chosen sampler (none chosen: those of the family's default, as the engine checks). */
export function schedulesOf(arch: Pick<ArchInfo, 'samplers'> | undefined, sampler: string | undefined): string[] {
  const listed = samplersOf(arch);
  const chosen = listed.find((s) => s.name === sampler) ?? listed[0];
  return chosen?.schedules ?? ['default'];
}

/** ``scheduler`` where the chosen sampler takes it, else 'default'. */
export function scheduleFor(arch: Pick<ArchInfo, 'samplers'> | undefined, sampler: string | undefined, scheduler: string | undefined): string {
  return scheduler && schedulesOf(arch, sampler).includes(scheduler) ? scheduler : 'default';
}

/** Nearest multiple of the arch's divisibility, at least one step of it. */
export function snap(value: number, divisibility: number): number {
  const d = Math.max(1, divisibility);
  return Math.max(d, Math.round(value / d) * d);
}

const CONTROL_KEYS = ['ctrl_img', 'ctrl_img_2', 'ctrl_img_3'];

/** The POST /generate body: only the fields the arch's modality uses. `mask`: the painted mask's asset id. */
export function generateBody(arch: ArchInfo, model: ModelForm, s: SampleForm, stream: StreamForm, mask?: string | null) {
  const sample: Record<string, unknown> = {
    prompt: s.prompt,
    negative_prompt: s.negative_prompt,
    num_inference_steps: s.num_inference_steps,
    guidance_scale: s.guidance_scale,
    seed: s.seed,
    output_ext: s.output_ext,
  };
  if (arch.modality !== 'audio') Object.assign(sample, { width: s.width, height: s.height });
  if (arch.modality === 'video') Object.assign(sample, { num_frames: s.num_frames, fps: s.fps });
  if (arch.modality === 'audio') sample.duration_s = s.duration_s;
  if (takesLyrics(arch) && s.lyrics.trim()) sample.lyrics = s.lyrics;
  // the engine reads the references in order: an emptied first slot must not leave ctrl_img unset
  s.ctrl_imgs.filter((c): c is ControlRef => Boolean(c)).slice(0, CONTROL_KEYS.length).forEach((c, i) => (sample[CONTROL_KEYS[i]] = c.ref));
  Object.assign(sample, startFields(arch, s, mask), videoStartFields(arch, s));
  if (s.batch_count > 1) sample.batch_count = s.batch_count;
  if (s.speed && s.speed !== 'lossless') sample.speed = s.speed;
  const sampler = samplerFor(arch, s.sampler);
  if (sampler) sample.sampler = sampler;
  const schedule = scheduleFor(arch, sampler, s.scheduler);
  if (schedule !== 'default') sample.scheduler = schedule;
  return {
    model: {
      arch: model.arch,
      name_or_path: model.name_or_path,
      dtype: model.dtype,
      ...(model.quantize ? { quantize: true } : {}),
      ...(model.low_vram ? { low_vram: true } : {}),
      ...(model.loras.length ? { loras: model.loras.map((l) => ({ path: l.path, multiplier: l.multiplier })) } : {}),
    },
    sample,
    // video: at most 16 latent frames per preview keeps each latent frame small on the wire
    stream: { latents: stream.latents, every_n_steps: stream.every_n_steps, max_frames: arch.modality === 'video' ? 16 : 0 },
  };
}
