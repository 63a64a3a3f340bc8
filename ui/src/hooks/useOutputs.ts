'use client';
import { useCallback, useEffect, useState } from 'react';
import { usePoll } from '@/hooks/usePoll';
import { apiFetch, apiJson, errorMessage } from '@/utils/api';
import type { OutputFilter, OutputPage, OutputSort } from '@/utils/outputs';
import type { OutputEntry } from '@/utils/types';

export const PAGE_SIZE = 24;
const DELETE_AT_ONCE = 3;

async function failure(res: Response): Promise<Error> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    /* no JSON body */
  }
  return new Error(errorMessage(body) || `HTTP ${res.status}`);
}

/**
 * An engine job's results from disk (GET /api/outputs), so they show with the engine stopped: filtered by model,
 * prompt words and favourites, in the order chosen. "Load more" grows the window from the first rather than
 * fetching the next offset: results made meanwhile shift every offset, and re-reading the window keeps the list
 * without gaps or repeats.
 */
export function useOutputs(jobId: string | null, online: boolean, version: number) {
  const [limit, setLimit] = useState(PAGE_SIZE);
  const [filter, setFilter] = useState<OutputFilter>({});
  const [sort, setSort] = useState<OutputSort>('newest');
  const query = new URLSearchParams({ job: jobId ?? '', offset: '0', limit: String(limit) });
  if (filter.arch) query.set('arch', filter.arch);
  if (filter.model) query.set('model', filter.model);
  if (filter.q) query.set('q', filter.q);
  if (filter.favourites) query.set('favourites', '1');
  if (sort !== 'newest') query.set('sort', sort);
  const url = `/api/outputs?${query}`;
  const poll = usePoll(() => apiJson<OutputPage>(url), 10000, Boolean(jobId), true);
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const [marked, setMarked] = useState<Map<string, boolean>>(new Map()); // favourites set here, before the next listing

  const { refresh } = poll;
  useEffect(() => {
    if (jobId) void refresh();
  }, [jobId, url, version, refresh]);

  useEffect(() => {
    setLimit(PAGE_SIZE);
    setFilter({});
    setSort('newest');
  }, [jobId]);

  // a listing that answered after the last change knows the favourites itself
  useEffect(() => setMarked(new Map()), [poll.data]);

  const changeFilter = useCallback((f: OutputFilter) => {
    setFilter(f);
    setLimit(PAGE_SIZE);
  }, []);

  /** One result: through the engine when it runs (it refuses a file a queued request still needs as its control
   * image), else through the UI server, which deletes from disk itself. */
  const deleteOne = useCallback(
    async (entry: OutputEntry) => {
      const name = encodeURIComponent(entry.name);
      const job = encodeURIComponent(jobId ?? '');
      const res = await apiFetch(online ? `/api/inference/outputs/${name}?job=${job}` : `/api/outputs/${name}?job=${job}`, { method: 'DELETE' });
      if (!res.ok && res.status !== 404) throw await failure(res);
      // gone at once, before the next listing confirms it
      setHidden((h) => new Set(h).add(entry.path));
    },
    [jobId, online],
  );

  const remove = useCallback(
    async (entry: OutputEntry) => {
      await deleteOne(entry);
      await refresh();
    },
    [deleteOne, refresh],
  );

  /** Several results, a few at a time; each failure with its reason (the others are gone all the same). */
  const removeMany = useCallback(
    async (entries: OutputEntry[]): Promise<{ entry: OutputEntry; message: string }[]> => {
      const failed: { entry: OutputEntry; message: string }[] = [];
      const todo = [...entries];
      const worker = async () => {
        for (let e = todo.shift(); e; e = todo.shift()) {
          try {
            await deleteOne(e);
          } catch (err) {
            failed.push({ entry: e, message: (err as Error).message });
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(DELETE_AT_ONCE, entries.length) }, worker));
      await refresh();
      return failed;
    },
    [deleteOne, refresh],
  );

  /** Mark or unmark results as favourites (kept in the outputs folder: server/favourites.ts). */
  const setFavourite = useCallback(
    async (entries: OutputEntry[], favourite: boolean) => {
      setMarked((m) => new Map([...m, ...entries.map((e) => [e.name, favourite] as const)]));
      const res = await apiFetch(`/api/outputs/favourites?job=${encodeURIComponent(jobId ?? '')}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ names: entries.map((e) => e.name), favourite }),
      });
      if (!res.ok) {
        setMarked((m) => new Map([...m].filter(([name]) => !entries.some((e) => e.name === name))));
        throw await failure(res);
      }
      await refresh();
    },
    [jobId, refresh],
  );

  /** The chosen results as one zip (POST /api/outputs/zip), saved under the name the server gives it. */
  const downloadZip = useCallback(
    async (entries: OutputEntry[]) => {
      const res = await apiFetch(`/api/outputs/zip?job=${encodeURIComponent(jobId ?? '')}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ names: entries.map((e) => e.name) }),
      });
      if (!res.ok) throw await failure(res);
      const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'results.zip';
      const href = URL.createObjectURL(await res.blob());
      const a = document.createElement('a');
      a.href = href;
      a.download = name;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(href), 10_000);
    },
    [jobId],
  );

  const page = poll.data;
  const items = (page?.items ?? [])
    .filter((e) => !hidden.has(e.path))
    .map((e) => (marked.has(e.name) ? { ...e, favourite: marked.get(e.name) } : e));
  const removedShown = (page?.items.length ?? 0) - items.length;
  return {
    items,
    total: Math.max(0, (page?.total ?? 0) - removedShown),
    facets: page?.facets ?? [],
    favourites: page?.favourites ?? 0,
    error: poll.error,
    loaded: page !== null,
    filter,
    setFilter: changeFilter,
    sort,
    setSort: (s: OutputSort) => {
      setSort(s);
      setLimit(PAGE_SIZE);
    },
    hasMore: (page?.total ?? 0) > (page?.items.length ?? 0),
    loadMore: () => setLimit((l) => l + PAGE_SIZE),
    remove,
    removeMany,
    setFavourite,
    downloadZip,
    refresh,
  };
}
