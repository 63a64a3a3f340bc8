/**
 * What the preview shows of one engine run, folded from its frames. Pure (no React, no fetch) so that the
 * page's two ways of seeing a run (watching it from its start, or re-attaching after a reload, which begins
 * with the run's start frame and its newest status/progress) are tested as data.
 */
import type { Frame, LatentSpec, Stage } from '@/utils/engineStream';

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
  image?: number;
  images?: number;
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
  results: number;
  image: number;
  images: number;
  error: { code: string; message: string } | null;
  memory: string | null; // the memory plan and why (start frame's prediction, then the plan's status frame)
  elapsedMs: number;
  startedAt: number | null; // the engine's clock (ms) at the start frame: elapsed survives a re-attach
}

export const IDLE: RunView = {
  requestId: null, phase: 'idle', message: '', step: 0, total: 0, etaS: null, itS: null, position: null, seed: null,
  spec: null, outputKind: null, latentStep: 0, latentCount: 0, result: null, results: 0, image: 1, images: 1,
  error: null, memory: null, elapsedMs: 0, startedAt: null,
};

/** The memory plan's line: where the components live, then why it was planned again and why its bits. */
export function memoryLine(memory: unknown): string | null {
  const m = memory as { summary?: string; replanned?: string | null; quality?: string | null } | null | undefined;
  return m?.summary ? [m.summary, m.replanned, m.quality].filter(Boolean).join(' · ') : null;
}

export const FINISHED: Phase[] = ['idle', 'done', 'error', 'cancelled'];

/** Fold one frame into `v` (mutated: the hook renders a copy at most every 50 ms). Latent payloads are the
 * hook's business; here they only count. */
export function applyFrame(v: RunView, frame: Frame): void {
  const h = frame.header as Record<string, unknown>;
  v.startedAt ??= frame.header.t;
  v.elapsedMs = frame.header.t - v.startedAt;
  switch (frame.type) {
    case 'start': {
      const config = h.config as { sample?: { seed?: number; num_inference_steps?: number }; batch?: { count: number } };
      v.requestId = frame.header.request_id;
      v.spec = h.latent as LatentSpec;
      v.outputKind = (h.output as { kind: string }).kind;
      v.seed = config.sample?.seed ?? null;
      v.total = config.sample?.num_inference_steps ?? 0;
      v.images = config.batch?.count ?? 1;
      v.memory = memoryLine((h.memory as { predicted?: unknown } | undefined)?.predicted);
      v.startedAt = frame.header.t;
      v.elapsedMs = 0;
      v.phase = 'queued';
      break;
    }
    case 'status':
      v.phase = (h.stage as Phase) ?? v.phase;
      v.message = String(h.message ?? '');
      v.position = typeof h.position === 'number' ? h.position : null;
      if (typeof h.image === 'number') v.image = h.image;
      v.memory = memoryLine(h.memory) ?? v.memory;
      break;
    case 'progress':
      v.phase = 'sampling';
      v.position = null;
      v.step = h.step as number;
      v.total = h.total as number;
      v.etaS = (h.eta_s as number | null) ?? null;
      v.itS = (h.it_s as number | null) ?? null;
      break;
    case 'latent':
      v.latentCount += 1;
      v.latentStep = h.step as number;
      break;
    case 'result':
      v.result = h as unknown as ResultInfo;
      v.results += 1;
      break;
    case 'error':
      v.error = { code: String(h.code), message: String(h.message) };
      v.message = String(h.message); // not the stage's last words ("Loading sd1: unet") beside an error
      v.phase = h.code === 'cancelled' ? 'cancelled' : 'error';
      break;
    case 'end':
      if (h.ok) {
        v.phase = 'done';
        v.message = `finished in ${(v.elapsedMs / 1000).toFixed(1)} s`;
      } else if (v.phase !== 'cancelled') v.phase = 'error';
      break;
  }
}

/** A stream that closed without an `end` frame: the engine went away (stopped, killed) mid-run. */
export function endedWithoutEnd(v: RunView): void {
  if (FINISHED.includes(v.phase)) return;
  v.phase = 'error';
  v.error = { code: 'engine_gone', message: 'The engine stopped during this run' };
  v.message = v.error.message;
}

export interface QueueRow {
  request_id: string;
  arch: string;
  name_or_path: string;
  prompt: string;
  seed: number;
  batch_count: number;
  detached: boolean;
  stage: string;
  position: number;
  created: number;
  /** seconds until it should end, counted from now; null: nothing comparable has run yet (queue_eta.py) */
  eta_s?: number | null;
  /** a waiting run's own estimated length, and what that rests on */
  run_s?: number | null;
  eta_basis?: 'measured' | 'scaled' | 'rate' | null;
  /** the running one, from its first step */
  progress?: { step: number; total: number; it_s: number; image: number; images: number };
}

export interface QueueState {
  running: QueueRow | null;
  /** the other runs sampling with it: requests on one model share steps
   * (README "Requests sharing steps (`engine.max_batch`)") */
  sharing?: QueueRow[];
  pending: QueueRow[];
}

export const EMPTY_QUEUE: QueueState = { running: null, pending: [] };

/** The run the preview should follow: the one running, else the next in line (it shows as queued, then runs). */
export function nextToWatch(queue: QueueState): string | null {
  return queue.running?.request_id ?? queue.pending[0]?.request_id ?? null;
}
