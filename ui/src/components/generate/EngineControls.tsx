'use client';
/**
 * Start an engine on a GPU, stop the selected one. One engine job per `gpu_ids` (the worker runs one job per
 * GPU queue), so Start is offered for a GPU only while no engine is active on it, with the settings it starts
 * with (compile, VRAM budget); they show what that GPU's job last started with.
 */
import Link from 'next/link';
import { useEffect, useState } from 'react';
import { engineJobName } from '@/hooks/useEngines';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import { COMPILE_HELP, COMPILE_MODES, type CompileMode, DEFAULT_ENGINE_SETTINGS, type EngineSettings, settingsOf, vramBudgetError } from '@/utils/engineSettings';
import { type Job, ACTIVE_STATUSES } from '@/utils/types';

interface Props {
  jobs: Job[];
  /** the engine Stop and the job link are for; null: none (with "Any engine" there is no single one) */
  selected: Job | null;
  onStart: (gpuIds: string, settings: EngineSettings) => Promise<void>;
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
  const jobForGpu = jobs.find((j) => j.name === engineJobName(gpuIds)); // the job Start starts (useEngines)
  const [settings, setSettings] = useState<EngineSettings>(DEFAULT_ENGINE_SETTINGS);
  const [touched, setTouched] = useState(false);
  // What this GPU's job last started with, until the user chooses: a list arriving late must not undo a choice.
  useEffect(() => {
    if (jobForGpu && !touched) setSettings(settingsOf(jobForGpu));
  }, [jobForGpu?.id]); // only when the job changes: `touched` and the settings are read, not watched
  const choose = (change: Partial<EngineSettings>) => {
    setTouched(true);
    setSettings({ ...settings, ...change });
  };
  const budgetError = vramBudgetError(settings.vramBudgetGb);

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
          <>
            <label className="text-xs text-gray-400" htmlFor="engine-compile">
              Compile
            </label>
            <select
              id="engine-compile"
              className="input w-20"
              value={settings.compile}
              onChange={(e) => choose({ compile: e.target.value as CompileMode })}
              title={COMPILE_HELP[settings.compile]}
              data-testid="engine-compile"
            >
              {COMPILE_MODES.map((m) => (
                <option key={m} value={m} title={COMPILE_HELP[m]}>
                  {m}
                </option>
              ))}
            </select>
            <label className="text-xs text-gray-400" htmlFor="engine-vram-budget">
              VRAM GB
            </label>
            <input
              id="engine-vram-budget"
              className="input w-24"
              inputMode="decimal"
              placeholder="whole card"
              value={settings.vramBudgetGb}
              onChange={(e) => choose({ vramBudgetGb: e.target.value })}
              title="The most of the GPU this engine may use (a memory plan fits every model into it); empty: the whole card"
              data-testid="engine-vram-budget"
            />
            <button className="btn-primary" disabled={busy || !gpuIds || !!budgetError} onClick={() => act(() => onStart(gpuIds, settings))} data-testid="engine-start">
              Start engine
            </button>
          </>
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
      {(error || (!gpuTaken && budgetError)) && <div className="w-full text-sm text-rose-400" data-testid="engine-controls-error">{error || budgetError}</div>}
    </>
  );
}
