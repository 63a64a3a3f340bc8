import { describe, expect, it } from 'vitest';
import { generateBody } from '../src/components/generate/formState';
import { loraLabel } from '../src/components/generate/LoraPicker';
import type { ArchInfo, LoraEntry } from '../src/utils/types';

const sd1 = { arch: 'sd1', modality: 'image', divisibility: 8, output_exts: ['png'] } as unknown as ArchInfo;
const sample = {
  prompt: 'p', negative_prompt: '', width: 64, height: 64, num_inference_steps: 2, guidance_scale: 7, seed: 1,
  num_frames: 1, fps: 8, duration_s: 1, output_ext: 'png', ctrl_img: '',
};

describe('generateBody', () => {
  it('sends chosen LoRAs as model.loras with their multipliers, without the picker labels', () => {
    const model = { arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float32', loras: [
      { path: '/t/a/a.safetensors', multiplier: 0.8, label: 'a · step 250' }, { path: '/t/b.safetensors', multiplier: 1 }] };
    const body = generateBody(sd1, model, sample, { latents: 'x0', every_n_steps: 1 });
    expect(body.model.loras).toEqual([{ path: '/t/a/a.safetensors', multiplier: 0.8 }, { path: '/t/b.safetensors', multiplier: 1 }]);
  });

  it('leaves loras out when none is chosen', () => {
    const body = generateBody(sd1, { arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float32', loras: [] }, sample,
      { latents: 'x0', every_n_steps: 1 });
    expect('loras' in body.model).toBe(false);
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
