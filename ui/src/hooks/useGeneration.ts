'use client';
/**
 * Runs belong to the engine, not to this tab. Generate submits with `?detach=1` (the engine queues it and answers
 * at once), and the preview follows one run at a time through `GET /requests/{id}/frames`, which starts with where
 * the run stands. So the form stays usable while a run goes on, a reload or a visit to /jobs re-attaches to the
 * running request (found in `GET /queue`), and leaving never cancels anything: Cancel does.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { apiFetch, apiJson, responseError } from '@/utils/api';
import { type Latent, FrameParser, latentOf } from '@/utils/engineStream';
import {
  EMPTY_QUEUE, FINISHED, IDLE, type QueueState, type RunView, applyFrame, endedWithoutEnd, nextToWatch,
} from '@/utils/runView';

export type { Phase, ResultInfo, RunView } from '@/utils/runView';

const RENDER_EVERY_MS = 50;
const QUEUE_POLL_MS = { active: 1000, idle: 5000 };

export function useGeneration(jobId: string | null, online: boolean, onResult?: () => void) {
  const [view, setView] = useState<RunView>(IDLE);
  const [queue, setQueue] = useState<QueueState>(EMPTY_QUEUE);
  const live = useRef<RunView>(IDLE);
  const latent = useRef<Latent | null>(null);
  const watch = useRef<{ id: string; abort: AbortController } | null>(null);
  const flushTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const q = `job=${encodeURIComponent(jobId ?? '')}`;

  const flush = useCallback((now = false) => {
    if (now) {
      if (flushTimer.current) clearTimeout(flushTimer.current);
      flushTimer.current = null;
      setView({ ...live.current });
      return;
    }
    flushTimer.current ??= setTimeout(() => {
      flushTimer.current = null;
      setView({ ...live.current });
    }, RENDER_EVERY_MS);
  }, []);

  const refreshQueue = useRef<() => Promise<QueueState | null>>(async () => null);

  /** Follow one run's frames until its end (or until another run is followed instead). */
  const follow = useCallback(
    async (id: string) => {
      if (!jobId || watch.current?.id === id) return;
      watch.current?.abort.abort();
      const mine = { id, abort: new AbortController() };
      watch.current = mine;
      latent.current = null;
      live.current = { ...IDLE, requestId: id, phase: 'connecting', message: 'Attaching to the run' };
      flush(true);
      try {
        const res = await apiFetch(`/api/inference/requests/${id}/frames?${q}`, { signal: mine.abort.signal });
        if (!res.ok || !res.body) throw new Error(await responseError(res));
        const reader = res.body.getReader();
        const parser = new FrameParser();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const frame of parser.push(value)) {
            if (frame.type === 'latent') latent.current = latentOf(frame);
            applyFrame(live.current, frame);
            if (frame.type === 'result') onResult?.();
          }
          flush();
        }
        parser.end();
        endedWithoutEnd(live.current);
      } catch (e) {
        if (mine.abort.signal.aborted) return; // another run is followed now, or the page is leaving
        live.current.phase = 'error';
        live.current.error = { code: 'client', message: (e as Error).message };
        live.current.message = (e as Error).message;
      } finally {
        if (watch.current === mine) {
          watch.current = null;
          flush(true);
          onResult?.();
          void refreshQueue.current(); // the next run in line, if any, is followed from here
        }
      }
    },
    [jobId, q, flush, onResult],
  );

  refreshQueue.current = async () => {
    if (!jobId) return null;
    try {
      const state = await apiJson<QueueState>(`/api/inference/queue?${q}`);
      setQueue(state);
      const next = nextToWatch(state);
      if (next && !watch.current) void follow(next);
      return state;
    } catch {
      return null; // engine starting or stopping: the next poll tries again
    }
  };

  // Re-attach on load and after navigation; keep the queue list fresh while anything waits. Only while the
  // engine answers: a stopped or starting one would be a 503 in the console every poll.
  useEffect(() => {
    if (!online) return;
    let timer: ReturnType<typeof setTimeout>;
    let stopped = false;
    const tick = async () => {
      const state = await refreshQueue.current();
      const active = Boolean(watch.current || state?.running || state?.pending.length);
      if (!stopped) timer = setTimeout(tick, active ? QUEUE_POLL_MS.active : QUEUE_POLL_MS.idle);
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [jobId, online]);

  useEffect(
    () => () => {
      watch.current?.abort.abort(); // another engine, or leaving the page: stop reading; the run goes on
      watch.current = null;
    },
    [jobId],
  );
  useEffect(() => {
    if (!online) setQueue(EMPTY_QUEUE);
  }, [online]);

  /** Queue a run; the preview follows it when nothing else is followed. Returns an error message or null. */
  const submit = useCallback(
    async (body: unknown): Promise<string | null> => {
      if (!jobId) return 'No engine selected';
      // Nothing running: the preview switches to this run now, not when the engine has answered (the last
      // run's `done` must not stand for this one's).
      const idle = !watch.current || FINISHED.includes(live.current.phase);
      if (idle) {
        watch.current?.abort.abort();
        watch.current = null;
        latent.current = null;
        live.current = { ...IDLE, phase: 'connecting', message: 'Queueing the run' };
        flush(true);
      }
      const res = await apiFetch(`/api/inference/generate?detach=1&${q}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!res.ok) {
        const message = await responseError(res);
        if (idle) {
          live.current = { ...IDLE };
          flush(true);
        }
        return message;
      }
      const { request_id } = (await res.json()) as { request_id: string };
      if (idle) void follow(request_id);
      void refreshQueue.current();
      return null;
    },
    [jobId, q, follow, flush],
  );

  const cancelRun = useCallback(
    async (id: string) => {
      if (!jobId) return;
      await apiFetch(`/api/inference/cancel/${id}?${q}`, { method: 'POST' }).catch(() => undefined);
      void refreshQueue.current();
    },
    [jobId, q],
  );

  /** A waiting run to `position` (1-based) in the engine's line; an error message or null. */
  const moveRun = useCallback(
    async (id: string, position: number): Promise<string | null> => {
      if (!jobId) return 'No engine selected';
      const res = await apiFetch(`/api/inference/queue/${id}/move?${q}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ position }),
      }).catch((e: Error) => e);
      void refreshQueue.current();
      if (res instanceof Error) return res.message;
      return res.ok ? null : responseError(res);
    },
    [jobId, q],
  );

  /** Every waiting run cancelled, and the running one too. */
  const cancelAll = useCallback(async () => {
    if (!jobId) return;
    await apiFetch(`/api/inference/queue/cancel?${q}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ running: true }),
    }).catch(() => undefined);
    void refreshQueue.current();
  }, [jobId, q]);

  /** Cancel the run the preview follows (its stream then ends with a `cancelled` error frame). */
  const cancel = useCallback(async () => {
    const id = live.current.requestId;
    if (!id) return;
    live.current.message = 'Cancelling';
    flush(true);
    await cancelRun(id);
  }, [flush, cancelRun]);

  const busy = !FINISHED.includes(view.phase);
  return { view, latent, submit, cancel, cancelRun, moveRun, cancelAll, busy, queue };
}
