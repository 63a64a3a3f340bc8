'use client';
/**
 * Engine jobs (job_type 'inference') and the health of the selected one. Starting an engine is AI
 * Toolkit's job flow: create (or reuse) a Job row for that GPU, queue it, start that GPU's queue; the
 * worker launches `python run.py` within a second.
 */
import { useCallback, useMemo, useState } from 'react';
import { usePoll } from './usePoll';
import { apiJson, postJson } from '@/utils/api';
import { type EngineHealth, type Job, ACTIVE_STATUSES } from '@/utils/types';

export function engineJobName(gpuIds: string) {
  return `inference_engine_gpu${gpuIds.replaceAll(',', '_') || 'cpu'}`;
}

function engineJobConfig(name: string) {
  return {
    job: 'extension',
    config: {
      name,
      process: [{ type: 'InferenceEngine', sqlite_db_path: './aitk_db.db', device: 'auto', engine: {} }],
    },
    meta: { name, version: '1.0' },
  };
}

export function useEngines(preferredJobId: string | null) {
  const jobs = usePoll(() => apiJson<{ jobs: Job[] }>('/api/jobs?job_type=inference').then((r) => r.jobs), 1000);
  const [chosen, setChosen] = useState<string | null>(preferredJobId);

  // The chosen engine, else the first running one, else the newest.
  const selected = useMemo(() => {
    const list = jobs.data ?? [];
    return list.find((j) => j.id === chosen) ?? list.find((j) => j.status === 'running') ?? list[0] ?? null;
  }, [jobs.data, chosen]);

  const running = selected?.status === 'running' && !selected.stop;
  const health = usePoll(
    () => apiJson<EngineHealth>(`/api/inference/health?job=${encodeURIComponent(selected!.id)}`),
    2000,
    Boolean(running && selected?.engine_ready),
    true,
  );

  const start = useCallback(
    async (gpuIds: string) => {
      const name = engineJobName(gpuIds);
      // The list may not have arrived yet: creating the job again would be "Job name already exists".
      const list = jobs.data ?? (await apiJson<{ jobs: Job[] }>('/api/jobs?job_type=inference')).jobs;
      let job = list.find((j) => j.name === name);
      if (!job) job = await apiJson<Job>('/api/jobs', postJson({ name, gpu_ids: gpuIds, job_config: engineJobConfig(name), job_type: 'inference' }));
      if (!ACTIVE_STATUSES.includes(job.status)) await apiJson(`/api/jobs/${job.id}/start`);
      await apiJson(`/api/queue/${encodeURIComponent(job.gpu_ids)}/start`);
      setChosen(job.id);
      await jobs.refresh();
    },
    [jobs],
  );

  const stop = useCallback(
    async (jobId: string) => {
      await apiJson(`/api/jobs/${jobId}/stop`);
      await jobs.refresh();
    },
    [jobs],
  );

  return {
    jobs: jobs.data ?? [],
    selected,
    select: setChosen,
    running,
    // health from a previous engine must not show once that one stopped, nor once the latest poll failed
    // (an engine killed and started again answers "starting" while its predecessor's last health is kept)
    health: running && selected?.engine_ready && !health.error ? health.data : null,
    healthError: running ? health.error : null,
    start,
    stop,
  };
}
