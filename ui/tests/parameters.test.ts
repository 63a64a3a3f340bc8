import { describe, expect, it } from 'vitest';
import { parseParameters, parametersSettings } from '../src/utils/parameters';

describe('parseParameters (A1111 text)', () => {
  it('splits a multi-line prompt, a multi-line negative prompt and the pairs line', () => {
    const text = 'a castle,\nat night: stars\nNegative prompt: blurry,\nugly\nSteps: 30, Sampler: DPM++ 2M, CFG scale: 7, Seed: 42, Size: 768x512, Model: sd_xl_base';
    const p = parseParameters(text);
    expect(p.prompt).toBe('a castle,\nat night: stars');
    expect(p.negative_prompt).toBe('blurry,\nugly');
    expect(p.pairs).toMatchObject({ Steps: '30', Sampler: 'DPM++ 2M', 'CFG scale': '7', Seed: '42', Size: '768x512', Model: 'sd_xl_base' });
  });

  it('unquotes quoted values that hold commas', () => {
    const p = parseParameters('cat\nSteps: 5, Lora hashes: "a: 1, b: 2", Seed: 3, Size: 64x64');
    expect(p.pairs['Lora hashes']).toBe('a: 1, b: 2');
    expect(p.pairs.Seed).toBe('3');
  });

  it('a text with no pairs line is all prompt (a colon in a prompt does not make one)', () => {
    expect(parseParameters('style: oil painting, subject: a dog')).toEqual({ prompt: 'style: oil painting, subject: a dog', negative_prompt: '', pairs: {} });
  });
});

describe('parametersSettings', () => {
  it('turns the engine’s pairs into form values', () => {
    const s = parametersSettings('a red circle\nNegative prompt: noise\nSteps: 8, CFG scale: 5, Seed: 1, Size: 64x48, Frames: 9, Model: tiny:sd1, Arch: sd1, Version: ai-toolkit inference engine');
    expect(s).toEqual({
      prompt: 'a red circle', negative_prompt: 'noise', num_inference_steps: 8, guidance_scale: 5, seed: 1, width: 64, height: 48,
      num_frames: 9, model: 'tiny:sd1', arch: 'sd1',
    });
  });

  it('leaves out values it cannot read rather than guessing', () => {
    const s = parametersSettings('p\nSteps: many, CFG scale: 7.5, Seed: 1.5, Size: big');
    expect(s).toEqual({ prompt: 'p', negative_prompt: '', guidance_scale: 7.5 });
  });
});
