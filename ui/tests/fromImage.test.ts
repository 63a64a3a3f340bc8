import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL, DEFAULT_SAMPLE, generateBody } from '../src/components/generate/formState';
import { remember } from '../src/components/generate/formMemory';
import {
  dragMargin, effectiveStrength, isImageResult, isVideoResult, namesEngineFiles, outpaintSize, startFromEntry, startProblem, takesStartImage,
  takesStartVideo, upscaleBody,
} from '../src/components/generate/fromImage';
import { fromConfig, fromEmbedded } from '../src/components/generate/restore';
import { parametersSettings } from '../src/utils/parameters';
import type { ArchInfo, OutputEntry, Task } from '../src/utils/types';

const family = (arch: string, tasks?: Task[]) => ({ arch, modality: 'image', divisibility: 8, output_exts: ['png'], control_images: 0, tasks }) as unknown as ArchInfo;
const sd1 = family('sd1', ['txt2img', 'img2img', 'inpaint']);
const chroma = family('chroma', ['txt2img', 'img2img']);
const klein = family('flux2_klein', ['txt2img', 'inpaint']);
const wan = family('wan21', ['txt2img']);
const stream = { latents: 'x0', every_n_steps: 1 } as const;
const start = { ref: '/out/outputs/a.png', preview: '/api/files/x', info: 'gallery result a.png' };
const model = { ...DEFAULT_MODEL, name_or_path: 'tiny:sd1' };

describe('the start image in the request', () => {
  it('sends nothing of it without a start image, and nothing on a family that cannot start from one', () => {
    const plain = generateBody(sd1, model, { ...DEFAULT_SAMPLE, strength: 0.4 }, stream).sample;
    expect(Object.keys(plain).filter((k) => ['init_image', 'strength', 'mask', 'mask_blur', 'outpaint'].includes(k))).toEqual([]);
    expect('init_image' in generateBody(wan, model, { ...DEFAULT_SAMPLE, init_image: start }, stream).sample).toBe(false);
    expect(takesStartImage(wan)).toBe(false);
    expect(takesStartImage(family('old'))).toBe(false); // an engine that lists no tasks
    expect(takesStartImage(chroma) && takesStartImage(klein)).toBe(true);
  });

  it('sends init_image by its ref; strength only once picked (else the engine picks 0.75, or 1.0 masked)', () => {
    const s = { ...DEFAULT_SAMPLE, init_image: start };
    expect(generateBody(sd1, model, s, stream).sample).toMatchObject({ init_image: '/out/outputs/a.png' });
    expect('strength' in generateBody(sd1, model, s, stream).sample).toBe(false);
    expect(generateBody(sd1, model, { ...s, strength: 0.35 }, stream).sample.strength).toBe(0.35);
    expect(generateBody(sd1, model, { ...s, strength: 1.7 }, stream).sample.strength).toBe(1);
    expect([effectiveStrength(null, false), effectiveStrength(null, true), effectiveStrength(0.2, true)]).toEqual([0.75, 1, 0.2]);
  });

  it('sends the mask asset with its blur, and outpaint margins rounded into range, where the family inpaints', () => {
    const s = { ...DEFAULT_SAMPLE, init_image: start, mask_blur: 9, outpaint: { left: 16, right: 0, top: 8.4, bottom: 5000 } };
    expect(generateBody(sd1, model, s, stream, 'mask-asset').sample).toMatchObject({
      init_image: start.ref, mask: 'mask-asset', mask_blur: 9, outpaint: { left: 16, right: 0, top: 8, bottom: 2048 },
    });
    // image-to-image only: no mask, blur or margins reach the engine (it would refuse them by name)
    const c = generateBody(chroma, model, s, stream, 'mask-asset').sample;
    expect(['mask', 'mask_blur', 'outpaint'].filter((k) => k in c)).toEqual([]);
    // no mask and no margins: no blur either (the engine's default stands)
    const bare = generateBody(sd1, model, { ...DEFAULT_SAMPLE, init_image: start, mask_blur: 9 }, stream).sample;
    expect(['mask', 'mask_blur', 'outpaint'].filter((k) => k in bare)).toEqual([]);
  });

  it('sends only_masked with its padding only with a painted mask and no outpaint (the engine refuses the rest)', () => {
    const s = { ...DEFAULT_SAMPLE, init_image: start, inpaint_area: 'only_masked' as const, inpaint_padding: 2000.4 };
    expect(generateBody(sd1, model, s, stream, 'mask-asset').sample).toMatchObject({ inpaint_area: 'only_masked', inpaint_padding: 1024 });
    const unpainted = generateBody(sd1, model, s, stream).sample;
    const grown = generateBody(sd1, model, { ...s, outpaint: { left: 8, right: 0, top: 0, bottom: 0 } }, stream, 'mask-asset').sample;
    const whole = generateBody(sd1, model, { ...s, inpaint_area: 'whole' as const }, stream, 'mask-asset').sample;
    for (const body of [unpainted, grown, whole]) expect(['inpaint_area', 'inpaint_padding'].filter((k) => k in body)).toEqual([]);
  });

  it('says when the settings cannot run on the family, before the engine would refuse them', () => {
    const s = { ...DEFAULT_SAMPLE, init_image: start };
    expect(startProblem(sd1, s, true)).toBeNull();
    expect(startProblem(chroma, s, true)).toMatch(/cannot inpaint/);
    expect(startProblem(klein, s, false)).toMatch(/only inpaints/);
    expect(startProblem(klein, { ...s, outpaint: { left: 8, right: 0, top: 0, bottom: 0 } }, false)).toBeNull();
    expect(startProblem(sd1, DEFAULT_SAMPLE, true)).toBeNull();
    expect(outpaintSize(64, 48, { left: 8, right: 16, top: 0, bottom: 32 })).toEqual({ width: 88, height: 80 });
  });

  it('turns an outpaint handle dragged on screen into a margin of the family\'s multiple, in the engine\'s range', () => {
    expect(dragMargin(0, 40, 176 / 64, 8, 1)).toBe(16); // 14.5 image px
    expect(dragMargin(16, 40, 2, 8, -1)).toBe(0); // dragged inwards past zero
    expect(dragMargin(0, -30, 1, 16, -1)).toBe(32); // the left side grows moving left
    expect(dragMargin(2000, 500, 1, 96, 1)).toBe(2016); // at most 2048, kept a multiple
    expect(dragMargin(0, 10, 0, 8, 1)).toBe(8);
  });

  it('pins a request that names engine files to that engine', () => {
    expect(namesEngineFiles({ prompt: 'p' })).toBe(false);
    expect(namesEngineFiles({ init_image: '/x.png' })).toBe(true);
    expect(namesEngineFiles({ mask: 'abc' })).toBe(true);
    expect(namesEngineFiles({ ctrl_img: 'abc' })).toBe(true);
  });

  it('is not remembered across reloads (a blob preview and an asset die with the page)', () => {
    const m = remember(null, model, { ...DEFAULT_SAMPLE, init_image: { ...start, preview: 'blob:x' }, strength: 0.4 });
    expect('init_image' in m.byArch.sd1.sample).toBe(false);
    expect(JSON.stringify(m)).not.toContain('blob:x');
  });
});

const entry = (over: Partial<OutputEntry> = {}): OutputEntry => ({
  name: 'r1.png',
  path: '/t/inference_engine_gpu0/outputs/r1.png',
  url: '/api/files/%2Ft%2Finference_engine_gpu0%2Foutputs%2Fr1.png',
  bytes: 1,
  mtime: 1,
  meta: {
    seed: 42,
    result: { kind: 'image', width: 64, height: 48 },
    config: {
      model: { arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float32', quantize: false, low_vram: false, lora_path: null, loras: [{ path: '/l/a.safetensors', multiplier: 0.5 }] } as never,
      sample: {
        prompt: 'a fox', negative_prompt: 'blur', seed: 42, width: 64, height: 48, num_inference_steps: 4, guidance_scale: 5, sampler: 'Euler',
        scheduler: 'default', speed: 'lossless', output_ext: 'png', init_image: '/old.png', strength: 0.6, mask: '/m.png', mask_blur: 4, ctrl_img_1: null,
      },
    },
  },
  ...over,
});

describe('Upscale ×2 and Use as input on a result', () => {
  it('asks again with the result itself as init_image, upscale ×2 and its own model, prompt, seed and sampling', () => {
    const b = upscaleBody(entry())!;
    expect(b.model).toEqual({ arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float32', loras: [{ path: '/l/a.safetensors', multiplier: 0.5 }] });
    expect(b.sample).toEqual({
      prompt: 'a fox', negative_prompt: 'blur', guidance_scale: 5, num_inference_steps: 4, sampler: 'Euler', scheduler: 'default', speed: 'lossless',
      seed: 42, output_ext: 'png', init_image: '/t/inference_engine_gpu0/outputs/r1.png', upscale: { factor: 2 },
    });
    // its own start image, mask and size are not the upscale's: the engine sizes it from the file
    expect(['mask', 'strength', 'width', 'height'].filter((k) => k in b.sample)).toEqual([]);
    expect(upscaleBody(entry({ meta: { seed: 1 } }))).toBeNull();
    expect(upscaleBody(entry(), 3)!.sample.upscale).toEqual({ factor: 3 });
    // an upscaler file chosen on the gallery (GET /upscalers) resizes it first; none is Lanczos
    expect(upscaleBody(entry(), 2, '/m/ESRGAN/4x.pth')!.sample.upscale).toEqual({ factor: 2, model: '/m/ESRGAN/4x.pth' });
    expect(upscaleBody(entry(), 2, '')!.sample.upscale).toEqual({ factor: 2 });
  });

  it('takes a result as the start image by its path, with its size', () => {
    expect(startFromEntry(entry())).toEqual({
      ref: { ref: '/t/inference_engine_gpu0/outputs/r1.png', preview: entry().url, info: 'gallery result r1.png' }, width: 64, height: 48,
    });
    expect(isImageResult(entry())).toBe(true);
    expect(isImageResult(entry({ name: 'r.mp4', meta: { result: { kind: 'video' } } }))).toBe(false);
    expect(isImageResult(entry({ name: 'r.webp', meta: null }))).toBe(true);
  });
});

describe('the start video (video-to-video)', () => {
  const wan22 = { ...family('wan22_5b', ['txt2img', 'vid2vid']), modality: 'video' } as ArchInfo;
  const clip = { ref: '/out/outputs/v.mp4', preview: '/api/files/v', info: 'gallery result v.mp4' };

  it('sends init_video by its ref and strength once picked, only where the family lists vid2vid', () => {
    expect(takesStartVideo(wan22)).toBe(true);
    expect([takesStartVideo(wan), takesStartVideo(sd1), takesStartVideo(family('old'))]).toEqual([false, false, false]);
    const s = { ...DEFAULT_SAMPLE, init_video: clip };
    expect(generateBody(wan22, model, s, stream).sample).toMatchObject({ init_video: '/out/outputs/v.mp4' });
    expect('strength' in generateBody(wan22, model, s, stream).sample).toBe(false); // the engine's 0.75
    expect(generateBody(wan22, model, { ...s, strength: -2 }, stream).sample.strength).toBe(0);
    expect('init_video' in generateBody(wan, model, s, stream).sample).toBe(false);
    expect('init_video' in generateBody(sd1, model, s, stream).sample).toBe(false);
    expect(namesEngineFiles({ init_video: 'abc' })).toBe(true);
  });

  it('tells a video result from an image, and keeps neither across reloads', () => {
    expect(isVideoResult(entry({ name: 'r.mp4', meta: { result: { kind: 'video' } } }))).toBe(true);
    expect(isVideoResult(entry({ name: 'r.webp', meta: { result: { kind: 'video' } } }))).toBe(true); // animated WebP
    expect(isVideoResult(entry({ name: 'r.mp4', meta: null }))).toBe(true);
    expect(isVideoResult(entry())).toBe(false);
    const m = remember(null, { ...model, arch: 'wan22_5b' }, { ...DEFAULT_SAMPLE, init_video: { ...clip, preview: 'blob:v' } });
    expect(JSON.stringify(m)).not.toContain('blob:v');
  });

  it('comes back from a config by its path', () => {
    const r = fromConfig({ model: { arch: 'wan22_5b', name_or_path: 'tiny:wan22_5b' }, sample: { prompt: 'p', init_video: '/o/v.mp4', strength: 0.5 } });
    expect(r.init_video).toBe('/o/v.mp4');
    expect(r.sample.strength).toBe(0.5);
    expect('init_video' in r.sample).toBe(false);
  });
});

describe('restoring the start settings', () => {
  it('from a config: strength, mask blur, outpaint and the start image path (not the mask)', () => {
    const r = fromConfig({ ...entry().meta!.config!, sample: { ...entry().meta!.config!.sample, outpaint: { left: 0, right: 32, top: 0, bottom: 0 } } });
    expect(r.sample).toMatchObject({ strength: 0.6, mask_blur: 4, outpaint: { left: 0, right: 32, top: 0, bottom: 0 } });
    expect(r.init_image).toBe('/old.png');
    expect('mask' in r.sample).toBe(false);
    const txt = fromConfig({ sample: { prompt: 'p', strength: null, outpaint: null, init_image: null } });
    expect(['strength', 'outpaint'].filter((k) => k in txt.sample)).toEqual([]);
    expect(txt.init_image).toBeUndefined();
    expect('outpaint' in fromConfig({ sample: { prompt: 'p', outpaint: { left: 0, right: 0, top: 0, bottom: 0 } } }).sample).toBe(false);
  });

  it('from an aitk chunk as from a sidecar', () => {
    const r = fromEmbedded({ aitk: JSON.stringify({ model: { arch: 'sd1' }, sample: { prompt: 'p', init_image: '/in.png', strength: 0.3, mask_blur: 12 } }) })!;
    expect([r.init_image, r.sample.strength, r.sample.mask_blur]).toEqual(['/in.png', 0.3, 12]);
    const masked = fromEmbedded({ aitk: JSON.stringify({ model: { arch: 'sd1' }, sample: { prompt: 'p', inpaint_area: 'only_masked', inpaint_padding: 16 } }) })!;
    expect([masked.sample.inpaint_area, masked.sample.inpaint_padding]).toEqual(['only_masked', 16]);
  });

  it("from A1111 text: Inpaint area: Only masked and Masked area padding (its inpaint_full_res)", () => {
    const text = 'a fox\nSteps: 4, Seed: 42, Size: 64x64, Denoising strength: 0.75, Mask blur: 4, Inpaint area: Only masked, Masked area padding: 48';
    expect(parametersSettings(text)).toMatchObject({ inpaint_area: 'only_masked', inpaint_padding: 48 });
    expect(fromEmbedded({ parameters: text })!.sample).toMatchObject({ inpaint_area: 'only_masked', inpaint_padding: 48 });
    expect('inpaint_area' in parametersSettings('a fox\nSteps: 4, Inpaint area: somewhere')).toBe(false);
  });

  it('from A1111 text: Denoising strength and Mask blur (the input is named by a file name and hash, not a path)', () => {
    const text = 'a fox\nNegative prompt: blur\nSteps: 4, Sampler: Euler, CFG scale: 5, Seed: 42, Size: 64x64, Denoising strength: 0.55, Mask blur: 8, Init image: "a.png 1a2b3c4d5e"';
    expect(parametersSettings(text)).toMatchObject({ strength: 0.55, mask_blur: 8 });
    const r = fromEmbedded({ parameters: text })!;
    expect([r.sample.strength, r.sample.mask_blur, r.init_image]).toEqual([0.55, 8, undefined]);
    const odd = parametersSettings('p\nSteps: 4, Seed: 1, Size: 64x64, Denoising strength: 3, Mask blur: 1.5');
    expect(['strength', 'mask_blur'].filter((k) => k in odd)).toEqual([]);
  });
});
