/** Shapes shared by pages: Job rows as the API returns them, and what the engine's /models and /health send. */

export interface Job {
  id: string;
  name: string;
  gpu_ids: string;
  job_config: string;
  created_at: string;
  updated_at: string;
  status: string;
  stop: boolean;
  return_to_queue: boolean;
  step: number;
  total_steps: number | null;
  info: string;
  speed_string: string;
  queue_position: number;
  pid: number | null;
  job_type: string;
  engine_ready?: boolean; // inference jobs: engine.json is written (GET /api/jobs)
  job_ref: string | null;
}

export interface Queue {
  id: number;
  gpu_ids: string;
  is_running: boolean;
}

export interface ArchDefaults {
  width?: number;
  height?: number;
  num_inference_steps?: number;
  guidance_scale?: number;
  num_frames?: number;
  fps?: number;
  duration_s?: number;
  output_ext?: string;
}

export type Speed = 'lossless' | 'fp8' | 'cache' | 'fast';

/** AI Toolkit's arch groups (ui/src/app/jobs/new/options.tsx), in the order the picker shows them. */
export type ArchGroup = 'image' | 'instruction' | 'video' | 'audio' | 'experimental';

/** One `arch:tag` variant of a family (GET /models `tags`): its checkpoint and its whole sample defaults. */
export interface ArchTag {
  hub_id: string;
  description: string;
  defaults: ArchDefaults;
  /** a denoiser-only checkpoint's other components (the engine fills extras_name_or_path with it) */
  extras_hub_id?: string;
}

export interface ArchInfo {
  arch: string;
  modality: 'image' | 'video' | 'audio';
  description?: string;
  control_images: number;
  /** optional references beyond the required ones (not sent by every engine version) */
  max_control_images?: number;
  takes_lyrics?: boolean;
  divisibility: number;
  min_steps?: number;
  native_resolution: number;
  defaults: ArchDefaults;
  output_exts: string[];
  tiny_sample?: ArchDefaults;
  /** the engine's speed tiers this family offers (`sample.speed`; not sent by older engines) */
  speeds?: Speed[];
  /** the arch picker's group, published checkpoint and `arch:tag` variants (not sent by older engines) */
  group?: ArchGroup;
  hub_id?: string;
  tags?: Record<string, ArchTag>;
  latent: { layout: string; channels: number; rgb_factors: number[][] | null; rgb_bias: number[] | null };
  /** A1111-named samplers, the family's default first, with the schedule types each takes (older engines: none) */
  samplers?: SamplerInfo[];
  default_sampler?: string;
  /** what the family can start from (GET /models `tasks`; older engines: none, text-to-image only) */
  tasks?: Task[];
}

/**
 * txt2img; img2img: `sample.init_image` with `strength`; inpaint: with `mask` or `outpaint` too; vid2vid:
 * `sample.init_video` with `strength` (Wan, LTX-Video: the form's Start video panel)
 */
export type Task = 'txt2img' | 'img2img' | 'inpaint' | 'vid2vid';

export interface SamplerInfo {
  name: string;
  schedules: string[];
}

export interface EngineHealth {
  ok: boolean;
  busy: boolean;
  queue: number;
  device?: string;
  active: { arch: string; name_or_path: string } | null;
  counters?: Record<string, number>;
  vram?: { used: number; total: number; allocated?: number; reserved?: number; peak_allocated?: number; budget?: number | null } | null;
  warm_up_s?: number | null;
  /** bytes of the models' components the engine holds (its pool) */
  resident_bytes?: number;
  max_queue?: number;
}

/** An upscaler file under the engine's model roots (GET /upscalers), for an upscale's `model`. */
export interface UpscalerFile {
  name: string;
  path: string;
  bytes: number;
}

export interface OutputEntry {
  name: string;
  path: string;
  url: string;
  bytes: number;
  mtime: number;
  /** marked in the gallery (kept in the outputs folder's .favourites.json: server/favourites.ts) */
  favourite?: boolean;
  meta: {
    request_id?: string;
    seed?: number;
    config?: {
      model?: {
        arch?: string;
        name_or_path?: string;
        lora_path?: string | null;
        lora_multiplier?: number;
        loras?: { path: string; multiplier: number }[];
      };
      sample?: Record<string, unknown>;
    };
    result?: { kind?: string; width?: number; height?: number; frames?: number; fps?: number; duration_s?: number };
    timings?: Record<string, number>;
    /** a compare grid's cell: the grid and the page that shows it (the gallery lists the page in its place) */
    grid_cell?: { grid: string; cell: number; page: string };
    /** a compare grid's page: its axes, cells and replay body (grid_image.py) */
    grid?: Record<string, unknown>;
  } | null;
}

/** One file of GET /loras: job, step and family as AI Toolkit recorded them (null when unknown). */
export interface LoraEntry {
  path: string;
  name: string;
  root: string;
  bytes: number;
  mtime: number;
  job: string | null;
  step: number | null;
  arch: string | null;
  base_model: string | null;
}

/** One entry of GET /checkpoints: a diffusers folder (with its pipeline class) or a single-file checkpoint. */
export interface CheckpointEntry {
  path: string;
  name: string;
  kind: 'diffusers' | 'single_file';
  root: string;
  pipeline?: string | null;
  bytes?: number;
}

/** A LoRA chosen in the form: sent as `model.loras[]` ({path, multiplier}). */
export interface LoraChoice {
  path: string;
  multiplier: number;
  label?: string;
}

export const ACTIVE_STATUSES = ['running', 'queued', 'stopping'];

/** AI Toolkit derives `stopping`; it is never stored. */
export function displayStatus(job: Pick<Job, 'status' | 'stop'>): string {
  return job.stop && job.status === 'running' ? 'stopping' : job.status;
}

export function isInferenceJob(job: Pick<Job, 'job_type' | 'job_config'>): boolean {
  if (job.job_type === 'inference') return true;
  try {
    return JSON.parse(job.job_config)?.config?.process?.[0]?.type === 'InferenceEngine';
  } catch {
    return false;
  }
}
