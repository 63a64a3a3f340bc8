/** The engine strip's one-line summary of a job and its /health (pure, so it is tested without a browser). */
import type { EngineHealth, Job } from '@/utils/types';

export function healthText(job: Job | null, health: EngineHealth | null, error: Error | null): string {
  if (!job || job.status !== 'running') return 'offline';
  if (health?.ok) {
    const model = health.active ? `${health.active.arch} (${health.active.name_or_path})` : 'no model loaded';
    const state = health.busy ? 'busy' : 'idle';
    const queue = health.queue ? ` · ${health.queue} waiting` : '';
    const gb = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
    const peak = health.vram?.peak_allocated ? ` (last request's peak ${gb(health.vram.peak_allocated)} GB)` : '';
    const vram = health.vram ? ` · VRAM ${gb(health.vram.used)}/${gb(health.vram.total)} GB${peak}` : '';
    return `online · ${health.device ?? '?'} · ${state}${queue} · ${model}${vram}`;
  }
  return error ? `starting… (${error.message})` : 'starting…';
}
