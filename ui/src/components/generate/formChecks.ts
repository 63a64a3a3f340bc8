/**
 * Why the form cannot be sent as it is: a field's own problem (shown beside it) and the one reason the Generate
 * button gives. An empty number field is a problem, not "use the default": a cleared Steps field used to run 25.
 */
import type { ArchInfo } from '@/utils/types';
import { type SampleForm, controlSlots } from './formState';

export type NumberKey = 'width' | 'height' | 'num_inference_steps' | 'guidance_scale' | 'seed' | 'num_frames' | 'fps' | 'duration_s' | 'batch_count';

interface Rule {
  label: string;
  min: number;
  max: number;
  integer: boolean;
  /** the min is exclusive (duration 0 is no audio) */
  above?: boolean;
}

/** The engine's SampleBody limits (extensions_built_in/inference_engine/bodies.py). */
function rules(arch: ArchInfo): Partial<Record<NumberKey, Rule>> {
  const r: Partial<Record<NumberKey, Rule>> = {
    num_inference_steps: { label: 'Steps', min: Math.max(1, arch.min_steps ?? 1), max: 500, integer: true },
    guidance_scale: { label: 'CFG', min: 0, max: 100, integer: false },
    seed: { label: 'Seed', min: -1, max: 2 ** 32 - 1, integer: true },
    batch_count: { label: 'Batch count', min: 1, max: 16, integer: true },
  };
  if (arch.modality !== 'audio') {
    r.width = { label: 'Width', min: 16, max: 4096, integer: true };
    r.height = { label: 'Height', min: 16, max: 4096, integer: true };
  }
  if (arch.modality === 'video') {
    r.num_frames = { label: 'Frames', min: 1, max: 1025, integer: true };
    r.fps = { label: 'FPS', min: 1, max: 240, integer: true };
  }
  if (arch.modality === 'audio') r.duration_s = { label: 'Duration', min: 0, max: 600, integer: false, above: true };
  return r;
}

function problem(value: number, rule: Rule): string | null {
  if (!Number.isFinite(value)) return 'enter a number';
  if (rule.integer && !Number.isInteger(value)) return 'must be a whole number';
  if (rule.above ? value <= rule.min : value < rule.min) return rule.above ? `must be more than ${rule.min}` : `at least ${rule.min}`;
  if (value > rule.max) return `at most ${rule.max}`;
  return null;
}

/** Each number field the arch uses that cannot be sent, with what is wrong. */
export function fieldErrors(arch: ArchInfo | undefined, sample: SampleForm): Partial<Record<NumberKey, string>> {
  if (!arch) return {};
  const out: Partial<Record<NumberKey, string>> = {};
  for (const [key, rule] of Object.entries(rules(arch)) as [NumberKey, Rule][]) {
    const p = problem(sample[key], rule);
    if (p) out[key] = p;
  }
  return out;
}

export interface BlockInput {
  online: boolean;
  arch: ArchInfo | undefined;
  busy: boolean;
  uploading: boolean;
  sample: SampleForm;
  modelPath: string;
}

/** The first thing that stops a run, as the button says it; null when Generate can go. */
export function blockReason({ online, arch, busy, uploading, sample, modelPath }: BlockInput): string | null {
  if (!online) return 'Start an engine first';
  if (!arch) return 'Waiting for the engine’s model list';
  if (busy) return null; // the button says Generating…
  if (!modelPath.trim()) return 'Needs a model';
  if (!sample.prompt.trim()) return 'Needs a prompt';
  const have = sample.ctrl_imgs.filter(Boolean).length;
  if (uploading) return 'Waiting for the image upload';
  if (have < arch.control_images) return arch.control_images > 1 ? `Needs ${arch.control_images} control images` : 'Needs a control image';
  if (have > controlSlots(arch)) return `${arch.arch} takes at most ${controlSlots(arch)} control image(s)`;
  const errors = fieldErrors(arch, sample);
  const first = Object.keys(errors)[0] as NumberKey | undefined;
  if (first) return `${rules(arch)[first]!.label}: ${errors[first]}`;
  return null;
}
