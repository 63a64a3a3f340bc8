'use client';
/**
 * The inpainting mask, painted over the start image: a canvas at the image's own pixel size laid over it, so a
 * stroke lands on the pixels it covers at any displayed size. Brush and eraser, brush size (image pixels),
 * undo, invert and clear. Strokes live in the canvas's alpha (utils/maskPng.ts); the form asks `handle` for
 * the PNG when Generate is pressed, and only when something is painted.
 */
import { type MutableRefObject, type PointerEvent, useCallback, useEffect, useRef, useState } from 'react';
import { encodeGrayPng, hasPaint, invertAlpha, maskGray } from '@/utils/maskPng';

export interface MaskHandle {
  /** anything painted (an inverted empty mask repaints everything) */
  painted: () => boolean;
  /** bumped by every change: an unchanged mask need not be uploaded again */
  version: () => number;
  /** white repaints, black keeps, the image's size */
  png: () => Promise<Uint8Array>;
}

interface Props {
  src: string;
  alt: string;
  handle: MutableRefObject<MaskHandle | null>;
  onPainted: (painted: boolean) => void;
  onSize?: (width: number, height: number) => void;
  disabled: boolean;
}

const COLOR: [number, number, number] = [244, 63, 94]; // shown at half opacity over the image; only alpha is sent
const UNDO_DEPTH = 30;

export default function MaskEditor({ src, alt, handle, onPainted, onSize, disabled }: Props) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [size, setSize] = useState<{ width: number; height: number } | null>(null);
  const [erase, setErase] = useState(false);
  const [brush, setBrush] = useState(16);
  const [undoCount, setUndoCount] = useState(0);
  const [painted, setPainted] = useState(false);
  const undo = useRef<ImageData[]>([]);
  const version = useRef(0);
  const last = useRef<{ x: number; y: number } | null>(null);
  const report = useRef(onPainted); // the parent's callback may be new each render: the canvas must not be reset for it
  report.current = onPainted;

  const ctx = () => canvas.current?.getContext('2d', { willReadFrequently: true }) ?? null;
  const pixels = useCallback(() => {
    const c = canvas.current;
    const g = c?.getContext('2d', { willReadFrequently: true });
    return c && g && c.width && c.height ? g.getImageData(0, 0, c.width, c.height) : null;
  }, []);

  const changed = useCallback(() => {
    version.current += 1;
    const data = pixels();
    const now = Boolean(data && hasPaint(data.data));
    setPainted(now);
    report.current(now);
  }, [pixels]);

  useEffect(() => {
    handle.current = {
      painted: () => {
        const data = pixels();
        return Boolean(data && hasPaint(data.data));
      },
      version: () => version.current,
      png: async () => {
        const data = pixels();
        if (!data) throw new Error('the mask has no pixels yet: the start image is still loading');
        return encodeGrayPng(data.width, data.height, maskGray(data.data));
      },
    };
    return () => {
      handle.current = null;
    };
  }, [handle, pixels]);

  // a new image starts a new mask
  useEffect(() => {
    setSize(null);
    undo.current = [];
    setUndoCount(0);
  }, [src]);

  useEffect(() => {
    if (!size || !canvas.current) return;
    canvas.current.width = size.width;
    canvas.current.height = size.height;
    changed();
  }, [size, changed]);

  const snapshot = () => {
    const data = pixels();
    if (!data) return;
    undo.current.push(data);
    if (undo.current.length > UNDO_DEPTH) undo.current.shift();
    setUndoCount(undo.current.length);
  };

  const point = (e: PointerEvent<HTMLCanvasElement>) => {
    const c = e.currentTarget;
    const r = c.getBoundingClientRect();
    return { x: ((e.clientX - r.left) * c.width) / r.width, y: ((e.clientY - r.top) * c.height) / r.height };
  };

  const stroke = (from: { x: number; y: number }, to: { x: number; y: number }) => {
    const g = ctx();
    if (!g) return;
    g.globalCompositeOperation = erase ? 'destination-out' : 'source-over';
    g.strokeStyle = g.fillStyle = `rgb(${COLOR.join(',')})`;
    g.lineWidth = brush;
    g.lineCap = 'round';
    g.lineJoin = 'round';
    g.beginPath();
    g.arc(to.x, to.y, brush / 2, 0, Math.PI * 2); // a click alone paints a dot
    g.fill();
    g.beginPath();
    g.moveTo(from.x, from.y);
    g.lineTo(to.x, to.y);
    g.stroke();
  };

  const down = (e: PointerEvent<HTMLCanvasElement>) => {
    if (disabled || e.button !== 0) return;
    e.preventDefault();
    e.currentTarget.setPointerCapture(e.pointerId);
    snapshot();
    const p = point(e);
    last.current = p;
    stroke(p, p);
  };
  const move = (e: PointerEvent<HTMLCanvasElement>) => {
    if (!last.current) return;
    const p = point(e);
    stroke(last.current, p);
    last.current = p;
  };
  const up = () => {
    if (!last.current) return;
    last.current = null;
    changed();
  };

  const whole = (edit: (data: ImageData) => void) => {
    const data = pixels();
    const g = ctx();
    if (!data || !g) return;
    snapshot();
    edit(data);
    g.putImageData(data, 0, 0);
    changed();
  };

  const undoOne = () => {
    const prev = undo.current.pop();
    setUndoCount(undo.current.length);
    if (prev) ctx()?.putImageData(prev, 0, 0);
    changed();
  };

  const btn = 'btn-ghost px-2 py-0.5 text-xs';
  return (
    <div data-testid="mask-editor" data-painted={painted}>
      <div className="relative w-full overflow-hidden rounded bg-black">
        <img
          src={src}
          alt={alt}
          className="block h-auto w-full select-none [image-rendering:pixelated]"
          draggable={false}
          onLoad={(e) => {
            const img = e.currentTarget;
            const s = { width: img.naturalWidth, height: img.naturalHeight };
            setSize(s);
            setBrush(Math.max(2, Math.round(Math.min(s.width, s.height) / 8)));
            onSize?.(s.width, s.height);
          }}
          data-testid="start-image-preview"
        />
        <canvas
          ref={canvas}
          className={`absolute inset-0 h-full w-full touch-none opacity-50 ${disabled ? '' : 'cursor-crosshair'}`}
          onPointerDown={down}
          onPointerMove={move}
          onPointerUp={up}
          onPointerCancel={up}
          aria-label="Mask: paint where the picture is repainted"
          data-testid="mask-canvas"
        />
      </div>
      <div className="mt-1 flex flex-wrap items-center gap-1" role="toolbar" aria-label="Mask tools">
        <button type="button" className={`${btn} ${erase ? '' : 'text-sky-300'}`} aria-pressed={!erase} onClick={() => setErase(false)} data-testid="mask-brush">
          Brush
        </button>
        <button type="button" className={`${btn} ${erase ? 'text-sky-300' : ''}`} aria-pressed={erase} onClick={() => setErase(true)} data-testid="mask-eraser">
          Eraser
        </button>
        <label className="flex items-center gap-1 text-xs text-gray-400" title="Brush size in the image's pixels">
          Size
          <input type="range" min={1} max={Math.max(8, Math.round((size ? Math.max(size.width, size.height) : 512) / 2))} value={brush} onChange={(e) => setBrush(Number(e.target.value))} className="w-20" data-testid="mask-size" />
          <span className="w-8 tabular-nums" data-testid="mask-size-value">{brush}</span>
        </label>
        <button type="button" className={btn} disabled={!undoCount} onClick={undoOne} data-testid="mask-undo">
          Undo
        </button>
        <button type="button" className={btn} disabled={!size} onClick={() => whole((d) => invertAlpha(d.data, COLOR))} data-testid="mask-invert">
          Invert
        </button>
        <button type="button" className={btn} disabled={!painted} onClick={() => whole((d) => d.data.fill(0))} data-testid="mask-clear">
          Clear mask
        </button>
      </div>
      <div className="mt-0.5 text-xs text-gray-500" data-testid="mask-state">
        {painted ? 'Inpainting: the painted part is repainted' : 'Paint a mask to repaint only part of it'}
      </div>
    </div>
  );
}
