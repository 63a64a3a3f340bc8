'use client';
/** One click to a common aspect ratio at the checkpoint's native pixel count (see utils/sizePresets). */
import { sizePresets } from '@/utils/sizePresets';

interface Props {
  native: number;
  divisibility: number;
  width: number;
  height: number;
  onPick: (width: number, height: number) => void;
  disabled: boolean;
}

export default function SizePresets({ native, divisibility, width, height, onPick, disabled }: Props) {
  const presets = sizePresets(native, divisibility);
  if (!presets.length) return null;
  return (
    <div className="col-span-2" role="group" aria-label="size presets" data-testid="size-presets">
      <div className="label">Size presets ({native}² px)</div>
      <div className="flex flex-wrap gap-1">
        {presets.map((p) => {
          const active = p.width === width && p.height === height;
          return (
            <button
              key={p.label}
              type="button"
              className={`btn px-2 py-0.5 text-xs ${active ? 'bg-sky-700 text-white' : 'border border-gray-700 text-gray-300 hover:bg-gray-800'}`}
              title={`${p.width}×${p.height}`}
              aria-pressed={active}
              disabled={disabled}
              onClick={() => onPick(p.width, p.height)}
              data-testid="size-preset"
              data-size={`${p.width}x${p.height}`}
            >
              {p.label}
            </button>
          );
        })}
      </div>
    </div>
  );
}
