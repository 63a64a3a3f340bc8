'use client';
/**
 * An InferenceEngine job's overview fields on the Jobs pages: its engine's health, resident model, queue and
 * memory from GET /api/inference/health (the UI's proxy adds the engine's token), polled every 2 s while the job
 * runs, instead of a training job's speed and steps; and "Updated" as the last time anything was heard from it
 * (utils/engineJobView.ts says why the row's own time goes stale).
 */
import { useEffect, useRef, useState } from 'react';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import { ago, engineJobView, lastHeard } from '@/utils/engineJobView';
import type { EngineHealth, Job } from '@/utils/types';

/** The engine's /health while the job runs, and when it last answered (ms since the epoch). */
export function useEngineJobHealth(job: Job | null) {
  const serving = Boolean(job && job.status === 'running' && !job.stop && job.engine_ready);
  const at = useRef<number | null>(null);
  const poll = usePoll(
    async () => {
      const health = await apiJson<EngineHealth>(`/api/inference/health?job=${encodeURIComponent(job!.id)}`);
      at.current = Date.now();
      return health;
    },
    2000,
    serving,
    true,
  );
  return { health: serving ? poll.data : null, error: serving ? poll.error : null, at: serving ? at.current : null };
}

/** Re-render once a second, so "12 s ago" counts up between polls. */
export function useNow(): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return now;
}

export function UpdatedAt({ job, healthAt, testId }: { job: Job; healthAt: number | null; testId?: string }) {
  const now = useNow();
  const heard = lastHeard(job.updated_at, healthAt);
  return (
    <span title={new Date(heard).toLocaleString()} data-testid={testId} data-ms={heard}>
      {new Date(heard).toLocaleTimeString()} ({ago(heard, now)})
    </span>
  );
}

export default function EngineJobFields({ job }: { job: Job }) {
  const { health, error, at } = useEngineJobHealth(job);
  const v = engineJobView(job, health, error);
  const rows: [string, string, string][] = [
    ['Engine', v.health, 'engine-job-health'],
    ['Resident model', v.model, 'engine-job-model'],
    ['Queue', v.queue, 'engine-job-queue'],
    ['Memory', v.memory, 'engine-job-memory'],
    ['Device', v.device, 'engine-job-device'],
    ['Requests served', v.requests, 'engine-job-requests'],
  ];
  return (
    <>
      {rows.map(([label, value, testId]) => (
        <div key={label} className={label === 'Memory' || label === 'Resident model' ? 'col-span-2' : ''}>
          <div className="label">{label}</div>
          <div className="break-words text-gray-200" data-testid={testId}>
            {value}
          </div>
        </div>
      ))}
      <div>
        <div className="label">Updated</div>
        <div className="text-gray-200">
          <UpdatedAt job={job} healthAt={at} testId="job-updated" />
        </div>
      </div>
    </>
  );
}
