/**
 * The Jobs pages' view of an InferenceEngine job: its engine's /health (health, resident model, queue, memory) in
 * place of a training job's speed and steps, and an "Updated" time that means the last time anything was heard
 * from it. An idle engine writes its Job row only when its one-line state changes, so the row's `updated_at`
 * can be hours old while the engine answers every poll; the time of the latest /health answer is newer then.
 * Pure, so it is tested as data.
 */
import type { EngineHealth, Job } from './types';

export interface EngineJobView {
  health: string;
  model: string;
  queue: string;
  memory: string;
  device: string;
  requests: string;
}

const GB = 2 ** 30;
const MB = 2 ** 20;

function size(bytes: number): string {
  return bytes >= GB ? `${(bytes / GB).toFixed(1)} GB` : `${Math.round(bytes / MB)} MB`;
}

/** What the engine fields show; `health` null: no answer (yet). */
export function engineJobView(job: Pick<Job, 'status' | 'stop' | 'engine_ready'>, health: EngineHealth | null, error: Error | null): EngineJobView {
  const none = { model: '—', queue: '—', memory: '—', device: '—', requests: '—' };
  if (job.status === 'running' && job.stop) return { health: 'stopping', ...none };
  if (job.status !== 'running') return { health: job.status === 'stopping' ? 'stopping' : 'offline', ...none };
  if (!health?.ok) return { health: error ? `starting… (${error.message})` : 'starting…', ...none };
  const waiting = `${health.queue} waiting`;
  const vram = health.vram;
  const memory = vram
    ? [
        `VRAM ${size(vram.used)} / ${size(vram.total)} used`,
        vram.allocated !== undefined ? `${size(vram.allocated)} allocated` : null,
        vram.peak_allocated ? `peak ${size(vram.peak_allocated)} (latest request)` : null,
        vram.budget ? `budget ${size(vram.budget)}` : null,
      ].filter(Boolean).join(' · ')
    : `models ${size(health.resident_bytes ?? 0)} in ${health.device ?? 'host'} memory`;
  return {
    health: `online · ${health.busy ? 'busy' : 'idle'}`,
    model: health.active ? `${health.active.arch} (${health.active.name_or_path})` : 'no model loaded',
    queue: health.busy ? `1 running · ${waiting}` : waiting,
    memory,
    device: health.device ?? '?',
    requests: String(health.counters?.requests ?? 0),
  };
}

/** The newer of the row's `updated_at` and the latest health answer (ms since the epoch). */
export function lastHeard(updatedAt: string | number, healthAt: number | null): number {
  const row = new Date(updatedAt).getTime();
  return healthAt !== null && !(healthAt < row) ? healthAt : row;
}

/** `just now`, `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`. */
export function ago(thenMs: number, nowMs: number): string {
  const s = Math.max(0, Math.round((nowMs - thenMs) / 1000));
  if (s < 2) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}
