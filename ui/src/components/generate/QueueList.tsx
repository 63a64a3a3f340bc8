'use client';
/**
 * The engine's queue as the page sees it (`GET /queue`, polled by useGeneration): the running request (its seed,
 * progress and a thumbnail of its newest latent) and every one waiting, with its place in line and an ETA
 * (the engine's estimate from runs it measured: extensions_built_in/inference_engine/queue_eta.py). Runs queued
 * from another tab, a script or curl show too: the queue is the engine's. A waiting run moves to the front, up
 * or down (`POST /queue/{id}/move`) or is cancelled; Cancel all empties the line and stops the running one.
 */
import { type RefObject, useEffect, useRef, useState } from 'react';
import { type Latent, projectLatent } from '@/utils/engineStream';
import { etaOf, moveTargets } from '@/utils/queueView';
import type { QueueState, RunView } from '@/utils/runView';

interface Props {
  queue: QueueState;
  onCancel: (requestId: string) => void;
  onMove?: (requestId: string, position: number) => Promise<string | null>;
  onCancelAll?: () => Promise<void>;
  /** the run the preview follows and its newest latent: the running row's thumbnail when it is that run */
  view?: RunView;
  latent?: RefObject<Latent | null>;
}

function label(prompt: string) {
  return prompt.length > 80 ? `${prompt.slice(0, 79)}…` : prompt;
}

/** The newest latent of the running request, projected as the preview projects it, 40 px high. */
function LatentThumb({ view, latent }: { view: RunView; latent: RefObject<Latent | null> }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [drawn, setDrawn] = useState(false);
  useEffect(() => {
    const el = canvas.current;
    const lat = latent.current;
    if (!el || !lat) return;
    const pic = projectLatent(lat, view.spec, 0);
    if (el.width !== pic.width) el.width = pic.width;
    if (el.height !== pic.height) el.height = pic.height;
    el.getContext('2d')!.putImageData(new ImageData(pic.data, pic.width, pic.height), 0, 0);
    setDrawn(true);
  }, [view.latentCount, view.spec, latent]);
  return (
    <canvas
      ref={canvas}
      className={`h-10 w-10 shrink-0 rounded bg-black object-contain [image-rendering:pixelated] ${drawn ? '' : 'opacity-30'}`}
      aria-label="preview of the running request"
      data-testid="queue-running-thumb"
      data-drawn={drawn}
    />
  );
}

export default function QueueList({ queue, onCancel, onMove, onCancelAll, view, latent }: Props) {
  const [error, setError] = useState('');
  const [confirmAll, setConfirmAll] = useState(false);
  if (!queue.running && !queue.pending.length) return null;
  const running = queue.running;
  const sharing = queue.sharing ?? [];
  const followed = running && view && latent && view.requestId === running.request_id;
  const progress = running?.progress;
  const runningEta = running ? etaOf(running, true) : null;

  const move = async (id: string, position: number) => {
    setError((await onMove?.(id, position)) ?? '');
  };

  return (
    <section className="card mb-4" data-testid="queue">
      <div className="mb-2 flex flex-wrap items-center gap-2">
        <h2 className="text-sm font-semibold">
          Queue <span className="font-normal text-gray-400">({queue.pending.length} waiting)</span>
        </h2>
        {onCancelAll &&
          (confirmAll ? (
            <span className="ml-auto flex items-center gap-1 text-xs">
              Cancel {queue.pending.length + (running ? 1 : 0) + sharing.length} run(s)?
              <button
                className="btn-ghost px-2 py-0.5 text-xs text-rose-400"
                onClick={async () => {
                  setConfirmAll(false);
                  await onCancelAll();
                }}
                data-testid="queue-cancel-all-confirm"
              >
                Yes, cancel all
              </button>
              <button className="btn-ghost px-2 py-0.5 text-xs" onClick={() => setConfirmAll(false)}>
                No
              </button>
            </span>
          ) : (
            <button className="btn-ghost ml-auto px-2 py-0.5 text-xs" onClick={() => setConfirmAll(true)} data-testid="queue-cancel-all">
              Cancel all
            </button>
          ))}
      </div>
      {error && <div className="mb-1 text-xs text-rose-400" data-testid="queue-error">{error}</div>}
      <ol className="space-y-1.5 text-sm">
        {running && (
          <li className="flex min-w-0 items-center gap-2 rounded border border-sky-900 p-1.5" data-testid="queue-running">
            {followed ? <LatentThumb view={view} latent={latent} /> : null}
            <div className="min-w-0 flex-1">
              <div className="flex min-w-0 items-center gap-2">
                <span className="shrink-0 rounded bg-sky-900 px-1.5 text-xs text-sky-200">running</span>
                <span className="truncate" title={running.prompt}>
                  {label(running.prompt)}
                </span>
              </div>
              <div className="mt-0.5 flex flex-wrap gap-x-2 text-xs text-gray-400">
                <span>{running.arch}</span>
                <span data-testid="queue-running-seed">seed {running.seed}</span>
                <span>{progress ? `step ${progress.step}/${progress.total}` : running.stage}</span>
                {progress && progress.images > 1 ? <span>image {progress.image} of {progress.images}</span> : null}
                {runningEta && (
                  <span className="text-gray-300" title={runningEta.title} data-testid="queue-eta">
                    {runningEta.text}
                  </span>
                )}
              </div>
            </div>
          </li>
        )}
        {sharing.map((row) => (
          <li key={row.request_id} className="flex min-w-0 items-center gap-2 rounded border border-sky-950 p-1.5" data-testid="queue-sharing" data-request-id={row.request_id}>
            <span className="shrink-0 rounded bg-sky-950 px-1.5 text-xs text-sky-300" title="sampling in the same steps as the running one">
              sharing
            </span>
            <span className="min-w-0 flex-1 truncate" title={row.prompt}>
              {label(row.prompt)}
            </span>
            <span className="shrink-0 text-xs text-gray-400">seed {row.seed}</span>
            <button
              className="btn-ghost shrink-0 px-2 py-0.5 text-xs"
              onClick={() => onCancel(row.request_id)}
              aria-label={`Cancel the run sharing steps, seed ${row.seed}`}
              data-testid="queue-sharing-cancel"
            >
              Cancel
            </button>
          </li>
        ))}
        {queue.pending.map((row) => {
          const to = moveTargets(row.position, queue.pending.length);
          const eta = etaOf(row);
          return (
            <li key={row.request_id} className="min-w-0 rounded border border-gray-800 p-1.5" data-testid="queue-item" data-request-id={row.request_id}>
              <div className="flex min-w-0 items-center gap-2">
                <span className="shrink-0 rounded bg-gray-800 px-1.5 text-xs text-gray-300" data-testid="queue-position">
                  #{row.position}
                </span>
                <span className="truncate" title={row.prompt}>
                  {label(row.prompt)}
                </span>
              </div>
              <div className="mt-0.5 flex flex-wrap items-center gap-x-2 gap-y-1 text-xs text-gray-400">
                <span>{row.arch}</span>
                <span>seed {row.seed}</span>
                {row.batch_count > 1 ? <span>×{row.batch_count}</span> : null}
                <span className="text-gray-300" title={eta.title} data-testid="queue-eta">
                  {eta.text}
                </span>
                <span className="ml-auto flex shrink-0 gap-0.5">
                  {onMove &&
                    (['top', 'up', 'down'] as const).map((dir) => (
                      <button
                        key={dir}
                        className="btn-ghost px-1.5 py-0.5 text-xs disabled:opacity-30"
                        disabled={to[dir] === null}
                        onClick={() => to[dir] !== null && void move(row.request_id, to[dir])}
                        aria-label={`Move queued run ${row.position} ${dir === 'top' ? 'to the front' : dir}`}
                        title={dir === 'top' ? 'Run next' : dir === 'up' ? 'Move up' : 'Move down'}
                        data-testid={`queue-move-${dir}`}
                      >
                        {dir === 'top' ? '⤒' : dir === 'up' ? '↑' : '↓'}
                      </button>
                    ))}
                  <button
                    className="btn-ghost px-2 py-0.5 text-xs"
                    onClick={() => onCancel(row.request_id)}
                    aria-label={`Cancel queued run ${row.position}`}
                    data-testid="queue-cancel"
                  >
                    Cancel
                  </button>
                </span>
              </div>
            </li>
          );
        })}
      </ol>
    </section>
  );
}
