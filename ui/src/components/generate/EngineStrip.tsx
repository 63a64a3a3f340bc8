'use client';
/** Which engine, on which GPU, and is it alive: start/stop an engine job and show its /health. */
import Link from 'next/link';
import { useState } from 'react';
import StatusBadge from '@/components/StatusBadge';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import { healthText } from '@/utils/engineHealth';
import { type EngineHealth, type Job, ACTIVE_STATUSES, displayStatus } from '@/utils/types';

interface Props {
  jobs: Job[];
  selected: Job | null;
  onSelect: (id: string) => void;
  health: EngineHealth | null;
  healthError: Error | null;
  onStart: (gpuIds: string) => Promise<void>;
  onStop: (jobId: string) => Promise<void>;
}

export default function EngineStrip({ jobs, selected, onSelect, health, healthError, onStart, onStop }: Props) {
  const gpus = usePoll(() => apiJson<{ gpus: { index: number; name: string }[] }>('/api/gpu'), 60000);
  const [gpuIds, setGpuIds] = useState('0');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const active = selected && ACTIVE_STATUSES.includes(selected.status) && !selected.stop;

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
    <section className="card mb-4 flex flex-wrap items-center gap-x-4 gap-y-2" data-testid="engine-strip">
      <div className="flex min-w-0 max-w-full flex-wrap items-center gap-2">
        <span className="text-sm font-semibold">Engine</span>
        {jobs.length > 1 ? (
          <select className="input w-56 max-w-full" value={selected?.id ?? ''} onChange={(e) => onSelect(e.target.value)} data-testid="engine-select">
            {jobs.map((j) => (
              <option key={j.id} value={j.id}>
                {j.name} (GPU {j.gpu_ids}, {j.status})
              </option>
            ))}
          </select>
        ) : (
          <span className="break-all text-sm text-gray-300">{selected?.name ?? 'none yet'}</span>
        )}
        {selected && <StatusBadge status={displayStatus(selected)} testId="engine-status" />}
      </div>
      {/* wraps rather than truncates: on a phone the health line is what says why the engine is not ready */}
      <div className="min-w-0 flex-1 basis-full break-words text-sm text-gray-300 sm:basis-auto" data-testid="engine-health" title={selected?.info}>
        {healthText(selected, health, healthError)}
        {/* an idle engine's info restates the health line (state and model): only progress and start-up add to it */}
        {selected?.info && selected.status === 'running' && !(health?.ok && !health.busy) && <span className="ml-2 text-gray-500">— {selected.info}</span>}
        {selected && selected.status === 'error' && <span className="ml-2 text-rose-400">{selected.info}</span>}
      </div>
      <div className="flex items-center gap-2">
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
          title="CUDA_VISIBLE_DEVICES for the engine, e.g. 0 or 0,1 (without a GPU it runs on the CPU)"
        />
        <datalist id="gpu-list">
          {gpus.data?.gpus.map((g) => (
            <option key={g.index} value={String(g.index)}>
              {g.name}
            </option>
          ))}
        </datalist>
        {active ? (
          <button className="btn-danger" disabled={busy} onClick={() => act(() => onStop(selected!.id))} data-testid="engine-stop">
            Stop engine
          </button>
        ) : (
          <button className="btn-primary" disabled={busy || !gpuIds} onClick={() => act(() => onStart(gpuIds))} data-testid="engine-start">
            Start engine
          </button>
        )}
        {selected && (
          <Link className="text-xs text-sky-400 hover:underline" href={`/jobs/${selected.id}`}>
            job
          </Link>
        )}
      </div>
      {error && <div className="w-full text-sm text-rose-400">{error}</div>}
    </section>
  );
}
