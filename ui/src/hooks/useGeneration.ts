'use client';
/**
 * One generation at a time: POST /api/inference/generate, read the binary frame stream as it arrives,
 * keep the newest latent for the preview and expose a snapshot for rendering (throttled, so 150 steps/s
 * do not mean 150 React renders/s).
 */
import { useCallback, useRef, useState } from 'react';
import { apiFetch, errorMessage } from '@/utils/api';
import { type Frame, type Latent, type LatentSpec, type Stage, FrameParser, latentOf } from '@/utils/engineStream';

export type Phase = 'idle' | 'connecting' | Stage | 'done' | 'error' | 'cancelled';

export interface ResultInfo {
  path: string;
  url: string;
  kind: 'image' | 'video' | 'audio';
  ext: string;
  width?: number | null;
  height?: number | null;
  frames?: number | null;
  fps?: number | null;
  duration_s?: number | null;
  seed?: number;
  timings?: Record<string, number | null>;
}

export interface RunView {
  requestId: string | null;
  phase: Phase;
  message: string;
  step: number;
  total: number;
  etaS: number | null;
  itS: number | null;
  position: number | null;
  seed: number | null;
  spec: LatentSpec | null;
  outputKind: string | null;
  latentStep: number;
  latentCount: number;
  result: ResultInfo | null;
  error: { code: string; message: string } | null;
  elapsedMs: number;
}

const IDLE: RunView = {
  requestId: null, phase: 'idle', message: '', step: 0, total: 0, etaS: null, itS: null, position: null, seed: null,
  spec: null, outputKind: null, latentStep: 0, latentCount: 0, result: null, error: null, elapsedMs: 0,
};

const RENDER_EVERY_MS = 50;

export function useGeneration(jobId: string | null, onFinished?: (view: RunView) => void) {
  const [view, setView] = useState<RunView>(IDLE);
  const live = useRef<RunView>(IDLE);
  const latent = useRef<Latent | null>(null);
  const abort = useRef<AbortController | null>(null);
  const flushTimer = useRef<ReturnType<typeof setTimeout> | null>(null);

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

  const apply = useCallback((frame: Frame, t0: number) => {
    const h = frame.header as Record<string, unknown>;
    const v = live.current;
    v.elapsedMs = performance.now() - t0;
    switch (frame.type) {
      case 'start': {
        const config = h.config as { sample?: { seed?: number; num_inference_steps?: number } };
        v.requestId = frame.header.request_id;
        v.spec = h.latent as LatentSpec;
        v.outputKind = (h.output as { kind: string }).kind;
        v.seed = config.sample?.seed ?? null;
        v.total = config.sample?.num_inference_steps ?? 0;
        v.phase = 'queued';
        break;
      }
      case 'status':
        v.phase = (h.stage as Phase) ?? v.phase;
        v.message = String(h.message ?? '');
        v.position = typeof h.position === 'number' ? h.position : null;
        break;
      case 'progress':
        v.phase = 'sampling';
        v.step = h.step as number;
        v.total = h.total as number;
        v.etaS = (h.eta_s as number | null) ?? null;
        v.itS = (h.it_s as number | null) ?? null;
        break;
      case 'latent':
        latent.current = latentOf(frame);
        v.latentStep = latent.current.step;
        v.latentCount += 1;
        break;
      case 'result':
        v.result = h as unknown as ResultInfo;
        break;
      case 'error':
        v.error = { code: String(h.code), message: String(h.message) };
        v.phase = h.code === 'cancelled' ? 'cancelled' : 'error';
        break;
      case 'end':
        if (h.ok) {
          v.phase = 'done';
          v.message = `finished in ${(v.elapsedMs / 1000).toFixed(1)} s`;
        }
        else if (v.phase !== 'cancelled') v.phase = 'error';
        break;
    }
  }, []);

  const run = useCallback(
    async (body: unknown) => {
      if (!jobId) return;
      abort.current?.abort();
      const ac = new AbortController();
      abort.current = ac;
      latent.current = null;
      live.current = { ...IDLE, phase: 'connecting', message: 'Connecting to the engine' };
      flush(true);
      const t0 = performance.now();
      try {
        const res = await apiFetch(`/api/inference/generate?job=${encodeURIComponent(jobId)}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: ac.signal,
        });
        if (!res.ok || !res.body) {
          const text = await res.text();
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            /* plain text */
          }
          throw new Error(errorMessage(parsed) || `HTTP ${res.status}`);
        }
        const reader = res.body.getReader();
        const parser = new FrameParser();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const frame of parser.push(value)) apply(frame, t0);
          flush();
        }
        parser.end();
        if (!['done', 'error', 'cancelled'].includes(live.current.phase)) {
          live.current.phase = 'error';
          live.current.error = { code: 'internal', message: 'the stream ended without an end frame' };
        }
      } catch (e) {
        const v = live.current;
        if (ac.signal.aborted) {
          v.phase = 'cancelled';
          v.error ??= { code: 'cancelled', message: 'Cancelled' };
        } else {
          v.phase = 'error';
          v.error = { code: 'client', message: (e as Error).message };
        }
      } finally {
        if (abort.current === ac) abort.current = null;
        flush(true);
        onFinished?.({ ...live.current });
      }
    },
    [jobId, apply, flush, onFinished],
  );

  /** Ask the engine to cancel (the stream then ends with a `cancelled` error); drop the connection if it hangs. */
  const cancel = useCallback(async () => {
    const ac = abort.current;
    const id = live.current.requestId;
    if (!ac) return;
    if (!id || !jobId) return ac.abort();
    live.current.message = 'Cancelling';
    flush(true);
    try {
      await apiFetch(`/api/inference/cancel/${id}?job=${encodeURIComponent(jobId)}`, { method: 'POST' });
    } catch {
      /* the abort below covers it */
    }
    setTimeout(() => abort.current === ac && ac.abort(), 5000);
  }, [jobId, flush]);

  const busy = !['idle', 'done', 'error', 'cancelled'].includes(view.phase);
  return { view, latent, run, cancel, busy };
}
