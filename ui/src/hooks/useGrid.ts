'use client';
/**
 * One compare grid at a time: `POST /api/inference/grid` and its frame stream folded into a GridState
 * (utils/gridRun.ts), redrawn at most every RENDER_EVERY_MS (latents of every running cell arrive each step).
 * Cancel asks the engine to cancel the grid's cells; the stream then ends with the cells made so far. Leaving
 * the page drops the stream, which cancels the cells still to come.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { apiFetch, errorMessage } from '@/utils/api';
import { FrameParser } from '@/utils/engineStream';
import { EMPTY_GRID, type GridState, gridReduce } from '@/utils/gridRun';

const RENDER_EVERY_MS = 100;

export function useGrid(jobId: string | null, onDone?: () => void) {
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

  useEffect(() => () => abort.current?.abort(), []);

  const run = useCallback(
    async (body: unknown) => {
      abort.current?.abort();
      const mine = new AbortController();
      abort.current = mine;
      live.current = EMPTY_GRID;
      setError(null);
      setRunning(true);
      flush(true);
      try {
        const res = await apiFetch(`/api/inference/grid?${q}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: mine.signal,
        });
        if (!res.ok || !res.body) {
          const text = await res.text();
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {}
          throw new Error(errorMessage(parsed) || `HTTP ${res.status}`);
        }
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
        if (!mine.signal.aborted) setError((e as Error).message);
      } finally {
        if (abort.current === mine) {
          setRunning(false);
          flush(true);
          onDone?.();
        }
      }
    },
    [q, flush, onDone],
  );

  const cancel = useCallback(async () => {
    const id = live.current.gridId;
    if (id) await apiFetch(`/api/inference/grid/${id}/cancel?${q}`, { method: 'POST' }).catch(() => undefined);
  }, [q]);

  return { grid, running, error, run, cancel };
}
