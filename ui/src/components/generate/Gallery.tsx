'use client';
/**
 * The engine job's results, read from its folder on disk (so they stay with the engine stopped), a page at a
 * time: filtered by model, by words of the prompt and to favourites, ordered by date or seed. A click opens the
 * viewer; the checkbox (or Ctrl/Cmd+click, Shift+click for a range) selects, and a selection is downloaded as one
 * zip, favourited or deleted together. The star marks a favourite (kept beside the files: server/favourites.ts).
 * A result dragged onto a control-image slot becomes that control image without an upload (utils/outputDrag.ts).
 */
import { useEffect, useRef, useState } from 'react';
import Media, { mediaKind } from './Media';
import Viewer from './Viewer';
import { useOutputs } from '@/hooks/useOutputs';
import { OUTPUT_DRAG_TYPE, dragPayload } from '@/utils/outputDrag';
import { type OutputSort, captionParts, sampleOf } from '@/utils/outputs';
import type { OutputEntry, UpscalerFile } from '@/utils/types';
import { isImageResult } from './fromImage';

const SORT_LABELS: Record<OutputSort, string> = {
  newest: 'Newest first',
  oldest: 'Oldest first',
  seed: 'Seed, low to high',
  seed_desc: 'Seed, high to low',
};
const SEARCH_DELAY_MS = 250;

interface Props {
  jobId: string | null;
  online: boolean;
  /** bumped when a generation finishes: list again now rather than at the next poll */
  version: number;
  onReuse: (entry: OutputEntry) => void;
  /** the result as the form's start image or video (absent: the form's family cannot start from one) */
  onUseAsInput?: (entry: OutputEntry) => void;
  /** which results the form can start from (default: images) */
  canUseAsInput?: (entry: OutputEntry) => boolean;
  /** queue the result upscaled ×2 by its own family and settings, where that family can */
  canUpscale?: (entry: OutputEntry) => boolean;
  onUpscale?: (entry: OutputEntry) => void;
  /** the upscaler files an upscale may resize with, the one chosen ('' : Lanczos), and choosing one */
  upscalers?: UpscalerFile[];
  upscaler?: string;
  onUpscaler?: (path: string) => void;
}

/** "Use as input" and "Upscale ×2" on a result (where the form's and the result's families can). */
function FromImageButtons(props: {
  entry: OutputEntry;
  onUseAsInput?: (entry: OutputEntry) => void;
  canUseAsInput?: (entry: OutputEntry) => boolean;
  canUpscale?: (entry: OutputEntry) => boolean;
  onUpscale?: (entry: OutputEntry) => void;
  className: string;
  testPrefix: string;
}) {
  const { entry, onUseAsInput, canUseAsInput = isImageResult, canUpscale, onUpscale, className, testPrefix } = props;
  const [queued, setQueued] = useState(false);
  const usable = onUseAsInput && canUseAsInput(entry);
  const upscale = onUpscale && isImageResult(entry) && canUpscale?.(entry);
  if (!usable && !upscale) return null;
  const btn = 'btn-ghost px-2 py-0.5 text-xs';
  return (
    <div className={className}>
      {usable && (
        <button type="button" className={btn} onClick={() => onUseAsInput(entry)} title="Start the next one from this one (image-to-image, inpainting, video-to-video)" data-testid={`${testPrefix}-use-input`}>
          Use as input
        </button>
      )}
      {upscale && (
        <button
          type="button"
          className={btn}
          onClick={() => {
            onUpscale(entry);
            setQueued(true);
          }}
          title="Twice the size: resized, then refined by its own model, prompt and seed"
          data-testid={`${testPrefix}-upscale`}
        >
          {queued ? 'Upscale ×2 again' : 'Upscale ×2'}
        </button>
      )}
    </div>
  );
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

export default function Gallery(props: Props) {
  const { jobId, online, version, onReuse, onUseAsInput, canUseAsInput, canUpscale, onUpscale, upscalers, upscaler, onUpscaler } = props;
  const outputs = useOutputs(jobId, online, version);
  const [open, setOpen] = useState<number | null>(null);
  const [search, setSearch] = useState('');
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState('');
  const anchor = useRef<number | null>(null); // the last item clicked: Shift+click selects from it
  const { items, filter, setFilter } = outputs;

  // after a delete the list is shorter: stay on the same place, or close when nothing is left
  useEffect(() => {
    if (open !== null && open >= items.length) setOpen(items.length ? items.length - 1 : null);
  }, [open, items.length]);

  // the search is sent once typing pauses, not per key
  useEffect(() => {
    const q = search.trim();
    if ((filter.q ?? '') === q) return;
    const timer = setTimeout(() => setFilter({ ...filter, q: q || null }), SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [search, filter, setFilter]);

  // a new engine starts with nothing selected and no search
  useEffect(() => {
    setSelected(new Set());
    setSearch('');
  }, [jobId]);

  // the selection holds only what is listed (a delete, a filter or another page drops the rest)
  const names = items.map((e) => e.name).join('\n');
  useEffect(() => {
    const listed = new Set(names.split('\n'));
    setSelected((s) => (s.size && [...s].some((n) => !listed.has(n)) ? new Set([...s].filter((n) => listed.has(n))) : s));
  }, [names]);

  const chosen = items.filter((e) => selected.has(e.name));
  const toggle = (i: number, range: boolean) => {
    const from = range && anchor.current !== null ? Math.min(anchor.current, i) : i;
    const to = range && anchor.current !== null ? Math.max(anchor.current, i) : i;
    const on = !selected.has(items[i].name);
    setSelected((s) => {
      const next = new Set(s);
      for (let k = from; k <= to; k++) (on ? next.add(items[k].name) : next.delete(items[k].name));
      return next;
    });
    anchor.current = i;
  };

  async function bulk(action: () => Promise<string>) {
    setBusy(true);
    setNotice('');
    try {
      setNotice(await action());
    } catch (e) {
      setNotice((e as Error).message);
    } finally {
      setBusy(false);
    }
  }

  const deleteChosen = () =>
    bulk(async () => {
      setConfirmDelete(false);
      const failed = await outputs.removeMany(chosen);
      setSelected(new Set(failed.map((f) => f.entry.name)));
      if (!failed.length) return `Deleted ${chosen.length}.`;
      return `Deleted ${chosen.length - failed.length}; kept ${failed.length}: ${failed[0].message}`;
    });

  const archs = [...new Set(outputs.facets.map((f) => f.arch).filter((a): a is string => Boolean(a)))];
  return (
    <section className="card" data-testid="gallery" data-loaded={outputs.loaded} aria-label="Results">
      <div className="mb-3 flex flex-wrap items-center gap-2">
        <h2 className="text-sm font-semibold">
          Results (<span data-testid="gallery-total">{outputs.total}</span>)
        </h2>
        {onUpscale && onUpscaler && upscalers && upscalers.length > 0 && (
          <select
            className="input w-auto"
            aria-label="Upscaler for Upscale ×2"
            title="What Upscale ×2 resizes with before it refines"
            value={upscaler ?? ''}
            onChange={(e) => onUpscaler(e.target.value)}
            data-testid="gallery-upscaler"
          >
            <option value="">Upscale with Lanczos</option>
            {upscalers.map((u) => (
              <option key={u.path} value={u.path}>
                Upscale with {u.name}
              </option>
            ))}
          </select>
        )}
        <input
          type="search"
          className="input w-full sm:w-56"
          placeholder="Search prompts"
          aria-label="Search results by prompt"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
          data-testid="gallery-search"
        />
        <select
          className="input w-auto"
          aria-label="Order of the results"
          value={outputs.sort}
          onChange={(e) => outputs.setSort(e.target.value as OutputSort)}
          data-testid="gallery-sort"
        >
          {(Object.keys(SORT_LABELS) as OutputSort[]).map((s) => (
            <option key={s} value={s}>
              {SORT_LABELS[s]}
            </option>
          ))}
        </select>
        <button
          className={`btn-ghost px-2 py-1 text-xs ${filter.favourites ? 'text-amber-300' : ''}`}
          aria-pressed={Boolean(filter.favourites)}
          onClick={() => setFilter({ ...filter, favourites: !filter.favourites })}
          data-testid="gallery-favourites-only"
          title="Show only favourites"
        >
          ★ Favourites ({outputs.favourites})
        </button>
        {!online && outputs.loaded && outputs.total > 0 && <span className="text-xs text-gray-500">from disk · engine off</span>}
        {archs.length > 0 && (
          <select
            className="input ml-auto w-full sm:w-64"
            aria-label="Show results of one model"
            value={filterValue(filter.arch, filter.model)}
            onChange={(e) => setFilter({ ...filter, ...parseFilter(e.target.value) })}
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
      {items.length > 0 && (
        <div className="mb-2 flex flex-wrap items-center gap-2 text-xs text-gray-400" data-testid="gallery-bulk">
          <span data-testid="gallery-selected-count">{chosen.length} selected</span>
          <button className="btn-ghost px-2 py-0.5 text-xs" onClick={() => setSelected(new Set(items.map((e) => e.name)))} data-testid="gallery-select-all">
            Select all shown
          </button>
          {chosen.length > 0 && (
            <>
              <button className="btn-ghost px-2 py-0.5 text-xs" onClick={() => setSelected(new Set())} data-testid="gallery-select-none">
                Clear
              </button>
              <button className="btn-ghost px-2 py-0.5 text-xs" disabled={busy} onClick={() => bulk(async () => (await outputs.downloadZip(chosen), `Zipped ${chosen.length}.`))} data-testid="gallery-bulk-download" title="One .zip of the selected files, named by prompt and seed">
                Download .zip
              </button>
              <button className="btn-ghost px-2 py-0.5 text-xs" disabled={busy} onClick={() => bulk(async () => (await outputs.setFavourite(chosen, !chosen.every((e) => e.favourite)), ''))} data-testid="gallery-bulk-favourite">
                {chosen.every((e) => e.favourite) ? '☆ Unfavourite' : '★ Favourite'}
              </button>
              {confirmDelete ? (
                <span className="flex items-center gap-1">
                  Delete {chosen.length} file(s)?
                  <button className="btn-ghost px-2 py-0.5 text-xs text-rose-400" disabled={busy} onClick={deleteChosen} data-testid="gallery-bulk-delete-confirm">
                    Yes, delete
                  </button>
                  <button className="btn-ghost px-2 py-0.5 text-xs" onClick={() => setConfirmDelete(false)}>
                    No
                  </button>
                </span>
              ) : (
                <button className="btn-ghost px-2 py-0.5 text-xs text-rose-400" disabled={busy} onClick={() => setConfirmDelete(true)} data-testid="gallery-bulk-delete">
                  Delete
                </button>
              )}
            </>
          )}
          {notice && <span data-testid="gallery-notice">{notice}</span>}
        </div>
      )}
      {outputs.error && <div className="mb-2 text-sm text-rose-400">{outputs.error.message}</div>}
      {outputs.loaded && !items.length && (
        <div className="text-sm text-gray-500" data-testid="gallery-empty">
          {filter.q || filter.favourites ? 'Nothing matches.' : filter.arch ? 'Nothing from this model.' : 'Nothing generated yet.'}
        </div>
      )}
      <ul className="grid grid-cols-2 gap-2 sm:grid-cols-[repeat(auto-fill,minmax(11rem,1fr))] sm:gap-3">
        {items.map((o, i) => {
          const prompt = sampleOf(o.meta).prompt;
          return (
            <li
              key={o.path}
              className={`relative min-w-0 rounded border bg-gray-950 p-2 ${selected.has(o.name) ? 'border-sky-500' : 'border-gray-800'}`}
              data-testid="gallery-item"
              data-name={o.name}
              data-selected={selected.has(o.name)}
              data-favourite={Boolean(o.favourite)}
              draggable
              onDragStart={(e) => {
                e.dataTransfer.setData(OUTPUT_DRAG_TYPE, dragPayload(o));
                e.dataTransfer.setData('text/uri-list', new URL(o.url, window.location.href).href);
                e.dataTransfer.effectAllowed = 'copy';
              }}
            >
              <button
                className="flex aspect-square w-full items-center justify-center overflow-hidden rounded bg-black focus-visible:outline-2 focus-visible:outline-sky-500"
                onClick={(e) => {
                  if (e.shiftKey || e.ctrlKey || e.metaKey || selected.size) return toggle(i, e.shiftKey);
                  setOpen(i);
                }}
                aria-label={`Open ${prompt ?? o.name} in the viewer`}
                data-testid="gallery-open"
              >
                <Thumb entry={o} />
              </button>
              <input
                type="checkbox"
                className="absolute top-3 left-3 h-4 w-4 accent-sky-500"
                checked={selected.has(o.name)}
                onChange={(e) => toggle(i, (e.nativeEvent as MouseEvent).shiftKey)}
                aria-label={`Select ${prompt ?? o.name}`}
                data-testid="gallery-select"
              />
              <button
                className={`absolute top-3 right-3 rounded bg-black/60 px-1 text-lg leading-none ${o.favourite ? 'text-amber-300' : 'text-gray-300 hover:text-amber-200'}`}
                aria-pressed={Boolean(o.favourite)}
                aria-label={o.favourite ? 'Remove from favourites' : 'Add to favourites'}
                onClick={() => bulk(async () => (await outputs.setFavourite([o], !o.favourite), ''))}
                data-testid="gallery-favourite"
              >
                {o.favourite ? '★' : '☆'}
              </button>
              <div className="mt-1 space-y-0.5 text-xs text-gray-400" data-testid="gallery-caption">
                <div className="line-clamp-2 break-words text-gray-300" title={prompt}>
                  {prompt ?? o.name}
                </div>
                <div className="break-words">{captionParts(o.meta).join(' · ')}</div>
              </div>
              <FromImageButtons entry={o} onUseAsInput={onUseAsInput} canUseAsInput={canUseAsInput} canUpscale={canUpscale} onUpscale={onUpscale} className="mt-1 flex flex-wrap gap-1" testPrefix="gallery" />
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
          fromImage={(e) => (
            <FromImageButtons
              entry={e}
              onUseAsInput={onUseAsInput && ((x) => (onUseAsInput(x), setOpen(null)))}
              canUseAsInput={canUseAsInput}
              canUpscale={canUpscale}
              onUpscale={onUpscale}
              className="contents"
              testPrefix="viewer"
            />
          )}
          jobId={jobId}
          online={online}
        />
      )}
    </section>
  );
}
