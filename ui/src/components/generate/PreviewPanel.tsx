'use client';
/**
 * The live preview: each latent frame is projected with the start frame's factors (engineStream.ts) and
 * drawn at latent resolution, then scaled up by CSS. Video latents get a frame scrubber; audio latents
 * are a time x channel heatmap.
 */
import { type RefObject, useEffect, useRef, useState } from 'react';
import { type Latent, frameCount, projectLatent } from '@/utils/engineStream';
import { timingsText } from '@/utils/timings';
import type { RunView } from '@/utils/runView';
import Media from './Media';

interface Props {
  view: RunView;
  latent: RefObject<Latent | null>;
  busy: boolean;
  onCancel: () => void;
}

function fmtSeconds(s: number | null) {
  if (s === null || !Number.isFinite(s)) return '—';
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

export default function PreviewPanel({ view, latent, busy, onCancel }: Props) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [frame, setFrame] = useState(0);
  const frames = latent.current ? frameCount(latent.current) : 0;

  // Redraw when a new latent arrives or the scrubber moves.
  useEffect(() => {
    const el = canvas.current;
    const lat = latent.current;
    if (!el || !lat) return;
    const pic = projectLatent(lat, view.spec, Math.min(frame, frameCount(lat) - 1));
    if (el.width !== pic.width) el.width = pic.width;
    if (el.height !== pic.height) el.height = pic.height;
    el.getContext('2d')!.putImageData(new ImageData(pic.data, pic.width, pic.height), 0, 0);
  }, [view.latentCount, view.spec, frame, latent]);

  // A new request starts the scrubber at its first frame.
  useEffect(() => setFrame(0), [view.requestId]);

  // Play: step through the latent frames (a rough motion preview while the video is still sampling).
  const [playing, setPlaying] = useState(false);
  useEffect(() => {
    if (!playing || frames < 2) return;
    const timer = setInterval(() => setFrame((f) => (f + 1) % frames), 250);
    return () => clearInterval(timer);
  }, [playing, frames]);

  const pct = view.total ? Math.round((100 * view.step) / view.total) : 0;
  const layout = latent.current?.layout ?? view.spec?.layout;
  return (
    <section className="card mb-4" data-testid="preview-panel" data-request-id={view.requestId ?? ""}>
      <div className="mb-3 flex items-center justify-between">
        <h2 className="text-sm font-semibold">Preview</h2>
        <div className="flex items-center gap-3 text-sm">
          <span className="text-gray-400" data-testid="run-status">
            {view.phase}
          </span>
          <button className="btn-danger" disabled={!busy} onClick={onCancel} data-testid="cancel">
            Cancel
          </button>
        </div>
      </div>
      <div className="flex flex-wrap gap-4">
        <div className="flex flex-col items-center">
          <div className="flex aspect-square w-80 max-w-full items-center justify-center rounded bg-black">
            <canvas
              ref={canvas}
              width={1}
              height={1}
              className={`pixelated max-h-80 max-w-80 ${view.latentCount ? '' : 'invisible'}`}
              style={layout === 'BLC' ? { width: '20rem', maxWidth: '100%', height: '10rem' } : { width: '20rem', maxWidth: '100%', height: 'auto', aspectRatio: `${canvasAspect(latent.current)}` }}
              data-testid="preview-canvas"
            />
          </div>
          <div className="mt-1 text-xs text-gray-500">
            {view.latentCount ? `latent of step ${view.latentStep}${layout === 'BLC' ? ' · time →, channels ↓' : ''}` : 'latent preview'}
          </div>
          {frames > 1 && (
            <div className="mt-2 flex w-80 max-w-full items-center gap-2">
              <button className="btn-ghost px-2 py-0.5 text-xs" onClick={() => setPlaying(!playing)} data-testid="frame-play">
                {playing ? 'Pause' : 'Play'}
              </button>
              <div className="flex-1">
                <input
                  type="range"
                  min={0}
                  max={frames - 1}
                  value={Math.min(frame, frames - 1)}
                  onChange={(e) => {
                    setPlaying(false);
                    setFrame(Number(e.target.value));
                  }}
                  className="w-full"
                  data-testid="frame-scrubber"
                />
                <div className="text-center text-xs text-gray-400" data-testid="frame-label">
                  latent frame {Math.min(frame, frames - 1) + 1} / {frames}
                </div>
              </div>
            </div>
          )}
        </div>
        {view.result && (
          <div className="flex flex-col items-center">
            <div className="flex aspect-square w-80 max-w-full items-center justify-center rounded bg-black">
              <Media url={view.result.url} name={view.result.path} className="max-h-80 max-w-80 w-full" />
            </div>
            <div className="mt-1 text-xs text-gray-500">
              result{view.images > 1 ? ` ${view.result.image ?? view.results} of ${view.images}` : ''} · seed {view.result.seed ?? view.seed}
            </div>
            <div className="text-xs text-gray-500" data-testid="result-timings">{timingsText(view.result.timings)}</div>
          </div>
        )}
      </div>
      <div className="mt-4">
        <div className="h-2 w-full overflow-hidden rounded bg-gray-800">
          <div className="h-full bg-sky-500 transition-[width] duration-100" style={{ width: `${pct}%` }} />
        </div>
        <div className="mt-2 flex flex-wrap gap-x-5 gap-y-1 text-sm text-gray-300">
          <span>
            step <span data-testid="step-counter">{view.step} / {view.total || '—'}</span>
          </span>
          <span>eta {fmtSeconds(view.etaS)}</span>
          <span>{view.itS ? `${view.itS.toFixed(1)} it/s` : '— it/s'}</span>
          {view.images > 1 && <span data-testid="batch-progress">image {view.image} of {view.images}</span>}
          {view.seed !== null && <span>seed {view.seed}</span>}
          {view.position ? <span>queue position {view.position}</span> : null}
          <span className="text-gray-500">{view.message}</span>
        </div>
        {view.memory && (
          <div className="mt-1 text-xs text-gray-500" data-testid="memory-plan">
            memory: {view.memory}
          </div>
        )}
        {view.error && view.phase !== 'cancelled' && (
          <div className="mt-2 text-sm text-rose-400" data-testid="run-error">
            {view.error.code}: {view.error.message}
          </div>
        )}
      </div>
    </section>
  );
}

function canvasAspect(lat: Latent | null): number {
  if (!lat) return 1;
  const s = lat.shape;
  return s[s.length - 1] / s[s.length - 2];
}
