'use client';
/**
 * One result at a zoom: "fit" scales it into the pane, 1:1 shows image pixels as screen pixels, and `factor`
 * multiplies either. Sizes are set in pixels rather than with a CSS transform so the pane's scrollbars
 * reach every part of a zoomed picture. Mount one per entry (key it): the natural size is measured once, on load.
 */
import { useEffect, useRef, useState } from 'react';
import { mediaKind } from './Media';
import type { OutputEntry } from '@/utils/types';

export interface Zoom {
  fit: boolean;
  factor: number;
}

interface Props {
  entry: OutputEntry;
  zoom: Zoom;
  /** wheel up/down over the pane: zoom in/out by this ratio */
  onWheelZoom: (ratio: number) => void;
  /** the scale shown (1 = 1:1), for the zoom readout */
  onScale?: (scale: number) => void;
  testId: string;
}

export default function ZoomPane({ entry, zoom, onWheelZoom, onScale, testId }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const [boxSize, setBoxSize] = useState({ w: 0, h: 0 });
  const [natural, setNatural] = useState({ w: 0, h: 0 });
  const kind = mediaKind(entry.name);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setBoxSize({ w: el.clientWidth, h: el.clientHeight }));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  // React's onWheel listener is passive: preventDefault (no page scroll while zooming) needs our own
  const wheel = useRef(onWheelZoom);
  wheel.current = onWheelZoom;
  useEffect(() => {
    const el = box.current;
    if (!el || kind === 'audio') return;
    const handler = (e: WheelEvent) => {
      e.preventDefault();
      wheel.current(e.deltaY < 0 ? 1.25 : 0.8);
    };
    el.addEventListener('wheel', handler, { passive: false });
    return () => el.removeEventListener('wheel', handler);
  }, [kind]);

  const fitScale = natural.w && boxSize.w ? Math.min(boxSize.w / natural.w, boxSize.h / natural.h) : 1;
  const scale = (zoom.fit ? fitScale : 1) * zoom.factor;
  const sized = natural.w > 0;
  useEffect(() => {
    if (sized) onScale?.(scale);
  }, [scale, sized, onScale]);

  const style = sized ? { width: `${natural.w * scale}px`, height: `${natural.h * scale}px`, maxWidth: 'none' } : undefined;
  return (
    <div ref={box} className="relative flex min-h-0 min-w-0 flex-1 overflow-auto bg-black" data-testid={testId} data-name={entry.name}>
      {kind === 'audio' ? (
        <audio src={entry.url} className="m-auto w-full max-w-xl px-4" controls autoPlay preload="metadata" data-testid="viewer-audio" />
      ) : kind === 'video' ? (
        <video
          src={entry.url}
          className="m-auto shrink-0"
          style={style}
          controls
          autoPlay
          loop
          muted
          playsInline
          onLoadedMetadata={(e) => setNatural({ w: e.currentTarget.videoWidth, h: e.currentTarget.videoHeight })}
          data-testid="viewer-video"
        />
      ) : (
        <img
          src={entry.url}
          alt={entry.name}
          className="m-auto shrink-0 [image-rendering:pixelated]"
          style={style}
          draggable={false}
          onLoad={(e) => setNatural({ w: e.currentTarget.naturalWidth, h: e.currentTarget.naturalHeight })}
          data-testid="viewer-image"
        />
      )}
    </div>
  );
}
