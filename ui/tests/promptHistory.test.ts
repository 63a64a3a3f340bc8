import { describe, expect, it } from 'vitest';
import { HISTORY_KEY, addPrompt, loadHistory, saveHistory, stepHistory } from '../src/utils/promptHistory';

describe('prompt history', () => {
  it('puts the newest first, once, trimmed, and caps the list', () => {
    let h: string[] = [];
    for (const p of ['a', 'b', ' a ', '', 'c']) h = addPrompt(h, p, 3);
    expect(h).toEqual(['c', 'a', 'b']);
    expect(addPrompt(h, 'd', 3)).toEqual(['d', 'c', 'a']);
  });

  it('stores and reads back, clears by removing the key, and ignores junk', () => {
    const map = new Map<string, string>();
    const s = { getItem: (k: string) => map.get(k) ?? null, setItem: (k: string, v: string) => void map.set(k, v), removeItem: (k: string) => void map.delete(k) };
    saveHistory(s, ['x', 'y']);
    expect(loadHistory(s)).toEqual(['x', 'y']);
    saveHistory(s, []);
    expect(map.has(HISTORY_KEY)).toBe(false);
    map.set(HISTORY_KEY, '[1, "ok", null]');
    expect(loadHistory(s)).toEqual(['ok']);
    map.set(HISTORY_KEY, 'nope');
    expect(loadHistory(s)).toEqual([]);
  });

  it('Alt+Up/Down walks from the draft (-1) to the oldest and back, clamped', () => {
    expect(stepHistory(2, -1, 'older')).toBe(0);
    expect(stepHistory(2, 1, 'older')).toBe(1);
    expect(stepHistory(2, 0, 'newer')).toBe(-1);
    expect(stepHistory(2, -1, 'newer')).toBe(-1);
  });
});
