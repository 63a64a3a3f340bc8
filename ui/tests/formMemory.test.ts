import { describe, expect, it } from 'vitest';
import { MEMORY_KEY, loadMemory, recall, remember, saveMemory } from '../src/components/generate/formMemory';
import { DEFAULT_MODEL, DEFAULT_SAMPLE } from '../src/components/generate/formState';

function storage() {
  const map = new Map<string, string>();
  return { map, getItem: (k: string) => map.get(k) ?? null, setItem: (k: string, v: string) => void map.set(k, v), removeItem: (k: string) => void map.delete(k) };
}
const base = { model: DEFAULT_MODEL, sample: DEFAULT_SAMPLE };

describe('form memory', () => {
  it('round-trips the last arch, the prompt and each arch’s own settings through storage', () => {
    const s = storage();
    let m = remember(null, { ...DEFAULT_MODEL, name_or_path: 'builtin:shapes' }, { ...DEFAULT_SAMPLE, prompt: 'a green square', width: 64, num_inference_steps: 20 });
    m = remember(m, { ...DEFAULT_MODEL, arch: 'wan21', name_or_path: 'tiny:wan21', low_vram: true }, { ...DEFAULT_SAMPLE, prompt: 'a wave', num_frames: 9 });
    saveMemory(s, m);
    const back = loadMemory(s)!;
    expect(back.arch).toBe('wan21');
    expect(back.prompt).toBe('a wave');
    expect(recall(back, 'sd1', base)).toMatchObject({ model: { arch: 'sd1', name_or_path: 'builtin:shapes' }, sample: { width: 64, num_inference_steps: 20 } });
    expect(recall(back, 'wan21', base)).toMatchObject({ model: { name_or_path: 'tiny:wan21', low_vram: true }, sample: { num_frames: 9 } });
    expect(recall(back, 'flux', base)).toBeNull();
  });

  it('keeps an emptied field empty and never stores control images (their previews die with the page)', () => {
    const s = storage();
    saveMemory(s, remember(null, DEFAULT_MODEL, { ...DEFAULT_SAMPLE, num_inference_steps: NaN, ctrl_imgs: [{ ref: 'id', preview: 'blob:x', info: '' }] }));
    expect(s.map.get(MEMORY_KEY)).not.toContain('blob:');
    expect(Number.isNaN(recall(loadMemory(s), 'sd1', base)!.sample.num_inference_steps)).toBe(true);
  });

  it('survives a malformed or foreign value', () => {
    const s = storage();
    s.setItem(MEMORY_KEY, '{not json');
    expect(loadMemory(s)).toBeNull();
    s.setItem(MEMORY_KEY, JSON.stringify({ arch: 'sd1', byArch: { sd1: { model: { name_or_path: 'x', loras: [{ path: 1 }] }, sample: { width: 'wide', height: 64 } }, bad: 5 } }));
    const m = loadMemory(s)!;
    expect(Object.keys(m.byArch)).toEqual(['sd1']);
    expect(m.byArch.sd1.model.loras).toEqual([]);
    expect(m.byArch.sd1.sample).toEqual({ height: 64 });
  });
});
