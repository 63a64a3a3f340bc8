/**
 * latent -> picture must match Python's `project_rgb` (latent_preview.py) byte for byte, on vectors written
 * by tests/fixtures/make_projection_vectors.py with the real families' factors.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeFloat16, frameCount, heatmap, type Layout, projectLatent } from '@/utils/engineStream';

interface Case {
  name: string;
  layout: Layout;
  shape: number[];
  latent_hex: string;
  rgb_factors: number[][] | null;
  rgb_bias: number[] | null;
  frames: { frame: number; rgb_hex: string }[];
}
const fixture: { cases: Case[] } = JSON.parse(
  readFileSync(path.resolve(__dirname, 'fixtures/projection_vectors.json'), 'utf8'),
);

describe('projectLatent matches project_rgb', () => {
  it.each(fixture.cases.map((c) => [c.name, c] as const))('%s', (_, c) => {
    const data = decodeFloat16(Uint8Array.from(Buffer.from(c.latent_hex, 'hex')));
    const latent = { layout: c.layout, shape: c.shape, data };
    expect(frameCount(latent)).toBe(c.frames.length);
    for (const { frame, rgb_hex } of c.frames) {
      const want = Buffer.from(rgb_hex, 'hex');
      const pic = projectLatent(latent, { rgb_factors: c.rgb_factors, rgb_bias: c.rgb_bias }, frame);
      expect([pic.width, pic.height]).toEqual([c.shape.at(-1), c.shape.at(-2)]);
      const rgb = Buffer.alloc(pic.width * pic.height * 3);
      for (let p = 0; p < pic.width * pic.height; p++) {
        rgb[p * 3] = pic.data[p * 4];
        rgb[p * 3 + 1] = pic.data[p * 4 + 1];
        rgb[p * 3 + 2] = pic.data[p * 4 + 2];
        expect(pic.data[p * 4 + 3]).toBe(255);
      }
      expect(rgb.toString('hex')).toBe(want.toString('hex'));
    }
  });

  it('video frames differ from each other (the scrubber shows different pictures)', () => {
    const c = fixture.cases.find((x) => x.layout === 'BCFHW')!;
    expect(new Set(c.frames.map((f) => f.rgb_hex)).size).toBe(c.frames.length);
  });
});

describe('audio heatmap', () => {
  it('lays time along x and channels along y, min-max scaled', () => {
    // B=1, L=3, C=2: values rise with time, channel 1 above channel 0
    const data = Float32Array.from([0, 1, 2, 3, 4, 5]);
    const pic = heatmap(data, 3, 2);
    expect([pic.width, pic.height]).toEqual([3, 2]);
    const px = (x: number, y: number) => Array.from(pic.data.subarray((y * 3 + x) * 4, (y * 3 + x) * 4 + 4));
    expect(px(0, 0)).toEqual([0, 0, 4, 255]); // the minimum: the ramp's first colour
    expect(px(2, 1)).toEqual([252, 253, 191, 255]); // the maximum: its last
    const brightness = (p: number[]) => p[0] + p[1] + p[2];
    expect(brightness(px(1, 0))).toBeGreaterThan(brightness(px(0, 0)));
  });

  it('projectLatent routes BLC latents to the heatmap', () => {
    const pic = projectLatent({ layout: 'BLC', shape: [1, 5, 4], data: new Float32Array(20) }, null);
    expect([pic.width, pic.height]).toEqual([5, 4]);
  });
});
