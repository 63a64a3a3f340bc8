import { describe, expect, it } from 'vitest';
import { sizePresets } from '../src/utils/sizePresets';

describe('sizePresets', () => {
  it('keeps about the native pixel count at each ratio, every side a multiple of the divisibility', () => {
    for (const [native, div] of [[1024, 16], [512, 8], [1328, 16], [64, 8]]) {
      const presets = sizePresets(native, div);
      expect(presets.map((p) => p.label)).toEqual(['1:1', '4:3', '3:4', '3:2', '2:3', '16:9', '9:16']);
      for (const p of presets) {
        expect(p.width % div).toBe(0);
        expect(p.height % div).toBe(0);
        expect(Math.abs((p.width * p.height) / (native * native) - 1)).toBeLessThan(0.1);
      }
    }
  });

  it('gives the familiar SDXL/Flux sizes at 1024 px and mirrors portrait and landscape', () => {
    const byLabel = Object.fromEntries(sizePresets(1024, 16).map((p) => [p.label, [p.width, p.height]]));
    expect(byLabel['1:1']).toEqual([1024, 1024]);
    expect(byLabel['16:9']).toEqual([1360, 768]);
    expect(byLabel['9:16']).toEqual([768, 1360]);
    expect(byLabel['4:3']).toEqual([1184, 880]);
    expect(byLabel['3:4']).toEqual([880, 1184]);
  });

  it('has none for a family without a picture size', () => {
    expect(sizePresets(0, 1)).toEqual([]);
  });
});
