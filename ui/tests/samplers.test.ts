import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL, generateBody, sampleDefaults, samplerFor, scheduleFor, schedulesOf } from '../src/components/generate/formState';
import { fromEmbedded } from '../src/components/generate/restore';
import { parametersSettings } from '../src/utils/parameters';
import type { ArchInfo } from '../src/utils/types';

const discrete = [
  { name: 'Euler', schedules: ['default', 'karras', 'exponential', 'beta', 'simple'] },
  { name: 'Euler a', schedules: ['default', 'simple'] },
  { name: 'DPM++ 2M', schedules: ['default', 'karras', 'exponential', 'beta', 'simple'] },
];
const flow = [{ name: 'Euler', schedules: ['default', 'karras', 'exponential', 'beta'] }, { name: 'Heun', schedules: ['default'] }];
const sd1 = { arch: 'sd1', modality: 'image', divisibility: 8, output_exts: ['png'], defaults: {}, samplers: discrete, default_sampler: 'Euler' } as unknown as ArchInfo;
const flux = { arch: 'flux', modality: 'image', divisibility: 16, output_exts: ['png'], defaults: {}, samplers: flow, default_sampler: 'Euler' } as unknown as ArchInfo;
const old = { arch: 'sd1', modality: 'image', divisibility: 8, output_exts: ['png'], defaults: {} } as unknown as ArchInfo;
const sample = {
  prompt: 'p', negative_prompt: '', width: 64, height: 64, num_inference_steps: 2, guidance_scale: 7, seed: 1,
  num_frames: 1, fps: 8, duration_s: 1, output_ext: 'png', lyrics: '', batch_count: 1, ctrl_imgs: [],
};
const stream = { latents: 'x0', every_n_steps: 1 } as const;
const body = (arch: ArchInfo, s: object) => generateBody(arch, { ...DEFAULT_MODEL, dtype: 'float32' }, { ...sample, ...s }, stream).sample;

describe('sampler and schedule type in the form', () => {
  it('sends what the family lists, and nothing for the model own scheduler on its own schedule', () => {
    expect(body(sd1, { sampler: 'DPM++ 2M', scheduler: 'karras' })).toMatchObject({ sampler: 'DPM++ 2M', scheduler: 'karras' });
    const plain = body(sd1, { sampler: '', scheduler: 'default' });
    expect('sampler' in plain || 'scheduler' in plain).toBe(false);
    expect(body(sd1, { sampler: '', scheduler: 'karras' })).toMatchObject({ scheduler: 'karras' }); // the default's
  });

  it('drops a sampler or schedule the family does not take instead of sending a request the engine refuses', () => {
    expect('sampler' in body(flux, { sampler: 'DPM++ 2M' })).toBe(false);
    expect('scheduler' in body(sd1, { sampler: 'Euler a', scheduler: 'karras' })).toBe(false);
    expect('sampler' in body(old, { sampler: 'Euler' })).toBe(false); // an engine without samplers
  });

  it('lists the chosen sampler schedules, the default one when none is chosen', () => {
    expect(schedulesOf(sd1, 'Euler a')).toEqual(['default', 'simple']);
    expect(schedulesOf(flux, '')).toEqual(['default', 'karras', 'exponential', 'beta']);
    expect(schedulesOf(old, '')).toEqual(['default']);
    expect(samplerFor(flux, 'Heun')).toBe('Heun');
    expect(scheduleFor(flux, 'Heun', 'karras')).toBe('default');
  });

  it('keeps a pick across a family change where the new family lists it', () => {
    const picked = { ...sample, sampler: 'Euler', scheduler: 'simple' };
    expect(sampleDefaults(flux, 'tiny:flux', picked)).toMatchObject({ sampler: 'Euler', scheduler: 'default' });
    expect(sampleDefaults(flux, 'tiny:flux', { ...picked, sampler: 'Euler a' })).toMatchObject({ sampler: '' });
  });
});

describe('restoring sampler and schedule type', () => {
  it('reads them from A1111 parameters text, its labels made the engine schedule types', () => {
    const text = 'a fox\nSteps: 20, Sampler: DPM++ 2M SDE, Schedule type: Karras, CFG scale: 7, Seed: 3';
    expect(parametersSettings(text)).toMatchObject({ sampler: 'DPM++ 2M SDE', scheduler: 'karras' });
    expect(parametersSettings('a fox\nSteps: 20, Sampler: Euler, Seed: 3').scheduler).toBeUndefined();
    expect(parametersSettings('a fox\nSteps: 20, Sampler: Euler, Schedule type: SGM Uniform, Seed: 3').scheduler).toBe('simple');
  });

  it('reads them from the engine request JSON', () => {
    const aitk = JSON.stringify({ model: { arch: 'sd1' }, sample: { prompt: 'x', sampler: 'UniPC', scheduler: 'beta' } });
    expect(fromEmbedded({ aitk })?.sample).toMatchObject({ sampler: 'UniPC', scheduler: 'beta' });
  });
});
