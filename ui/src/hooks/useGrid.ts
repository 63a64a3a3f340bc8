'use client';
/**
 * One compare grid at a time, the engine's once queued: `POST /api/inference/grid?detach=1`, then its frames
 * from `GET /grid/{id}/frames` folded into a GridState (utils/gridRun.ts), redrawn at most every RENDER_EVERY_MS
 * (latents of every running cell arrive each step). The grid's id is kept per engine in localStorage, so a reload
 * or a visit elsewhere attaches again and draws the grid as it stands (a finished one whole); leaving never
 * cancels it. Cancel asks the engine to cancel the grid's cells; the stream then ends with the cells made so far.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { apiFetch, responseError } from '@/utils/api';
import { FrameParser } from '@/utils/engineStream';
import { EMPTY_GRID, type GridState, gridReduce } from '@/utils/gridRun';

const RENDER_EVERY_MS = 100;
const storageKey = (jobId: string) => `aitk-grid:${jobId}`;

export function useGrid(jobId: string | null, online: boolean, onDone?: () => void) {
  const [grid, setGrid] = useState<GridState>(EMPTY_GRID);
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const live = useRef<GridState>(EMPTY_GRID);
  const abort = useRef<AbortController | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const q = `job=${encodeURIComponent(jobId ?? '')}`;

  const flush = useCallback((now = false) => {
    if (now) {
      if (timer.current) clearTimeout(timer.current);
      timer.current = null;
      setGrid(live.current);
      return;
    }
    timer.current ??= setTimeout(() => {
      timer.current = null;
      setGrid(live.current);
    }, RENDER_EVERY_MS);
  }, []);

  /** Read a grid's frames from where it stands to its end (or until another grid is followed). */
  const follow = useCallback(
    async (id: string) => {
      abort.current?.abort();
      const mine = new AbortController();
      abort.current = mine;
      live.current = EMPTY_GRID;
      setError(null);
      setRunning(true);
      flush(true);
      try {
        const res = await apiFetch(`/api/inference/grid/${id}/frames?${q}`, { signal: mine.signal });
        if (res.status === 404 && jobId) localStorage.removeItem(storageKey(jobId)); // gone with its engine
        if (!res.ok || !res.body) throw new Error(res.status === 404 ? '' : await responseError(res));
        const reader = res.body.getReader();
        const parser = new FrameParser();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const frame of parser.push(value)) live.current = gridReduce(live.current, frame);
          flush();
        }
        parser.end();
        if (live.current.error) setError(live.current.error);
      } catch (e) {
        if (!mine.signal.aborted && (e as Error).message) setError((e as Error).message);
      } finally {
        if (abort.current === mine) {
          setRunning(false);
          flush(true);
          onDone?.();
        }
      }
    },
    [q, jobId, flush, onDone],
  );

  // the engine's grid from before a reload, attached again once the engine answers
  useEffect(() => {
    if (!jobId || !online) return;
    const id = localStorage.getItem(storageKey(jobId));
    if (id && live.current.gridId !== id) void follow(id);
  }, [jobId, online, follow]);

  useEffect(() => () => abort.current?.abort(), []);

  const run = useCallback(
    async (body: unknown) => {
      setError(null);
      try {
        const res = await apiFetch(`/api/inference/grid?detach=1&${q}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        if (!res.ok) throw new Error(await responseError(res));
        const { grid_id: id } = (await res.json()) as { grid_id: string };
        if (jobId) localStorage.setItem(storageKey(jobId), id);
        await follow(id);
      } catch (e) {
        setError((e as Error).message);
      }
    },
    [q, jobId, follow],
  );

  const cancel = useCallback(async () => {
    const id = live.current.gridId;
    if (id) await apiFetch(`/api/inference/grid/${id}/cancel?${q}`, { method: 'POST' }).catch(() => undefined);
  }, [q]);

  return { grid, running, error, run, cancel };
}
