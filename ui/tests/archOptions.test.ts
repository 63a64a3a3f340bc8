import { describe, expect, it } from 'vitest';
import { ARCH_GROUPS, archChoice, archOptionGroups, familyOf, groupOf, nextModelPath } from '../src/components/generate/archOptions';
import { DEFAULT_MODEL, DEFAULT_SAMPLE, generateBody, sampleDefaults } from '../src/components/generate/formState';
import { holdsModel } from '../src/utils/pickEngine';
import type { ArchInfo, EngineHealth } from '../src/utils/types';

// GET /models as the engine sends it (toolkit/models/arch_tags.py picker_facts), trimmed to what the picker reads
const info = (arch: string, modality: ArchInfo['modality'], extra: Partial<ArchInfo> = {}) =>
  ({ arch, modality, divisibility: 16, native_resolution: 1024, control_images: 0, output_exts: ['png'], defaults: {}, ...extra }) as ArchInfo;
const zimage = info('zimage', 'image', {
  group: 'image',
  hub_id: 'Tongyi-MAI/Z-Image',
  defaults: { width: 1024, height: 1024, num_inference_steps: 50, guidance_scale: 4, output_ext: 'png' },
  tags: {
    turbo: { hub_id: 'Tongyi-MAI/Z-Image-Turbo', description: 'Z-Image-Turbo', defaults: { width: 1024, height: 1024, num_inference_steps: 9, guidance_scale: 0, output_ext: 'png' } },
  },
});
const archs: ArchInfo[] = [
  info('wan21', 'video', { group: 'video', hub_id: 'Wan-AI/Wan2.1-T2V-1.3B-Diffusers' }),
  zimage,
  info('qwen_image_edit', 'image', { group: 'instruction', hub_id: 'Qwen/Qwen-Image-Edit' }),
  info('sd1', 'image', { group: 'image', hub_id: 'stable-diffusion-v1-5/stable-diffusion-v1-5', defaults: { num_inference_steps: 25 } }),
  info('stable_audio', 'audio'), // an engine that sends no group: its modality's
  info('ace_step_15', 'audio', { group: 'audio', hub_id: '' }),
];

describe('archOptionGroups', () => {
  it('groups families in AI Toolkit order, by name, each followed by its arch:tag entries', () => {
    const groups = archOptionGroups(archs);
    expect(groups.map((g) => g.group)).toEqual(['image', 'instruction', 'video', 'audio']); // no experimental family here
    expect(ARCH_GROUPS).toEqual(['image', 'instruction', 'video', 'audio', 'experimental']);
    expect(groups[0].options.map((o) => o.value)).toEqual(['sd1', 'zimage', 'zimage:turbo']);
    expect(groups[3].options.map((o) => o.value)).toEqual(['ace_step_15', 'stable_audio']);
    expect(groups[0].options[2].label).toContain('zimage:turbo · Z-Image-Turbo');
    expect(groupOf(info('x', 'video'))).toBe('video');
  });
});

describe('archChoice', () => {
  it("a tag takes the family's facts with the tag's defaults and hub id; the request carries the tag", () => {
    const turbo = archChoice(archs, 'zimage:turbo')!;
    expect([turbo.arch, turbo.value, turbo.tag, turbo.hub_id]).toEqual(['zimage', 'zimage:turbo', 'turbo', 'Tongyi-MAI/Z-Image-Turbo']);
    expect(turbo.divisibility).toBe(16);
    const sample = sampleDefaults(turbo, turbo.hub_id, DEFAULT_SAMPLE);
    expect([sample.num_inference_steps, sample.guidance_scale]).toEqual([9, 0]);
    const base = archChoice(archs, 'zimage')!;
    expect([base.value, base.tag, base.hub_id, sampleDefaults(base, base.hub_id, DEFAULT_SAMPLE).num_inference_steps]).toEqual(['zimage', null, 'Tongyi-MAI/Z-Image', 50]);
    const body = generateBody(turbo, { ...DEFAULT_MODEL, arch: turbo.value, name_or_path: turbo.hub_id }, sample, { latents: 'x0', every_n_steps: 1 });
    expect(body.model.arch).toBe('zimage:turbo');
  });

  it('an unknown family or tag is no choice', () => {
    expect(archChoice(archs, 'zimage:warp')).toBeUndefined();
    expect(archChoice(archs, 'sd9000')).toBeUndefined();
    expect(familyOf('zimage:turbo')).toBe('zimage');
  });
});

describe('nextModelPath', () => {
  const turbo = archChoice(archs, 'zimage:turbo')!;
  const base = archChoice(archs, 'zimage')!;
  const sd1 = archChoice(archs, 'sd1')!;
  const ace = archChoice(archs, 'ace_step_15')!;

  it("an empty field or the previous entry's hub id takes the new entry's hub id", () => {
    expect(nextModelPath(sd1, '', turbo)).toBe('Tongyi-MAI/Z-Image-Turbo');
    expect(nextModelPath(base, 'Tongyi-MAI/Z-Image', turbo)).toBe('Tongyi-MAI/Z-Image-Turbo');
    expect(nextModelPath(turbo, 'Tongyi-MAI/Z-Image-Turbo', sd1)).toBe('stable-diffusion-v1-5/stable-diffusion-v1-5');
    expect(nextModelPath(sd1, '', ace)).toBe('tiny:ace_step_15'); // a family without a published checkpoint
  });

  it("never overwrites a path the user typed; tiny: follows the family, across the family's tags unchanged", () => {
    expect(nextModelPath(base, '/models/my-zimage', turbo)).toBe('/models/my-zimage');
    expect(nextModelPath(base, 'someone/z-image-finetune', sd1)).toBe('someone/z-image-finetune');
    expect(nextModelPath(sd1, 'tiny:sd1', turbo)).toBe('tiny:zimage');
    expect(nextModelPath(base, 'tiny:zimage', turbo)).toBe('tiny:zimage');
    expect(nextModelPath(base, 'tiny:zimage/b', turbo)).toBe('tiny:zimage/b');
    expect(nextModelPath(sd1, 'builtin:shapes', turbo, (p) => (p === 'builtin:shapes' ? 'sd1' : undefined))).toBe('tiny:zimage');
  });
});

describe('holdsModel', () => {
  it("an engine holding a family holds that family's tagged entry with the same checkpoint", () => {
    const health = { ok: true, busy: false, queue: 0, active: { arch: 'zimage', name_or_path: 'Tongyi-MAI/Z-Image-Turbo' } } as EngineHealth;
    expect(holdsModel(health, { arch: 'zimage:turbo', name_or_path: 'Tongyi-MAI/Z-Image-Turbo' })).toBe(true);
    expect(holdsModel(health, { arch: 'zimage:turbo', name_or_path: 'Tongyi-MAI/Z-Image' })).toBe(false);
  });
});
