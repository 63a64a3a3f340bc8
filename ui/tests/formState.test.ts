import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL, DEFAULT_SAMPLE, controlSlots, generateBody, sampleDefaults } from '../src/components/generate/formState';
import { loraLabel } from '../src/components/generate/LoraPicker';
import type { ArchInfo, LoraEntry } from '../src/utils/types';

const sd1 = { arch: 'sd1', modality: 'image', divisibility: 8, output_exts: ['png'] } as unknown as ArchInfo;
const sample = {
  prompt: 'p', negative_prompt: '', width: 64, height: 64, num_inference_steps: 2, guidance_scale: 7, seed: 1,
  num_frames: 1, fps: 8, duration_s: 1, output_ext: 'png', lyrics: '', batch_count: 1, ctrl_imgs: [],
};

describe('generateBody', () => {
  it('sends chosen LoRAs as model.loras with their multipliers, without the picker labels', () => {
    const model = { ...DEFAULT_MODEL, arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float32', loras: [
      { path: '/t/a/a.safetensors', multiplier: 0.8, label: 'a · step 250' }, { path: '/t/b.safetensors', multiplier: 1 }] };
    const body = generateBody(sd1, model, sample, { latents: 'x0', every_n_steps: 1 });
    expect(body.model.loras).toEqual([{ path: '/t/a/a.safetensors', multiplier: 0.8 }, { path: '/t/b.safetensors', multiplier: 1 }]);
  });

  it('leaves loras out when none is chosen', () => {
    const body = generateBody(sd1, { ...DEFAULT_MODEL, dtype: 'float32' }, sample,
      { latents: 'x0', every_n_steps: 1 });
    expect('loras' in body.model).toBe(false);
  });
});

const stream = { latents: 'x0', every_n_steps: 1 } as const;
const ref = (id: string) => ({ ref: id, preview: '', info: '' });

describe('generateBody: the fields the form adds', () => {
  const plus = { ...sd1, arch: 'qwen_image_edit_plus', control_images: 1, max_control_images: 3 } as ArchInfo;

  it('sends filled reference slots in order as ctrl_img, ctrl_img_2, ctrl_img_3', () => {
    const body = generateBody(plus, DEFAULT_MODEL, { ...sample, ctrl_imgs: [null, ref('b'), ref('c')] }, stream);
    expect(body.sample).toMatchObject({ ctrl_img: 'b', ctrl_img_2: 'c' });
    expect('ctrl_img_3' in body.sample).toBe(false);
    expect(controlSlots(plus)).toBe(3);
    expect(controlSlots({ control_images: 1, max_control_images: 1 })).toBe(1);
    expect(controlSlots({ control_images: 0 })).toBe(0);
  });

  it('sends batch_count only above 1, quantize/low_vram only when on, lyrics only to a family that takes them', () => {
    const ace = { ...sd1, arch: 'ace_step_15', modality: 'audio', takes_lyrics: true } as ArchInfo;
    const plain = generateBody(sd1, DEFAULT_MODEL, { ...sample, lyrics: 'la la' }, stream);
    expect(plain.sample).not.toHaveProperty('batch_count');
    expect(plain.sample).not.toHaveProperty('lyrics');
    expect(plain.model).not.toHaveProperty('quantize');
    const more = generateBody(sd1, { ...DEFAULT_MODEL, quantize: true, low_vram: true }, { ...sample, batch_count: 4 }, stream);
    expect(more.sample.batch_count).toBe(4);
    expect(more.model).toMatchObject({ quantize: true, low_vram: true });
    expect(generateBody(ace, DEFAULT_MODEL, { ...sample, lyrics: '[verse]\nla la' }, stream).sample.lyrics).toBe('[verse]\nla la');
  });
});

describe('sampleDefaults', () => {
  const a = { ...sd1, defaults: { width: 512, height: 512, num_inference_steps: 25 }, tiny_sample: { width: 64, height: 64 } } as unknown as ArchInfo;
  it('uses builtin:shapes’ training settings, tiny:<arch>’s test settings, else the arch’s', () => {
    expect(sampleDefaults(a, 'builtin:shapes', DEFAULT_SAMPLE)).toMatchObject({ width: 64, height: 64, num_inference_steps: 20, guidance_scale: 5 });
    expect(sampleDefaults(a, 'tiny:sd1', DEFAULT_SAMPLE)).toMatchObject({ width: 64, num_inference_steps: 25 });
    expect(sampleDefaults(a, 'runwayml/sd15', DEFAULT_SAMPLE)).toMatchObject({ width: 512, num_inference_steps: 25 });
  });
  it('keeps references only as far as the new family takes them', () => {
    const withRefs = { ...DEFAULT_SAMPLE, ctrl_imgs: [ref('a'), ref('b')] };
    expect(sampleDefaults({ ...a, control_images: 1 } as ArchInfo, 'tiny:x', withRefs).ctrl_imgs).toEqual([ref('a')]);
    expect(sampleDefaults(a, 'tiny:x', withRefs).ctrl_imgs).toEqual([]);
  });
});

describe('loraLabel', () => {
  const entry: LoraEntry = { path: '/t/run/run_000000250.safetensors', name: 'run_000000250.safetensors', root: '/t', bytes: 1,
    mtime: 0, job: 'run', step: 250, arch: 'sdxl', base_model: null };
  it('names the training job, the step and the family AI Toolkit recorded', () => {
    expect(loraLabel(entry)).toBe('run · step 250 · sdxl');
    expect(loraLabel({ ...entry, job: null, step: null, arch: null })).toBe('run_000000250.safetensors');
  });
});

describe('speed tiers', () => {
  const flux = { ...sd1, arch: 'flux', speeds: ['lossless', 'fp8', 'cache', 'fast'] } as ArchInfo;

  it('sends sample.speed only when a tier is chosen', () => {
    expect('speed' in generateBody(flux, DEFAULT_MODEL, { ...sample, speed: 'lossless' }, stream).sample).toBe(false);
    expect(generateBody(flux, DEFAULT_MODEL, { ...sample, speed: 'fast' }, stream).sample.speed).toBe('fast');
  });

  it('falls back to lossless on a family without the chosen tier', () => {
    const sdxl = { ...sd1, arch: 'sdxl', defaults: {}, speeds: ['lossless', 'fp8'] } as unknown as ArchInfo;
    expect(sampleDefaults(sdxl, 'x', { ...sample, speed: 'cache' }).speed).toBe('lossless');
    expect(sampleDefaults(sdxl, 'x', { ...sample, speed: 'fp8' }).speed).toBe('fp8');
    expect(sampleDefaults({ ...sdxl, speeds: undefined }, 'x', { ...sample, speed: 'fp8' }).speed).toBe('lossless');
  });
});

describe('speed tiers: restoring', () => {
  it('puts a known tier back from a sidecar and ignores anything else', async () => {
    const { fromConfig } = await import('../src/components/generate/restore');
    expect(fromConfig({ sample: { prompt: 'p', speed: 'cache' } }).sample.speed).toBe('cache');
    expect('speed' in fromConfig({ sample: { prompt: 'p', speed: 'warp' } }).sample).toBe(false);
  });
});
