/**
 * Settings to put back into the form: from a gallery entry's sidecar config, or from a file's embedded info (the
 * engine's `aitk` request JSON when present, else the A1111 `parameters` text every peer writes). LoRAs come
 * back as picked LoRAs from a config, as `<lora:name:0.8>` prompt tags from a `parameters` text.
 */
import type { EmbeddedInfo } from '@/utils/imageInfo';
import { parametersSettings } from '@/utils/parameters';
import type { LoraChoice, Speed } from '@/utils/types';
import { SPEED_LABELS, type SampleForm } from './formState';
import { startFromConfig } from './fromImage';

export interface Restored {
  arch?: string;
  name_or_path?: string;
  loras?: LoraChoice[];
  sample: Partial<Omit<SampleForm, 'ctrl_imgs' | 'init_image' | 'init_video'>>;
  /** server paths (or asset ids) of the references, in order */
  controls: string[];
  /** the start image's server path (the form checks that it still exists before it shows it) */
  init_image?: string;
  /** the start video's server path, checked the same way */
  init_video?: string;
  source: 'config' | 'parameters';
}

interface ConfigLike {
  model?: { arch?: string; name_or_path?: string; lora_path?: string | null; lora_multiplier?: number; loras?: { path: string; multiplier: number }[] };
  sample?: Record<string, unknown>;
  /** every LoRA applied, with the name a `<lora:…>` tag finds it by (the engine's resolved config) */
  loras?: { name?: string; path: string; multiplier: number; hash?: string | null }[];
}

const NUMBER_FIELDS = ['width', 'height', 'num_inference_steps', 'guidance_scale', 'seed', 'num_frames', 'fps', 'duration_s'] as const;
const TEXT_FIELDS = ['prompt', 'negative_prompt', 'output_ext', 'lyrics', 'sampler', 'scheduler'] as const;

/** From a resolved request ({model, sample}): the sidecar's `config` or a PNG's `aitk` chunk. */
export function fromConfig(cfg: ConfigLike): Restored {
  const s = cfg.sample ?? {};
  const sample: Restored['sample'] = {};
  for (const k of NUMBER_FIELDS) if (typeof s[k] === 'number' && Number.isFinite(s[k])) sample[k] = s[k] as number;
  for (const k of TEXT_FIELDS) if (typeof s[k] === 'string') sample[k] = s[k] as string;
  if (typeof s.speed === 'string' && s.speed in SPEED_LABELS) sample.speed = s.speed as Speed;
  // the engine resolves ctrl_img into ctrl_img_1 (GenerateImageConfig.__post_init__); either may be present
  const first = s.ctrl_img_1 ?? s.ctrl_img;
  const controls = [first, s.ctrl_img_2, s.ctrl_img_3].filter((c): c is string => typeof c === 'string' && c.length > 0);
  // strength, mask blur and outpaint margins; the start image by its path (the mask is not put back: the file
  // names the asset, which the engine may have evicted, and a mask is quick to paint again)
  const { init_image, init_video, ...start } = startFromConfig(s);
  Object.assign(sample, start);
  const out: Restored = { sample, controls, source: 'config', ...(init_image ? { init_image } : {}), ...(init_video ? { init_video } : {}) };
  const m = cfg.model;
  if (m?.arch) out.arch = m.arch;
  if (m?.name_or_path) out.name_or_path = m.name_or_path;
  if (m) {
    // the engine's config holds every LoRA applied, those its prompt's <lora:…> tags named included (its prompt is
    // the text encoded, without the tags): they come back as picked LoRAs, labelled with the tag's name
    const names = new Map((cfg.loras ?? []).map((l) => [l.path, l.name]));
    const all = [...(m.lora_path ? [{ path: m.lora_path, multiplier: m.lora_multiplier ?? 1 }] : []), ...(m.loras ?? [])];
    out.loras = all.map((l) => (names.get(l.path) ? { ...l, label: names.get(l.path) } : l));
  }
  return out;
}

/** From a file's embedded texts; null when it carries no settings this form can use. */
export function fromEmbedded(info: EmbeddedInfo): Restored | null {
  if (info.aitk) {
    try {
      const cfg = JSON.parse(info.aitk);
      if (cfg && typeof cfg === 'object' && cfg.sample) return fromConfig(cfg);
    } catch {
      /* a damaged chunk: the parameters text still says most of it */
    }
  }
  if (!info.parameters) return null;
  // A1111's text names LoRAs as <lora:name:0.8> on its prompt line (with `Lora hashes`): the tags stay in the
  // prompt, where the engine finds each by name in its LoRA library, as A1111 and Forge do
  const p = parametersSettings(info.parameters);
  const { model, arch, ...sample } = p;
  return { ...(arch ? { arch } : {}), ...(model ? { name_or_path: model } : {}), sample, controls: [], source: 'parameters' };
}
