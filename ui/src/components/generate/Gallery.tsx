'use client';
/**
 * The engine job's results, read from its folder on disk (so they stay with the engine stopped), newest first,
 * a page at a time, filtered by model; a click opens the viewer.
 */
import { useEffect, useState } from 'react';
import Media, { mediaKind } from './Media';
import Viewer from './Viewer';
import { useOutputs } from '@/hooks/useOutputs';
import { captionParts, sampleOf } from '@/utils/outputs';
import type { OutputEntry } from '@/utils/types';

interface Props {
  jobId: string | null;
  online: boolean;
  /** bumped when a generation finishes: list again now rather than at the next poll */
  version: number;
  onReuse: (entry: OutputEntry) => void;
}

function Thumb({ entry }: { entry: OutputEntry }) {
  const kind = mediaKind(entry.name);
  // the grid shows a still inside the open button; videos play in the viewer, audio in its player below
  if (kind === 'video')
    return <video src={`${entry.url}#t=0.001`} className="max-h-full max-w-full" muted playsInline preload="metadata" data-testid="media-video" />;
  if (kind === 'audio')
    return (
      <span className="text-3xl text-gray-500" aria-hidden>
        ♪
      </span>
    );
  return <img src={entry.url} alt="" loading="lazy" className="max-h-full w-full object-contain [image-rendering:pixelated]" data-testid="media-image" />;
}

/** `value` of the model filter: "" (all), `arch`, or `["arch","model"]` (model names may hold any character). */
function filterValue(arch?: string | null, model?: string | null): string {
  return arch ? (model ? JSON.stringify([arch, model]) : arch) : '';
}

function parseFilter(value: string): { arch: string | null; model: string | null } {
  if (!value.startsWith('[')) return { arch: value || null, model: null };
  const [arch, model] = JSON.parse(value) as [string, string];
  return { arch, model };
}

export default function Gallery({ jobId, online, version, onReuse }: Props) {
  const outputs = useOutputs(jobId, online, version);
  const [open, setOpen] = useState<number | null>(null);
  const { items } = outputs;

  // after a delete the list is shorter: stay on the same place, or close when nothing is left
  useEffect(() => {
    if (open !== null && open >= items.length) setOpen(items.length ? items.length - 1 : null);
  }, [open, items.length]);

  const archs = [...new Set(outputs.facets.map((f) => f.arch).filter((a): a is string => Boolean(a)))];
  return (
    <section className="card" data-testid="gallery" data-loaded={outputs.loaded} aria-label="Results">
      <div className="mb-3 flex flex-wrap items-center gap-2">
        <h2 className="text-sm font-semibold">
          Results (<span data-testid="gallery-total">{outputs.total}</span>)
        </h2>
        {!online && outputs.loaded && outputs.total > 0 && <span className="text-xs text-gray-500">from disk · engine off</span>}
        {archs.length > 0 && (
          <select
            className="input ml-auto w-full sm:w-64"
            aria-label="Show results of one model"
            value={filterValue(outputs.filter.arch, outputs.filter.model)}
            onChange={(e) => outputs.setFilter(parseFilter(e.target.value))}
            data-testid="gallery-filter"
          >
            <option value="">All models</option>
            {archs.map((arch) => {
              const models = outputs.facets.filter((f) => f.arch === arch);
              const count = models.reduce((n, f) => n + f.count, 0);
              return (
                <optgroup key={arch} label={arch}>
                  <option value={arch}>
                    {arch}: all ({count})
                  </option>
                  {models.map((f) =>
                    f.model ? (
                      <option key={f.model} value={filterValue(arch, f.model)}>
                        {f.model} ({f.count})
                      </option>
                    ) : null,
                  )}
                </optgroup>
              );
            })}
          </select>
        )}
      </div>
      {outputs.error && <div className="mb-2 text-sm text-rose-400">{outputs.error.message}</div>}
      {outputs.loaded && !items.length && (
        <div className="text-sm text-gray-500">{outputs.filter.arch ? 'Nothing from this model.' : 'Nothing generated yet.'}</div>
      )}
      <ul className="grid grid-cols-2 gap-2 sm:grid-cols-[repeat(auto-fill,minmax(11rem,1fr))] sm:gap-3">
        {items.map((o, i) => {
          const prompt = sampleOf(o.meta).prompt;
          return (
            <li key={o.path} className="min-w-0 rounded border border-gray-800 bg-gray-950 p-2" data-testid="gallery-item" data-name={o.name}>
              <button
                className="flex aspect-square w-full items-center justify-center overflow-hidden rounded bg-black focus-visible:outline-2 focus-visible:outline-sky-500"
                onClick={() => setOpen(i)}
                aria-label={`Open ${prompt ?? o.name} in the viewer`}
                data-testid="gallery-open"
              >
                <Thumb entry={o} />
              </button>
              <div className="mt-1 space-y-0.5 text-xs text-gray-400" data-testid="gallery-caption">
                <div className="line-clamp-2 break-words text-gray-300" title={prompt}>
                  {prompt ?? o.name}
                </div>
                <div className="break-words">{captionParts(o.meta).join(' · ')}</div>
              </div>
              {mediaKind(o.name) === 'audio' && <Media url={o.url} name={o.name} />}
            </li>
          );
        })}
      </ul>
      {outputs.hasMore && (
        <div className="mt-3 flex justify-center">
          <button className="btn-ghost" onClick={outputs.loadMore} data-testid="gallery-more">
            Load more ({outputs.total - items.length} left)
          </button>
        </div>
      )}
      {open !== null && items[open] && (
        <Viewer
          items={items}
          index={open}
          onIndex={setOpen}
          onClose={() => setOpen(null)}
          onDelete={outputs.remove}
          onReuse={(e) => {
            onReuse(e);
            setOpen(null);
          }}
          jobId={jobId}
          online={online}
        />
      )}
    </section>
  );
}
