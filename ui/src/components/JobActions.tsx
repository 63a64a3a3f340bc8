'use client';
/** Start / stop / delete for one job, as AI Toolkit offers them (utils/jobs.ts getAvaliableJobActions). */
import { useState } from 'react';
import { POST, apiJson } from '@/utils/api';
import { type Job, displayStatus } from '@/utils/types';

export default function JobActions({ job, onChange, compact = false }: { job: Job; onChange: () => void; compact?: boolean }) {
  const [busy, setBusy] = useState(false);
  const status = displayStatus(job);
  const canStart = ['stopped', 'error', 'completed'].includes(status);
  const canStop = status === 'running';
  const canDequeue = status === 'queued';

  async function act(path: string, confirmText?: string) {
    if (confirmText && !confirm(confirmText)) return;
    setBusy(true);
    try {
      await apiJson(path, POST);
      if (path.endsWith('/start')) await apiJson(`/api/queue/${encodeURIComponent(job.gpu_ids)}/start`, POST);
    } catch (e) {
      alert((e as Error).message);
    } finally {
      setBusy(false);
      onChange();
    }
  }

  const cls = compact ? 'btn-ghost px-2 py-0.5 text-xs' : 'btn-ghost';
  return (
    <div className="flex gap-1">
      {canStart && (
        <button className={cls} disabled={busy} onClick={() => act(`/api/jobs/${job.id}/start`)} data-testid="job-start">
          Start
        </button>
      )}
      {canStop && (
        <button className={cls} disabled={busy} onClick={() => act(`/api/jobs/${job.id}/stop`)} data-testid="job-stop">
          Stop
        </button>
      )}
      {canDequeue && (
        <button className={cls} disabled={busy} onClick={() => act(`/api/jobs/${job.id}/mark_stopped`)}>
          Remove from queue
        </button>
      )}
      <button
        className={cls}
        disabled={busy}
        onClick={() => act(`/api/jobs/${job.id}/delete`, `Delete ${job.name} and its folder?${canStop ? ' It will be stopped first.' : ''}`)}
      >
        Delete
      </button>
    </div>
  );
}
