/**
 * The form as it was left, in localStorage: the last arch, the prompt, and per arch its model path and
 * settings, so a reload comes back to the same form and switching arch comes back to that arch's settings.
 * Control images are not kept: their previews are object URLs that die with the page, and assets get evicted.
 */
import type { LoraChoice, Speed } from '@/utils/types';
import { type ModelForm, type SampleForm, SPEED_LABELS } from './formState';

export const MEMORY_KEY = 'aitk.generate.form.v1';

type Storage = Pick<globalThis.Storage, 'getItem' | 'setItem'>;

export type ArchSample = Omit<SampleForm, 'prompt' | 'negative_prompt' | 'ctrl_imgs'>;
export interface ArchMemory {
  model: Omit<ModelForm, 'arch'>;
  sample: ArchSample;
}
export interface FormMemory {
  arch: string;
  prompt: string;
  negative_prompt: string;
  byArch: Record<string, ArchMemory>;
}

const NUMBERS = ['width', 'height', 'num_inference_steps', 'guidance_scale', 'seed', 'num_frames', 'fps', 'duration_s', 'batch_count'] as const;

export function remember(memory: FormMemory | null, model: ModelForm, sample: SampleForm): FormMemory {
  const { arch, ...modelRest } = model;
  // the start image is not kept either, for the same reasons
  const { prompt, negative_prompt, ctrl_imgs: _controls, init_image: _start, init_video: _video, ...rest } = sample;
  return { arch, prompt, negative_prompt, byArch: { ...memory?.byArch, [arch]: { model: { ...modelRest, loras: [...model.loras] }, sample: rest } } };
}

function isLora(x: unknown): x is LoraChoice {
  const l = x as LoraChoice;
  return Boolean(l) && typeof l.path === 'string' && typeof l.multiplier === 'number';
}

/** One arch's entry, with anything malformed dropped so it cannot poison the form (storage is user-editable). */
function cleanArch(raw: unknown): ArchMemory | null {
  const r = raw as { model?: Record<string, unknown>; sample?: Record<string, unknown> } | null;
  if (!r?.model || !r.sample || typeof r.model.name_or_path !== 'string') return null;
  const sample: Partial<ArchSample> = {};
  // an empty field is stored as null (JSON has no NaN) and comes back empty, as it was left
  for (const k of NUMBERS) {
    const v = r.sample[k];
    if (typeof v === 'number' || v === null) sample[k] = v === null ? NaN : v;
  }
  if (typeof r.sample.output_ext === 'string') sample.output_ext = r.sample.output_ext;
  if (typeof r.sample.lyrics === 'string') sample.lyrics = r.sample.lyrics;
  if (typeof r.sample.speed === 'string' && r.sample.speed in SPEED_LABELS) sample.speed = r.sample.speed as Speed;
  return {
    model: {
      name_or_path: r.model.name_or_path,
      dtype: typeof r.model.dtype === 'string' ? r.model.dtype : 'float16',
      loras: Array.isArray(r.model.loras) ? r.model.loras.filter(isLora) : [],
      quantize: r.model.quantize === true,
      low_vram: r.model.low_vram === true,
    },
    sample: sample as ArchSample,
  };
}

export function loadMemory(storage: Storage): FormMemory | null {
  try {
    const raw = JSON.parse(storage.getItem(MEMORY_KEY) ?? 'null');
    if (!raw || typeof raw.arch !== 'string') return null;
    const byArch: Record<string, ArchMemory> = {};
    for (const [arch, entry] of Object.entries(raw.byArch ?? {})) {
      const clean = cleanArch(entry);
      if (clean) byArch[arch] = clean;
    }
    return {
      arch: raw.arch,
      prompt: typeof raw.prompt === 'string' ? raw.prompt : '',
      negative_prompt: typeof raw.negative_prompt === 'string' ? raw.negative_prompt : '',
      byArch,
    };
  } catch {
    return null;
  }
}

export function saveMemory(storage: Storage, memory: FormMemory) {
  storage.setItem(MEMORY_KEY, JSON.stringify(memory));
}

/** The form for `arch` as remembered, over `base` (defaults fill what an older entry lacks). */
export function recall(memory: FormMemory | null, arch: string, base: { model: ModelForm; sample: SampleForm }) {
  const entry = memory?.byArch[arch];
  if (!entry) return null;
  return { model: { ...base.model, ...entry.model, arch }, sample: { ...base.sample, ...entry.sample } };
}
