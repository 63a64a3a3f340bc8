'use client';
/**
 * /health of every serving engine job (running, engine.json written, not told to stop), one request per engine
 * every 2 s in a single poll: the engine list shows them all and "Any engine" picks among them.
 */
import { useCallback } from 'react';
import { usePoll } from './usePoll';
import { apiJson } from '@/utils/api';
import type { EngineHealth, Job } from '@/utils/types';

export interface HealthReading {
  health: EngineHealth | null;
  error: Error | null;
  /** when the engine answered (ms since the epoch): the Jobs page's "Updated" */
  at?: number;
}

export function isServing(job: Job): boolean {
  return job.status === 'running' && !job.stop && Boolean(job.engine_ready);
}

async function readHealth(jobId: string): Promise<HealthReading> {
  try {
    const health = await apiJson<EngineHealth>(`/api/inference/health?job=${encodeURIComponent(jobId)}`);
    return { health, error: null, at: Date.now() };
  } catch (e) {
    return { health: null, error: e as Error };
  }
}

export function useEngineHealths(jobs: Job[]) {
  const serving = jobs.filter(isServing).map((j) => j.id);
  const readings = usePoll(
    async () => Object.fromEntries(await Promise.all(serving.map(async (id) => [id, await readHealth(id)] as const))),
    2000,
    serving.length > 0,
    true,
  );

  // Only a job that serves now: a reading taken before it stopped, or from before a restart (an engine killed and
  // started again answers "starting" meanwhile), must not show. A failed latest reading shows its error, no health.
  return useCallback(
    (job: Job | null): HealthReading => {
      const reading = job && isServing(job) ? readings.data?.[job.id] : undefined;
      return reading ?? { health: null, error: null };
    },
    [readings.data],
  );
}
