import { describe, expect, it } from 'vitest';
import {
  type CheckpointListing, type LibraryLora, archForPick, libraryItems, loraLabel, loraTag, pickOf, searchLibrary, searchLoras,
} from '../src/components/generate/library';
import { fromConfig, fromEmbedded } from '../src/components/generate/restore';
import { captionParts, lorasOf } from '../src/utils/outputs';

const archs = [{ arch: 'sd1' }, { arch: 'flux' }, { arch: 'zimage' }];

// what GET /checkpoints answers (extensions_built_in/inference_engine/catalog.py), on a CPU engine
const listing: CheckpointListing = {
  roots: ['/models'],
  device: 'cpu',
  dtype: 'float32',
  checkpoints: [
    {
      path: '/models/my-sd15', name: 'my-sd15', kind: 'diffusers', root: '/models', arch: 'sd1', bytes: 2 * 1024 ** 3,
      defaults: { dtype: 'float32', width: 768, height: 768 }, thumbnail: { name: 'a.png', url: '/api/files/a.png', ext: 'png' },
    },
    {
      path: '/models/flux1-dev.safetensors', name: 'flux1-dev.safetensors', kind: 'single_file', root: '/models', arch: 'flux',
      bytes: 23.8 * 1024 ** 3, defaults: { dtype: 'float32', width: 1024, height: 1024 }, thumbnail: { name: 'v.mp4', url: '/api/files/v.mp4', ext: 'mp4' },
    },
    { path: 'Tongyi-MAI/Z-Image-Turbo', name: 'Tongyi-MAI/Z-Image-Turbo', kind: 'hub_cache', root: '/hf', arch: 'zimage', defaults: { dtype: 'float32' } },
  ],
  hub: [
    { arch: 'sd1', value: 'sd1', hub_id: 'stable-diffusion-v1-5/stable-diffusion-v1-5' },
    { arch: 'zimage', value: 'zimage:turbo', hub_id: 'Tongyi-MAI/Z-Image-Turbo' },
    { arch: 'wan21', value: 'wan21', hub_id: 'Wan-AI/Wan2.1-T2V-1.3B-Diffusers' },
  ],
};

describe('the model library', () => {
  const items = libraryItems(listing, archs);

  it('lists local checkpoints first, then builtin, published (not already cached, served here) and tiny ones', () => {
    expect(items.map((i) => i.path)).toEqual([
      '/models/my-sd15', '/models/flux1-dev.safetensors', 'Tongyi-MAI/Z-Image-Turbo', 'builtin:shapes',
      'stable-diffusion-v1-5/stable-diffusion-v1-5', 'tiny:flux', 'tiny:sd1', 'tiny:zimage',
    ]);
    expect(items[0]).toMatchObject({ arch: 'sd1', detail: 'sd1 · diffusers folder · 2.0 GB', thumbnail: '/api/files/a.png', width: 768 });
    expect(items[1].thumbnail).toBeNull(); // a video result is no <img> thumbnail
    expect(items.every((i) => i.dtype === 'float32')).toBe(true); // a CPU engine's dtype, tiny and hub rows too
  });

  it('searches every word in name, path, family and description', () => {
    expect(searchLibrary(items, 'flux').map((i) => i.path)).toEqual(['/models/flux1-dev.safetensors', 'tiny:flux']);
    expect(searchLibrary(items, 'single FLUX').map((i) => i.path)).toEqual(['/models/flux1-dev.safetensors']);
    expect(searchLibrary(items, 'nothing like this')).toEqual([]);
  });

  it('a pick sets the arch to its family, keeps a tag of the same family, and leaves an unknown family alone', () => {
    const flux = pickOf(items[1]);
    expect(flux).toEqual({ arch: 'flux', name_or_path: '/models/flux1-dev.safetensors', dtype: 'float32', width: 1024, height: 1024 });
    expect(archForPick(flux, archs, 'sd1')).toBe('flux');
    expect(archForPick({ arch: 'zimage', name_or_path: '/m/z.safetensors' }, archs, 'zimage:turbo')).toBe('zimage:turbo');
    expect(archForPick({ arch: 'zimage:turbo', name_or_path: 'Tongyi-MAI/Z-Image-Turbo' }, archs, 'sd1')).toBe('zimage:turbo');
    expect(archForPick({ arch: null, name_or_path: '/m/vae.safetensors' }, archs, 'sd1')).toBe('sd1');
    expect(archForPick({ arch: 'wan21', name_or_path: 'x' }, archs, 'sd1')).toBe('sd1'); // not served by this engine
  });

  it('an engine that has not answered yet still offers tiny and builtin checkpoints', () => {
    expect(libraryItems(null, [{ arch: 'sd1' }]).map((i) => i.path)).toEqual(['builtin:shapes', 'tiny:sd1']);
  });
});

const loras: LibraryLora[] = [
  {
    path: '/t/fox_style/fox_style_000000250.safetensors', name: 'fox_style_000000250.safetensors', root: '/t', bytes: 1, mtime: 2,
    job: 'fox_style', step: 250, arch: 'sd1', base_model: 'sd_1.5', title: 'fox_style', tag: 'fox_style_000000250', aliases: ['fox_style'],
    trigger_words: ['f0x style'], preview_url: '/api/files/s.jpg',
  },
  {
    path: '/t/ink_wash/pytorch_lora_weights.safetensors', name: 'pytorch_lora_weights.safetensors', root: '/t', bytes: 1, mtime: 1,
    job: null, step: null, arch: null, base_model: null, title: 'ink_wash', tag: 'ink_wash', trigger_words: ['sumi-e'],
  },
];

describe('the LoRA library', () => {
  it('labels a LoRA by its job and step, a diffusers one by its folder', () => {
    expect(loras.map(loraLabel)).toEqual(['fox_style · step 250 · sd1', 'ink_wash']);
  });

  it('searches job names, tags, files and trigger words', () => {
    expect(searchLoras(loras, 'fox').map((e) => e.tag)).toEqual(['fox_style_000000250']);
    expect(searchLoras(loras, 'sumi').map((e) => e.tag)).toEqual(['ink_wash']);
    expect(searchLoras(loras, 'pytorch_lora').map((e) => e.tag)).toEqual(['ink_wash']);
    expect(searchLoras(loras, '')).toHaveLength(2);
  });

  it('writes the prompt tag the engine resolves', () => {
    expect(loraTag(loras[0], 0.8)).toBe('<lora:fox_style_000000250:0.8>');
    expect(loraTag({ name: 'old.safetensors' })).toBe('<lora:old:1>');
  });
});

// what toolkit/media_info.py parameters_text writes for a run with two LoRAs (testing/test_lora_library.py
// checks the engine writes this shape)
const PARAMETERS =
  'a red fox <lora:fox_style_000000250:0.8> <lora:ink_wash:1>\nNegative prompt: blurry\nSteps: 4, CFG scale: 5, Seed: 11, Size: 64x64, ' +
  'Model: tiny:sd1, Arch: sd1, Lora hashes: "fox_style_000000250: 0123456789ab, ink_wash: ba9876543210", Version: ai-toolkit inference engine';

// the engine's resolved config for the same run (sidecar `config`, PNG `aitk` chunk)
const CONFIG = {
  model: { arch: 'sd1', name_or_path: 'tiny:sd1', loras: [{ path: loras[0].path, multiplier: 0.8 }, { path: loras[1].path, multiplier: 1 }] },
  sample: { prompt: 'a red fox', negative_prompt: 'blurry', seed: 11, width: 64, height: 64, num_inference_steps: 4 },
  loras: [
    { name: 'fox_style_000000250', path: loras[0].path, multiplier: 0.8, hash: '0123456789ab' },
    { name: 'ink_wash', path: loras[1].path, multiplier: 1, hash: 'ba9876543210' },
  ],
};

describe('LoRAs come back on drop', () => {
  it('from a parameters text: the tags stay in the prompt, where the engine finds each by name', () => {
    const r = fromEmbedded({ parameters: PARAMETERS })!;
    expect(r.sample.prompt).toBe('a red fox <lora:fox_style_000000250:0.8> <lora:ink_wash:1>');
    expect(r.sample.negative_prompt).toBe('blurry');
    expect(r).toMatchObject({ arch: 'sd1', name_or_path: 'tiny:sd1', source: 'parameters' });
  });

  it('from the engine’s config: picked LoRAs labelled with their names, the prompt without tags', () => {
    const r = fromEmbedded({ aitk: JSON.stringify(CONFIG), parameters: PARAMETERS })!;
    expect(r.source).toBe('config');
    expect(r.sample.prompt).toBe('a red fox');
    expect(r.loras).toEqual([
      { path: loras[0].path, multiplier: 0.8, label: 'fox_style_000000250' },
      { path: loras[1].path, multiplier: 1, label: 'ink_wash' },
    ]);
    expect(fromConfig({ model: { lora_path: '/t/a.safetensors', lora_multiplier: 0.5 } }).loras).toEqual([{ path: '/t/a.safetensors', multiplier: 0.5 }]);
  });
});

describe('a result’s caption names its LoRAs', () => {
  it('with their names and multipliers', () => {
    const meta = { seed: 11, config: CONFIG } as never;
    expect(captionParts(meta).at(-1)).toBe('LoRA fox_style_000000250 0.8, ink_wash 1');
    expect(lorasOf(meta)[0]).toEqual({ name: 'fox_style_000000250', multiplier: 0.8, hash: '0123456789ab' });
  });

  it('from an older sidecar, by file name', () => {
    const meta = { config: { model: { arch: 'sd1', lora_path: '/t/old.safetensors', loras: [{ path: '/t/b.safetensors', multiplier: 0.5 }] } } } as never;
    expect(lorasOf(meta)).toEqual([{ name: 'old', multiplier: 1 }, { name: 'b', multiplier: 0.5 }]);
    expect(captionParts({ config: { model: { arch: 'sd1' } } } as never).join(' · ')).not.toContain('LoRA');
  });
});
