'use client';
import { useCallback, useEffect, useState } from 'react';
import { usePoll } from '@/hooks/usePoll';
import { apiFetch, apiJson, errorMessage } from '@/utils/api';
import type { OutputFilter, OutputPage } from '@/utils/outputs';
import type { OutputEntry } from '@/utils/types';

export const PAGE_SIZE = 24;

/**
 * An engine job's results from disk (GET /api/outputs), so they show with the engine stopped. "Load more"
 * grows the window from the newest rather than fetching the next offset: results made meanwhile shift every
 * offset, and re-reading the window keeps the list without gaps or repeats.
 */
export function useOutputs(jobId: string | null, online: boolean, version: number) {
  const [limit, setLimit] = useState(PAGE_SIZE);
  const [filter, setFilter] = useState<OutputFilter>({});
  const query = new URLSearchParams({ job: jobId ?? '', offset: '0', limit: String(limit) });
  if (filter.arch) query.set('arch', filter.arch);
  if (filter.model) query.set('model', filter.model);
  const url = `/api/outputs?${query}`;
  const poll = usePoll(() => apiJson<OutputPage>(url), 10000, Boolean(jobId), true);
  const [hidden, setHidden] = useState<Set<string>>(new Set());

  const { refresh } = poll;
  useEffect(() => {
    if (jobId) void refresh();
  }, [jobId, url, version, refresh]);

  useEffect(() => {
    setLimit(PAGE_SIZE);
    setFilter({});
  }, [jobId]);

  const changeFilter = useCallback((f: OutputFilter) => {
    setFilter(f);
    setLimit(PAGE_SIZE);
  }, []);

  /**
   * Through the engine when it runs (it refuses a file a queued request still needs as its control image),
   * else through the UI server, which deletes from disk itself.
   */
  const remove = useCallback(
    async (entry: OutputEntry) => {
      const name = encodeURIComponent(entry.name);
      const job = encodeURIComponent(jobId ?? '');
      const res = await apiFetch(online ? `/api/inference/outputs/${name}?job=${job}` : `/api/outputs/${name}?job=${job}`, { method: 'DELETE' });
      if (!res.ok && res.status !== 404) {
        let body: unknown = null;
        try {
          body = await res.json();
        } catch {
          /* no JSON body */
        }
        throw new Error(errorMessage(body) || `HTTP ${res.status}`);
      }
      // gone at once, before the next listing confirms it
      setHidden((h) => new Set(h).add(entry.path));
      await refresh();
    },
    [jobId, online, refresh],
  );

  const page = poll.data;
  const items = (page?.items ?? []).filter((e) => !hidden.has(e.path));
  const removedShown = (page?.items.length ?? 0) - items.length;
  return {
    items,
    total: Math.max(0, (page?.total ?? 0) - removedShown),
    facets: page?.facets ?? [],
    error: poll.error,
    loaded: page !== null,
    filter,
    setFilter: changeFilter,
    hasMore: (page?.total ?? 0) > (page?.items.length ?? 0),
    loadMore: () => setLimit((l) => l + PAGE_SIZE),
    remove,
    refresh,
  };
}
