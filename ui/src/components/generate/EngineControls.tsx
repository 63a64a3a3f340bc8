'use client';
/**
 * Start an engine on a GPU, stop the selected one. One engine job per `gpu_ids` (the worker runs one job per
 * GPU queue), so Start is offered for a GPU only while no engine is active on it.
 */
import Link from 'next/link';
import { useState } from 'react';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import { type Job, ACTIVE_STATUSES } from '@/utils/types';

interface Props {
  jobs: Job[];
  /** the engine Stop and the job link are for; null: none (with "Any engine" there is no single one) */
  selected: Job | null;
  onStart: (gpuIds: string) => Promise<void>;
  onStop: (jobId: string) => Promise<void>;
}

const isActive = (job: Job) => ACTIVE_STATUSES.includes(job.status) && !job.stop;

export default function EngineControls({ jobs, selected, onStart, onStop }: Props) {
  const gpus = usePoll(() => apiJson<{ gpus: { index: number; name: string }[] }>('/api/gpu'), 60000);
  const [gpuIds, setGpuIds] = useState('0');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const gpuTaken = jobs.some((j) => j.gpu_ids === gpuIds && isActive(j));
  const stoppable = selected && isActive(selected) ? selected : null;

  async function act(fn: () => Promise<void>) {
    setBusy(true);
    setError('');
    try {
      await fn();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <div className="flex flex-wrap items-center gap-2">
        <label className="text-xs text-gray-400" htmlFor="engine-gpu">
          GPU
        </label>
        <input
          id="engine-gpu"
          className="input w-20"
          list="gpu-list"
          value={gpuIds}
          onChange={(e) => setGpuIds(e.target.value.trim())}
          data-testid="engine-gpu"
          title="CUDA_VISIBLE_DEVICES for a new engine, e.g. 0 or 0,1 (without a GPU it runs on the CPU); one engine per GPU"
        />
        <datalist id="gpu-list">
          {gpus.data?.gpus.map((g) => (
            <option key={g.index} value={String(g.index)}>
              {g.name}
            </option>
          ))}
        </datalist>
        {!gpuTaken && (
          <button className="btn-primary" disabled={busy || !gpuIds} onClick={() => act(() => onStart(gpuIds))} data-testid="engine-start">
            Start engine
          </button>
        )}
        {/* without this, a GPU id typed for a new engine that already has one would just make Start vanish */}
        {gpuTaken && stoppable?.gpu_ids !== gpuIds && <span className="text-xs text-gray-500">has an engine</span>}
        {stoppable && (
          <button className="btn-danger" disabled={busy} onClick={() => act(() => onStop(stoppable.id))} data-testid="engine-stop">
            Stop engine
          </button>
        )}
        {selected && (
          <Link className="text-xs text-sky-400 hover:underline" href={`/jobs/${selected.id}`}>
            job
          </Link>
        )}
      </div>
      {error && <div className="w-full text-sm text-rose-400">{error}</div>}
    </>
  );
}
