'use client';
/**
 * The result viewer: one result large (zoom by wheel, buttons or +/-, 1:1, full screen), ←/→ through the
 * gallery, Esc to close; "Compare" picks a second result to show beside it at the same zoom; delete asks
 * once more before the file goes.
 */
import { type ReactNode, useCallback, useEffect, useRef, useState } from 'react';
import DownloadButton from './DownloadButton';
import { mediaKind } from './Media';
import ZoomPane, { type Zoom } from './ZoomPane';
import { captionParts, sampleOf } from '@/utils/outputs';
import type { OutputEntry } from '@/utils/types';

interface Props {
  items: OutputEntry[];
  index: number;
  onIndex: (index: number) => void;
  onClose: () => void;
  onDelete: (entry: OutputEntry) => Promise<void>;
  onReuse: (entry: OutputEntry) => void;
  /** the buttons that start a picture from this one (Gallery's FromImageButtons) */
  fromImage?: (entry: OutputEntry) => ReactNode;
  jobId: string | null;
  online: boolean;
}

const MIN_FACTOR = 1 / 16;
const MAX_FACTOR = 64;
const FIT: Zoom = { fit: true, factor: 1 };

function Caption({ entry, testId }: { entry: OutputEntry; testId: string }) {
  const prompt = sampleOf(entry.meta).prompt;
  return (
    <div className="min-w-0 shrink-0 px-3 py-2 text-xs text-gray-300" data-testid={testId}>
      <div className="break-words text-sm text-gray-100">{prompt || entry.name}</div>
      <div className="break-words text-gray-400">{captionParts(entry.meta).join(' · ')}</div>
    </div>
  );
}

export default function Viewer({ items, index, onIndex, onClose, onDelete, onReuse, fromImage, jobId, online }: Props) {
  const root = useRef<HTMLDivElement>(null);
  const entry = items[index];
  const [zoom, setZoom] = useState<Zoom>(FIT);
  const [scale, setScale] = useState(1);
  const [compareName, setCompareName] = useState<string | null>(null);
  const [picking, setPicking] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [error, setError] = useState('');
  const [fullscreen, setFullscreen] = useState(false);
  const other = compareName ? items.find((e) => e.name === compareName) ?? null : null;

  const zoomBy = useCallback((ratio: number) => {
    setZoom((z) => ({ ...z, factor: Math.min(MAX_FACTOR, Math.max(MIN_FACTOR, z.factor * ratio)) }));
  }, []);
  const toggleActual = () => setZoom((z) => (z.fit ? { fit: false, factor: 1 } : FIT));
  const go = useCallback(
    (delta: number) => {
      const next = index + delta;
      if (next >= 0 && next < items.length) {
        onIndex(next);
        setConfirming(false);
      }
    },
    [index, items.length, onIndex],
  );

  const toggleFullscreen = useCallback(async () => {
    try {
      if (document.fullscreenElement) await document.exitFullscreen();
      else await root.current?.requestFullscreen();
    } catch (e) {
      setError(`Full screen refused: ${(e as Error).message}`);
    }
  }, []);
  useEffect(() => {
    const onChange = () => setFullscreen(document.fullscreenElement === root.current);
    document.addEventListener('fullscreenchange', onChange);
    return () => document.removeEventListener('fullscreenchange', onChange);
  }, []);

  // Focus moves into the dialog and back to what opened it, so keyboard users are not left behind it.
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    root.current?.focus();
    return () => before?.focus?.();
  }, []);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (t && ['INPUT', 'SELECT', 'TEXTAREA'].includes(t.tagName)) return;
      if (t && ['VIDEO', 'AUDIO'].includes(t.tagName) && (e.key === 'ArrowLeft' || e.key === 'ArrowRight')) return; // seeking
      if (e.key === 'Escape') {
        if (document.fullscreenElement) return; // the browser leaves full screen first
        if (picking) setPicking(false);
        else onClose();
      } else if (e.key === 'ArrowLeft') go(-1);
      else if (e.key === 'ArrowRight') go(1);
      else if (e.key === '+' || e.key === '=') zoomBy(1.25);
      else if (e.key === '-' || e.key === '_') zoomBy(0.8);
      else if (e.key === '0') setZoom(FIT);
      else if (e.key === '1') setZoom({ fit: false, factor: 1 });
      else if (e.key === 'f') void toggleFullscreen();
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [go, onClose, picking, toggleFullscreen, zoomBy]);

  if (!entry) return null;
  const zoomable = mediaKind(entry.name) !== 'audio';

  async function remove() {
    setDeleting(true);
    setError('');
    try {
      if (compareName === entry.name) setCompareName(null);
      await onDelete(entry);
      setConfirming(false);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setDeleting(false);
    }
  }

  const btn = 'btn-ghost px-2 py-1 text-xs';
  return (
    <div
      ref={root}
      role="dialog"
      aria-modal="true"
      aria-label="Result viewer"
      tabIndex={-1}
      className="fixed inset-0 z-[60] flex flex-col bg-gray-950 outline-none"
      data-testid="viewer"
    >
      <div className="flex flex-wrap items-center gap-1.5 border-b border-gray-800 p-2" role="toolbar" aria-label="Viewer controls">
        <button className={btn} onClick={() => go(-1)} disabled={index <= 0} aria-label="Previous result" data-testid="viewer-prev">
          ←
        </button>
        <span className="text-xs tabular-nums text-gray-400" data-testid="viewer-position">
          {index + 1} / {items.length}
        </span>
        <button className={btn} onClick={() => go(1)} disabled={index >= items.length - 1} aria-label="Next result" data-testid="viewer-next">
          →
        </button>
        <span className="mx-1 h-5 w-px bg-gray-800" />
        <button className={btn} onClick={() => zoomBy(0.8)} disabled={!zoomable} aria-label="Zoom out" data-testid="viewer-zoom-out">
          −
        </button>
        <span className="w-14 text-center text-xs tabular-nums text-gray-300" aria-live="polite" data-testid="viewer-zoom">
          {zoomable ? `${Math.round(scale * 100)}%` : '—'}
        </span>
        <button className={btn} onClick={() => zoomBy(1.25)} disabled={!zoomable} aria-label="Zoom in" data-testid="viewer-zoom-in">
          +
        </button>
        <button
          className={btn}
          onClick={toggleActual}
          disabled={!zoomable}
          aria-pressed={!zoom.fit && zoom.factor === 1}
          aria-label={zoom.fit ? 'Actual size (1:1)' : 'Fit to the window'}
          data-testid="viewer-actual"
        >
          {zoom.fit ? '1:1' : 'Fit'}
        </button>
        <button className={btn} onClick={toggleFullscreen} aria-pressed={fullscreen} aria-label={fullscreen ? 'Leave full screen' : 'Full screen'} data-testid="viewer-fullscreen">
          {fullscreen ? 'Exit full screen' : 'Full screen'}
        </button>
        {other ? (
          <button className={btn} onClick={() => setCompareName(null)} aria-label="End the comparison" data-testid="viewer-compare-end">
            End compare
          </button>
        ) : (
          <button
            className={btn}
            onClick={() => setPicking((p) => !p)}
            disabled={items.length < 2}
            aria-expanded={picking}
            aria-label="Compare with another result"
            data-testid="viewer-compare"
          >
            Compare…
          </button>
        )}
        <span className="ml-auto" />
        {entry.meta?.config && (
          <button className={btn} onClick={() => onReuse(entry)} aria-label="Reuse these settings" data-testid="viewer-reuse">
            Reuse
          </button>
        )}
        {fromImage?.(entry)}
        <DownloadButton entry={entry} jobId={jobId} online={online} className={btn} />
        {confirming ? (
          <span className="flex items-center gap-1 rounded border border-rose-800 px-1.5 py-0.5 text-xs" role="group" aria-label="Confirm delete">
            Delete from disk?
            <button className="btn-danger px-2 py-0.5 text-xs" onClick={remove} disabled={deleting} data-testid="viewer-delete-confirm">
              {deleting ? 'Deleting…' : 'Delete'}
            </button>
            <button className={btn} onClick={() => setConfirming(false)} data-testid="viewer-delete-cancel">
              Keep
            </button>
          </span>
        ) : (
          <button className={`${btn} text-rose-300`} onClick={() => setConfirming(true)} aria-label="Delete this result" data-testid="viewer-delete">
            Delete
          </button>
        )}
        <button className={btn} onClick={onClose} aria-label="Close the viewer" data-testid="viewer-close">
          ✕
        </button>
      </div>
      {error && (
        <div className="px-3 py-1 text-sm text-rose-400" role="alert" data-testid="viewer-error">
          {error}
        </div>
      )}
      {picking && (
        <div className="flex gap-2 overflow-x-auto border-b border-gray-800 p-2" role="listbox" aria-label="Pick a result to compare with" data-testid="compare-picker">
          {items.map((e, i) =>
            i === index ? null : (
              <button
                key={e.path}
                role="option"
                aria-selected={false}
                className="h-16 w-16 shrink-0 overflow-hidden rounded border border-gray-700 bg-black hover:border-sky-500 focus:border-sky-500"
                onClick={() => {
                  setCompareName(e.name);
                  setPicking(false);
                }}
                aria-label={`Compare with ${sampleOf(e.meta).prompt ?? e.name}`}
                data-testid="compare-pick"
                data-name={e.name}
              >
                {mediaKind(e.name) === 'image' ? (
                  <img src={e.url} alt="" className="h-full w-full object-contain [image-rendering:pixelated]" />
                ) : (
                  <span className="text-xs text-gray-400">{mediaKind(e.name)}</span>
                )}
              </button>
            ),
          )}
        </div>
      )}
      <div className={`flex min-h-0 flex-1 gap-1 ${other ? 'flex-col md:flex-row' : ''}`} data-testid={other ? 'viewer-compare-panes' : undefined}>
        <div className="flex min-h-0 min-w-0 flex-1 flex-col">
          <ZoomPane key={entry.path} entry={entry} zoom={zoom} onWheelZoom={zoomBy} onScale={setScale} testId="viewer-pane" />
          <Caption entry={entry} testId="viewer-caption" />
        </div>
        {other && (
          <div className="flex min-h-0 min-w-0 flex-1 flex-col border-gray-800 md:border-l">
            <ZoomPane key={other.path} entry={other} zoom={zoom} onWheelZoom={zoomBy} testId="viewer-pane-b" />
            <Caption entry={other} testId="viewer-caption-b" />
          </div>
        )}
      </div>
    </div>
  );
}
