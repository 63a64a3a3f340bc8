/**
 * Where "Any engine" sends a run. Loading a model costs far more than waiting behind a few runs (seconds to
 * minutes against a run's steps), so an engine that already holds the form's model wins; among those (or, when
 * none holds it, among all ready ones) the one with the least work ahead; a tie goes to the first listed.
 * An engine reads control images only from its own assets and output folder, so a run with any stays where they are.
 */
import type { EngineHealth } from './types';

/** One engine job and its latest /health: null while it is not running, still starting, or not answering. */
export interface EngineCandidate {
  jobId: string;
  health: EngineHealth | null;
}

export interface EnginePick {
  jobId: string;
  /** `control-images`: the run's control images are its files; `resident`: it holds the model already;
   * `least-work`: none does, so the least busy one */
  reason: 'control-images' | 'resident' | 'least-work';
}

export interface ModelRef {
  arch: string;
  name_or_path: string;
}

/** The runs an engine would finish before a new one starts: those waiting, and the one it is on. */
export function workAhead(health: EngineHealth): number {
  return health.queue + (health.busy ? 1 : 0);
}

export function holdsModel(health: EngineHealth, model: ModelRef): boolean {
  // the engine reports the family it holds; the form's arch may carry a tag (zimage:turbo)
  return health.active?.arch === model.arch.split(':')[0] && health.active.name_or_path === model.name_or_path;
}

/** `controlImagesOn`: the engine whose files the run's control images are, when it has any. */
export function pickEngine(engines: EngineCandidate[], model: ModelRef, controlImagesOn: string | null = null): EnginePick | null {
  const ready = engines.filter((e): e is { jobId: string; health: EngineHealth } => Boolean(e.health?.ok));
  if (controlImagesOn) return ready.some((e) => e.jobId === controlImagesOn) ? { jobId: controlImagesOn, reason: 'control-images' } : null;
  const holding = ready.filter((e) => holdsModel(e.health, model));
  const pool = holding.length ? holding : ready;
  if (!pool.length) return null;
  const best = pool.reduce((a, b) => (workAhead(b.health) < workAhead(a.health) ? b : a));
  return { jobId: best.jobId, reason: holding.length ? 'resident' : 'least-work' };
}
