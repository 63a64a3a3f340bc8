'use client';
/**
 * The stage: one picture as large as the window allows, at the aspect ratio of what is shown (the result, else
 * the latent, else the requested size). Each latent frame is projected with the start frame's factors
 * (engineStream.ts) and drawn at latent resolution, then scaled up by CSS; the result replaces it once it lands,
 * until newer latents arrive (the next image of a batch). Video latents get a frame scrubber; audio latents are a
 * time x channel heatmap with the result's player under it. The run's status, progress and Cancel lie over the
 * top edge, the caption, timings and errors over the bottom one, so that none of them takes room from the picture.
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
  /** width / height the form asks for: the frame's shape before anything has been drawn */
  requested: number;
}

function fmtSeconds(s: number | null) {
  if (s === null || !Number.isFinite(s)) return '—';
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

function latentAspect(lat: Latent | null): number | null {
  if (!lat) return null;
  if (lat.layout === 'BLC') return 2; // the heatmap: time along x, channels along y
  const s = lat.shape;
  return s[s.length - 1] / s[s.length - 2];
}

const finite = (n: number | null | undefined): n is number => typeof n === 'number' && Number.isFinite(n) && n > 0;

/** Which of the result and the latents to show: the result, unless latents newer than it have arrived. */
function useShowResult(view: RunView) {
  const [latentsAtResult, setLatentsAtResult] = useState(0);
  const [pinLatent, setPinLatent] = useState(false);
  const latentCount = useRef(view.latentCount);
  latentCount.current = view.latentCount;
  useEffect(() => {
    setLatentsAtResult(latentCount.current);
    setPinLatent(false);
  }, [view.results, view.requestId]);
  const fresh = Boolean(view.result) && view.latentCount <= latentsAtResult;
  return { showResult: fresh && !pinLatent, canToggle: fresh && view.latentCount > 0, pinLatent, setPinLatent };
}

function StatusLine({ view }: { view: RunView }) {
  return (
    <div className="flex min-w-0 flex-wrap items-baseline gap-x-3 gap-y-0.5 text-xs text-gray-200 sm:gap-x-4 sm:text-sm">
      <span className="font-medium text-white" data-testid="run-status">
        {view.phase}
      </span>
      <span>
        step <span data-testid="step-counter">{view.step} / {view.total || '—'}</span>
      </span>
      <span>eta {fmtSeconds(view.etaS)}</span>
      <span>{view.itS ? `${view.itS.toFixed(1)} it/s` : '— it/s'}</span>
      {view.images > 1 && <span data-testid="batch-progress">image {view.image} of {view.images}</span>}
      {view.seed !== null && <span>seed {view.seed}</span>}
      {view.position ? <span>queue position {view.position}</span> : null}
      {view.message && <span className="text-gray-400">{view.message}</span>}
    </div>
  );
}

export default function PreviewPanel({ view, latent, busy, onCancel, requested }: Props) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [frame, setFrame] = useState(0);
  const frames = latent.current ? frameCount(latent.current) : 0;
  const { showResult, canToggle, pinLatent, setPinLatent } = useShowResult(view);

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

  const result = view.result;
  const audio = result?.kind === 'audio';
  const layout = latent.current?.layout ?? view.spec?.layout;
  const pictureIsResult = showResult && !audio; // audio keeps its heatmap on the stage, the player goes under it
  const resultAspect = result && finite(result.width) && finite(result.height) ? result.width / result.height : null;
  const aspect = (pictureIsResult ? resultAspect : null) ?? latentAspect(latent.current) ?? (finite(requested) ? requested : 1);
  const pct = view.total ? Math.round((100 * view.step) / view.total) : 0;

  return (
    <section
      className="gen-stage"
      style={{ '--ar': aspect } as React.CSSProperties}
      data-testid="preview-panel"
      data-request-id={view.requestId ?? ''}
      aria-label="Preview"
    >
      <div className="gen-picture" data-testid="picture">
        <canvas
          ref={canvas}
          width={1}
          height={1}
          className={`pixelated h-full w-full ${view.latentCount && !pictureIsResult ? '' : 'invisible'}`}
          data-testid="preview-canvas"
        />
        {pictureIsResult && result && (
          <div className="absolute inset-0" data-testid="stage-result">
            <Media url={result.url} name={result.path} className="h-full w-full object-contain" />
          </div>
        )}
        {!view.latentCount && !result && (
          <div className="absolute inset-0 flex items-center justify-center rounded border border-dashed border-gray-700 p-2 text-center text-xs text-gray-500">
            {busy ? 'waiting for the first latent' : 'the picture appears here'}
          </div>
        )}
      </div>

      <div className="gen-overlay top-0">
        <div className="h-1 w-full overflow-hidden rounded bg-gray-800/80">
          <div className="h-full bg-sky-500 transition-[width] duration-100" style={{ width: `${pct}%` }} />
        </div>
        <div className="mt-1.5 flex items-start gap-3">
          <div className="min-w-0 flex-1">
            <StatusLine view={view} />
            {view.memory && (
              <div className="truncate text-xs text-gray-400" title={view.memory} data-testid="memory-plan">
                memory: {view.memory}
              </div>
            )}
          </div>
          {canToggle && !audio && (
            <button className="btn-ghost shrink-0 bg-gray-950/70 px-2 py-0.5 text-xs" onClick={() => setPinLatent(!pinLatent)} aria-pressed={pinLatent} data-testid="show-latent">
              {pinLatent ? 'Show result' : 'Show latent'}
            </button>
          )}
          <button className="btn-danger shrink-0" disabled={!busy} onClick={onCancel} data-testid="cancel">
            Cancel
          </button>
        </div>
      </div>

      <div className="gen-overlay bottom-0 space-y-1 text-xs text-gray-300">
        {frames > 1 && (
          <div className="flex max-w-md items-center gap-2">
            <button className="btn-ghost bg-gray-950/70 px-2 py-0.5 text-xs" onClick={() => { setPinLatent(true); setPlaying(!playing); }} data-testid="frame-play">
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
                  setPinLatent(true); // scrubbing is about the latents: show them
                  setFrame(Number(e.target.value));
                }}
                className="w-full"
                aria-label="Latent frame"
                data-testid="frame-scrubber"
              />
              <div className="text-center text-gray-400" data-testid="frame-label">
                latent frame {Math.min(frame, frames - 1) + 1} / {frames}
              </div>
            </div>
          </div>
        )}
        {audio && showResult && result && <Media url={result.url} name={result.path} />}
        <div>
          {pictureIsResult && result
            ? `result${view.images > 1 ? ` ${result.image ?? view.results} of ${view.images}` : ''} · seed ${result.seed ?? view.seed}`
            : view.latentCount
              ? `latent of step ${view.latentStep}${layout === 'BLC' ? ' · time →, channels ↓' : ''}`
              : 'latent preview'}
        </div>
        {result && <div data-testid="result-timings">{timingsText(result.timings)}</div>}
        {view.error && view.phase !== 'cancelled' && (
          <div className="text-sm text-rose-400" data-testid="run-error">
            {view.error.code}: {view.error.message}
          </div>
        )}
      </div>
    </section>
  );
}
