/**
 * Size presets for a family: common aspect ratios at about the family's native pixel count (the area it was
 * trained at), each side snapped to what its latent grid can take, so a preset never needs the engine to snap.
 */

export interface SizePreset {
  label: string;
  width: number;
  height: number;
}

export const RATIOS: [string, number, number][] = [
  ['1:1', 1, 1],
  ['4:3', 4, 3],
  ['3:4', 3, 4],
  ['3:2', 3, 2],
  ['2:3', 2, 3],
  ['16:9', 16, 9],
  ['9:16', 9, 16],
];

function snapSide(value: number, divisibility: number): number {
  const d = Math.max(1, divisibility);
  return Math.max(d, Math.round(value / d) * d);
}

/** None for a family without a picture size (audio: native 0). */
export function sizePresets(native: number, divisibility: number): SizePreset[] {
  if (!(native > 0)) return [];
  const area = native * native;
  return RATIOS.map(([label, w, h]) => {
    const width = Math.sqrt((area * w) / h);
    return { label, width: snapSide(width, divisibility), height: snapSide((width * h) / w, divisibility) };
  });
}
