/** The engine strip's summaries of a job and its /health (pure, so they are tested without a browser). */
import type { EnginePick, ModelRef } from '@/utils/pickEngine';
import type { EngineHealth, Job } from '@/utils/types';

function modelText(active: EngineHealth['active']): string {
  return active ? `${active.arch} (${active.name_or_path})` : 'no model loaded';
}

export function healthText(job: Job | null, health: EngineHealth | null, error: Error | null): string {
  if (!job || job.status !== 'running') return 'offline';
  if (health?.ok) {
    const state = health.busy ? 'busy' : 'idle';
    const queue = health.queue ? ` · ${health.queue} waiting` : '';
    const gb = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
    const peak = health.vram?.peak_allocated ? ` (last request's peak ${gb(health.vram.peak_allocated)} GB)` : '';
    const vram = health.vram ? ` · VRAM ${gb(health.vram.used)}/${gb(health.vram.total)} GB${peak}` : '';
    return `online · ${health.device ?? '?'} · ${state}${queue} · ${modelText(health.active)}${vram}`;
  }
  return error ? `starting… (${error.message})` : 'starting…';
}

/** One line of the engine list: what a run sent there would wait behind, and the model it holds. */
export function engineSummary(job: Job, health: EngineHealth | null): string {
  if (job.status !== 'running') return '';
  if (!health?.ok) return 'starting…';
  return `${health.busy ? 'busy' : 'idle'} · queue ${health.queue} · ${modelText(health.active)}`;
}

/** Why "Any engine" sent a run where it did. */
export function sentToText(engineName: string, pick: Pick<EnginePick, 'reason'> & { model: ModelRef }): string {
  const model = `${pick.model.arch} (${pick.model.name_or_path})`;
  if (pick.reason === 'control-images') return `sent to ${engineName}: the control images are its files`;
  return pick.reason === 'resident'
    ? `sent to ${engineName}: it holds ${model}`
    : `sent to ${engineName}: no engine held ${model}, it had the least work waiting`;
}
