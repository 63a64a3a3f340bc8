'use client';
/**
 * The outpaint margins drawn: the grown canvas as a dashed frame with the start image in its place, and a handle
 * on each side to drag that side out or in (fromImage.ts dragMargin; the number fields beside it say the same).
 */
import { type PointerEvent, useRef } from 'react';
import { type Outpaint, OUTPAINT_SIDES, dragMargin, outpaintSize } from './fromImage';

interface Props {
  src: string;
  width: number;
  height: number;
  outpaint: Outpaint;
  divisibility: number;
  onChange: (outpaint: Outpaint) => void;
  disabled: boolean;
}

const BOX = 176; // px: the frame's longer side on screen
type Side = (typeof OUTPAINT_SIDES)[number];
const OUTWARD: Record<Side, { axis: 'x' | 'y'; sign: 1 | -1 }> = {
  left: { axis: 'x', sign: -1 },
  right: { axis: 'x', sign: 1 },
  top: { axis: 'y', sign: -1 },
  bottom: { axis: 'y', sign: 1 },
};

export default function OutpaintFrame({ src, width, height, outpaint, divisibility, onChange, disabled }: Props) {
  const grown = outpaintSize(width, height, outpaint);
  const scale = BOX / Math.max(grown.width, grown.height);
  // the scale stays that of the drag's start, so the handle follows the pointer while the frame is redrawn
  const drag = useRef<{ side: Side; x: number; y: number; start: number; scale: number } | null>(null);

  const down = (side: Side) => (e: PointerEvent<HTMLDivElement>) => {
    if (disabled || e.button !== 0) return;
    e.preventDefault();
    e.currentTarget.setPointerCapture(e.pointerId);
    drag.current = { side, x: e.clientX, y: e.clientY, start: outpaint[side], scale };
  };
  const move = (e: PointerEvent<HTMLDivElement>) => {
    const d = drag.current;
    if (!d) return;
    const { axis, sign } = OUTWARD[d.side];
    const delta = axis === 'x' ? e.clientX - d.x : e.clientY - d.y;
    const next = dragMargin(d.start, delta, d.scale, divisibility, sign);
    if (next !== outpaint[d.side]) onChange({ ...outpaint, [d.side]: next });
  };
  const up = () => {
    drag.current = null;
  };

  const handle = (side: Side) => {
    const across = side === 'left' || side === 'right';
    const place = {
      left: 'left-0 top-1/2 -translate-x-1/2 -translate-y-1/2',
      right: 'right-0 top-1/2 translate-x-1/2 -translate-y-1/2',
      top: 'top-0 left-1/2 -translate-x-1/2 -translate-y-1/2',
      bottom: 'bottom-0 left-1/2 -translate-x-1/2 translate-y-1/2',
    }[side];
    return (
      <div
        key={side}
        role="slider"
        aria-label={`Outpaint ${side}: drag to grow or shrink`}
        aria-valuenow={outpaint[side]}
        aria-valuemin={0}
        aria-valuemax={2048}
        className={`absolute ${place} ${across ? 'h-8 w-2.5 cursor-ew-resize' : 'h-2.5 w-8 cursor-ns-resize'} touch-none rounded bg-sky-400`}
        onPointerDown={down(side)}
        onPointerMove={move}
        onPointerUp={up}
        onPointerCancel={up}
        data-testid={`outpaint-handle-${side}`}
      />
    );
  };

  return (
    <div className="flex justify-center py-2" data-testid="outpaint-frame">
      <div
        className="relative border border-dashed border-gray-400 bg-gray-800/60"
        style={{ width: grown.width * scale, height: grown.height * scale }}
        data-testid="outpaint-canvas"
      >
        <img
          src={src}
          alt=""
          className="absolute [image-rendering:pixelated]"
          style={{ left: outpaint.left * scale, top: outpaint.top * scale, width: width * scale, height: height * scale }}
          draggable={false}
        />
        {OUTPAINT_SIDES.map(handle)}
      </div>
    </div>
  );
}
