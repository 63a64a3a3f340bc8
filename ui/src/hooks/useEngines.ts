'use client';
/**
 * Engine jobs (job_type 'inference'), their health, and which one the page works with: the one the user picked,
 * or with "Any engine" the one each run is sent to (utils/pickEngine). Starting an engine is AI Toolkit's job
 * flow: create (or reuse) a Job row for that GPU, queue it, start that GPU's queue; the worker launches
 * `python run.py` within a second. One engine job per `gpu_ids`, so several GPUs run several engines.
 */
import { useCallback, useMemo, useState } from 'react';
import { isServing, useEngineHealths } from './useEngineHealths';
import { usePoll } from './usePoll';
import { POST, apiJson, postJson } from '@/utils/api';
import { DEFAULT_ENGINE_SETTINGS, type EngineSettings, newEngineJobConfig, withEngineSettings } from '@/utils/engineSettings';
import type { EngineCandidate, EnginePick, ModelRef } from '@/utils/pickEngine';
import { withoutUiFolders } from '@/utils/uiFolders';
import { type Job, ACTIVE_STATUSES } from '@/utils/types';

/** `?job=any`: each run goes to the engine pickEngine chooses. */
export const ANY_ENGINE = 'any';

/** Where "Any engine" sent the last run, and for which model (the page says why it went there). */
export interface SentPick extends EnginePick {
  model: ModelRef;
}

export function engineJobName(gpuIds: string) {
  return `inference_engine_gpu${gpuIds.replaceAll(',', '_') || 'cpu'}`;
}

/**
 * The job's config with these settings in it: a job made elsewhere keeps the rest of its config, less the folders
 * the server writes itself (it refuses a config naming others, as a row made before that rule may).
 */
function startConfig(name: string, job: Job | undefined, settings: EngineSettings) {
  if (job) {
    try {
      return withoutUiFolders(withEngineSettings(JSON.parse(job.job_config), settings));
    } catch {
      // unreadable: started afresh below
    }
  }
  return newEngineJobConfig(name, settings);
}

/** The choice goes in the address, so a reload or a shared link comes back to it. */
function rememberChoice(choice: string) {
  const url = new URL(window.location.href);
  url.searchParams.set('job', choice);
  window.history.replaceState(window.history.state, '', url);
}

export function useEngines(initialChoice: string | null) {
  const jobs = usePoll(() => apiJson<{ jobs: Job[] }>('/api/jobs?job_type=inference').then((r) => r.jobs), 1000);
  const list = useMemo(() => jobs.data ?? [], [jobs.data]);
  const [choice, setChoice] = useState<string | null>(initialChoice); // a job id, ANY_ENGINE, or nothing yet
  const [sent, setSent] = useState<SentPick | null>(null);
  const healthOf = useEngineHealths(list);
  const anyEngine = choice === ANY_ENGINE;

  // The engine the page works with (models, queue, preview, gallery). Picked: that one. "Any engine": the one the
  // last run went to while it serves, else one that serves. Either way, failing that, the first running, else the newest.
  const selected = useMemo(() => {
    const byId = (id: string | null | undefined) => list.find((j) => j.id === id);
    const lastSent = byId(sent?.jobId);
    const own = anyEngine ? (lastSent && isServing(lastSent) ? lastSent : list.find(isServing)) : byId(choice);
    return own ?? list.find((j) => j.status === 'running') ?? list[0] ?? null;
  }, [list, choice, anyEngine, sent]);

  const candidates: EngineCandidate[] = useMemo(() => list.map((j) => ({ jobId: j.id, health: healthOf(j).health })), [list, healthOf]);
  const current = healthOf(selected);

  const select = useCallback((jobIdOrAny: string) => {
    setChoice(jobIdOrAny);
    rememberChoice(jobIdOrAny);
  }, []);

  const start = useCallback(
    async (gpuIds: string, settings: EngineSettings = DEFAULT_ENGINE_SETTINGS) => {
      const name = engineJobName(gpuIds);
      // The list may not have arrived yet: creating the job again would be "Job name already exists".
      const known = jobs.data ?? (await apiJson<{ jobs: Job[] }>('/api/jobs?job_type=inference')).jobs;
      let job = known.find((j) => j.name === name);
      if (!job || !ACTIVE_STATUSES.includes(job.status)) {
        // An engine reads its settings when it starts: write them into the job (new, or stopped) first.
        const body = { id: job?.id, name, gpu_ids: gpuIds, job_config: startConfig(name, job, settings), job_type: 'inference' };
        job = await apiJson<Job>('/api/jobs', postJson(body));
      }
      if (!ACTIVE_STATUSES.includes(job.status)) await apiJson(`/api/jobs/${job.id}/start`, POST);
      await apiJson(`/api/queue/${encodeURIComponent(job.gpu_ids)}/start`, POST);
      select(job.id);
      await jobs.refresh();
    },
    [jobs, select],
  );

  const stop = useCallback(
    async (jobId: string) => {
      await apiJson(`/api/jobs/${jobId}/stop`, POST);
      await jobs.refresh();
    },
    [jobs],
  );

  return {
    jobs: list,
    /** the radio that is on: ANY_ENGINE, else the selected engine's id */
    choice: anyEngine ? ANY_ENGINE : (selected?.id ?? null),
    anyEngine,
    selected,
    select,
    health: current.health,
    healthError: selected?.status === 'running' ? current.error : null,
    healthOf,
    candidates,
    sent,
    noteSent: setSent,
    start,
    stop,
  };
}

export type Engines = ReturnType<typeof useEngines>;
