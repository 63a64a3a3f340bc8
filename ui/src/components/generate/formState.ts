/** The generate form: values, arch defaults and size snapping (the engine snaps too and reports it). */
import type { ArchInfo, LoraChoice } from '@/utils/types';

export interface ModelForm {
  arch: string;
  name_or_path: string;
  dtype: string;
  loras: LoraChoice[];
}

export interface SampleForm {
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
  ctrl_img: string;
}

export interface StreamForm {
  latents: 'raw' | 'x0' | 'none';
  every_n_steps: number;
}

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
  ctrl_img: '',
};

/** The arch's defaults (and its tiny-checkpoint sample settings when the model is `tiny:<arch>`). */
export function sampleDefaults(arch: ArchInfo, modelPath: string, current: SampleForm): SampleForm {
  const tiny = modelPath.startsWith('tiny:') ? (arch.tiny_sample ?? {}) : {};
  const d = { ...arch.defaults, ...tiny };
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
    ctrl_img: '',
  };
}

/** Nearest multiple of the arch's divisibility, at least one step of it. */
export function snap(value: number, divisibility: number): number {
  const d = Math.max(1, divisibility);
  return Math.max(d, Math.round(value / d) * d);
}

/** The POST /generate body: only the fields the arch's modality uses. */
export function generateBody(arch: ArchInfo, model: ModelForm, s: SampleForm, stream: StreamForm) {
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
  if (s.ctrl_img) sample.ctrl_img = s.ctrl_img;
  return {
    model: {
      arch: model.arch,
      name_or_path: model.name_or_path,
      dtype: model.dtype,
      ...(model.loras.length ? { loras: model.loras.map((l) => ({ path: l.path, multiplier: l.multiplier })) } : {}),
    },
    sample,
    // video: at most 16 latent frames per preview keeps each latent frame small on the wire
    stream: { latents: stream.latents, every_n_steps: stream.every_n_steps, max_frames: arch.modality === 'video' ? 16 : 0 },
  };
}
