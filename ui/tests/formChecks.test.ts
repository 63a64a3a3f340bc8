import { describe, expect, it } from 'vitest';
import { blockReason, fieldErrors } from '../src/components/generate/formChecks';
import { DEFAULT_SAMPLE } from '../src/components/generate/formState';
import type { ArchInfo } from '../src/utils/types';

const arch = (over: Partial<ArchInfo>) => ({ arch: 'sd1', modality: 'image', control_images: 0, divisibility: 8, output_exts: ['png'], ...over }) as ArchInfo;
const sd1 = arch({});
const ok = { online: true, arch: sd1, busy: false, uploading: false, sample: { ...DEFAULT_SAMPLE, seed: 1 }, modelPath: 'tiny:sd1' };
const ref = { ref: 'abc', preview: '', info: '' };

describe('fieldErrors', () => {
  it('an emptied field is an error, not the default', () => {
    expect(fieldErrors(sd1, { ...DEFAULT_SAMPLE, num_inference_steps: NaN })).toEqual({ num_inference_steps: 'enter a number' });
  });

  it('checks the engine’s limits and whole numbers, only for the fields the modality uses', () => {
    const s = { ...DEFAULT_SAMPLE, width: 8, height: 5000, guidance_scale: 101, num_inference_steps: 2.5, batch_count: 17, fps: NaN };
    expect(fieldErrors(sd1, s)).toEqual({
      width: 'at least 16', height: 'at most 4096', guidance_scale: 'at most 100', num_inference_steps: 'must be a whole number',
      batch_count: 'at most 16',
    });
    const audio = arch({ modality: 'audio' });
    expect(fieldErrors(audio, { ...DEFAULT_SAMPLE, width: NaN, duration_s: 0 })).toEqual({ duration_s: 'must be more than 0' });
  });

  it('takes the family’s fewest steps from GET /models', () => {
    expect(fieldErrors(arch({ min_steps: 2 }), { ...DEFAULT_SAMPLE, num_inference_steps: 1 })).toEqual({ num_inference_steps: 'at least 2' });
  });
});

describe('blockReason', () => {
  it('is null when the form can go', () => {
    expect(blockReason(ok)).toBeNull();
  });

  it('names the first thing in the way', () => {
    expect(blockReason({ ...ok, online: false })).toBe('Start an engine first');
    expect(blockReason({ ...ok, sample: { ...ok.sample, prompt: '  ' } })).toBe('Needs a prompt');
    expect(blockReason({ ...ok, modelPath: '' })).toBe('Needs a model');
    expect(blockReason({ ...ok, sample: { ...ok.sample, num_inference_steps: NaN } })).toBe('Steps: enter a number');
  });

  it('asks for the control images an edit family requires, counting filled slots only', () => {
    const edit = arch({ arch: 'qwen_image_edit_plus', control_images: 1 });
    expect(blockReason({ ...ok, arch: edit })).toBe('Needs a control image');
    expect(blockReason({ ...ok, arch: edit, sample: { ...ok.sample, ctrl_imgs: [null, null] } })).toBe('Needs a control image');
    expect(blockReason({ ...ok, arch: edit, sample: { ...ok.sample, ctrl_imgs: [null, ref] } })).toBeNull();
    expect(blockReason({ ...ok, arch: edit, uploading: true })).toBe('Waiting for the image upload');
  });
});
