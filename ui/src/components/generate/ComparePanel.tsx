'use client';
/**
 * The Generate page's Compare mode: which checkpoint of a training run to keep. Pick a training job (the engine's
 * `GET /grid/jobs`: every job whose LoRAs are in its LoRA folders), tick the checkpoints to compare (by step),
 * give prompts (the job's own sample prompts to start with) and LoRA strengths, and the engine runs the grid
 * with the form's model and settings: checkpoints as columns, prompts as rows, strengths as pages. The grid
 * fills in live (GridView), and its pages land in the gallery as one item each.
 */
import { useCallback, useEffect, useMemo, useState } from 'react';
import { useGrid } from '@/hooks/useGrid';
import { apiJson } from '@/utils/api';
import { type GridJob, defaultPrompts, doneCount, gridBody, parseMultipliers, promptLines } from '@/utils/gridRun';
import type { OutputEntry } from '@/utils/types';
import GridView from './GridView';

type Base = { model: Record<string, unknown>; sample: Record<string, unknown>; stream?: Record<string, unknown> };

interface Props {
  jobId: string | null;
  online: boolean;
  /** the form's request (null: the form cannot make one yet) */
  base: () => Base | null;
  formPrompt: string;
  onReuse: (entry: OutputEntry) => void;
  onResult: () => void;
}

/** The replay body as a download link (a data URL: small, and nothing to clean up). */
function replayHref(replay: unknown): string {
  return `data:application/json;charset=utf-8,${encodeURIComponent(JSON.stringify(replay, null, 2))}`;
}

export default function ComparePanel({ jobId, online, base, formPrompt, onReuse, onResult }: Props) {
  const [jobs, setJobs] = useState<GridJob[]>([]);
  const [jobsError, setJobsError] = useState<string | null>(null);
  const [jobName, setJobName] = useState('');
  const [ticked, setTicked] = useState<Set<string>>(new Set());
  const [prompts, setPrompts] = useState('');
  const [strengths, setStrengths] = useState('1');
  const { grid, running, error, run, cancel } = useGrid(jobId, online, onResult);
  const job = useMemo(() => jobs.find((j) => j.job === jobName) ?? null, [jobs, jobName]);

  const load = useCallback(async () => {
    if (!online || !jobId) return;
    try {
      const found = (await apiJson<{ jobs: GridJob[] }>(`/api/inference/grid/jobs?job=${encodeURIComponent(jobId)}`)).jobs;
      setJobs(found);
      setJobsError(null);
      setJobName((name) => (found.some((j) => j.job === name) ? name : found[0]?.job ?? ''));
    } catch (e) {
      setJobsError((e as Error).message);
    }
  }, [online, jobId]);
  useEffect(() => void load(), [load]);

  // a job picked: all its checkpoints ticked, its own sample prompts as the prompts
  useEffect(() => {
    setTicked(new Set(job?.checkpoints.map((c) => c.path) ?? []));
    if (job) setPrompts(defaultPrompts(job, formPrompt).join('\n'));
    // the form's prompt is only a fallback when the job is picked, not a reason to reset the picks
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [job]);

  const checkpoints = job?.checkpoints.filter((c) => ticked.has(c.path)).map((c) => c.path) ?? [];
  const multipliers = parseMultipliers(strengths);
  const lines = promptLines(prompts);
  const reason = !online
    ? 'Start an engine first'
    : !job
      ? 'No training job with saved LoRAs in the engine’s LoRA folders'
      : !checkpoints.length
        ? 'Tick at least one checkpoint'
        : !lines.length
          ? 'Give at least one prompt'
          : !multipliers
            ? 'Strengths are numbers between -10 and 10, separated by commas'
            : null;

  const start = () => {
    const b = base();
    if (!b || reason || !multipliers) return;
    void run(gridBody(b, { checkpoints, prompts: lines, multipliers }));
  };

  const toggle = (path: string) =>
    setTicked((t) => {
      const next = new Set(t);
      if (next.has(path)) next.delete(path);
      else next.add(path);
      return next;
    });

  return (
    <section className="flex flex-col gap-3 rounded-lg border border-gray-800 bg-gray-950 p-3" style={{ order: 2 }} data-testid="compare-panel" aria-label="Compare checkpoints">
      <div className="flex flex-wrap items-end gap-3">
        <label className="flex flex-col gap-1 text-xs text-gray-400">
          Training job
          <select className="input min-w-48" value={jobName} onChange={(e) => setJobName(e.target.value)} data-testid="compare-job">
            {jobs.map((j) => (
              <option key={j.job} value={j.job}>
                {j.job} ({j.checkpoints.length})
              </option>
            ))}
          </select>
        </label>
        <button type="button" className="btn-ghost text-xs" onClick={() => void load()} data-testid="compare-refresh">
          Refresh
        </button>
        <label className="flex flex-col gap-1 text-xs text-gray-400">
          LoRA strengths
          <input className="input w-32" value={strengths} onChange={(e) => setStrengths(e.target.value)} data-testid="compare-multipliers" />
        </label>
        {running ? (
          <button type="button" className="btn-danger" onClick={() => void cancel()} data-testid="compare-cancel">
            Cancel grid
          </button>
        ) : (
          <button type="button" className="btn-primary" disabled={Boolean(reason)} title={reason ?? ''} onClick={start} data-testid="compare-run">
            Compare
          </button>
        )}
      </div>
      {job && (
        <fieldset className="flex flex-wrap gap-x-4 gap-y-1 text-sm text-gray-200" data-testid="compare-checkpoints">
          <legend className="mb-1 text-xs text-gray-400">Checkpoints</legend>
          {job.checkpoints.map((c) => (
            <label key={c.path} className="flex items-center gap-1" title={c.path}>
              <input type="checkbox" checked={ticked.has(c.path)} onChange={() => toggle(c.path)} data-testid="compare-checkpoint" data-step={c.step ?? ''} />
              {c.step !== null ? `step ${c.step}` : c.name}
            </label>
          ))}
        </fieldset>
      )}
      <label className="flex flex-col gap-1 text-xs text-gray-400">
        Prompts, one a line{job?.sample?.prompts?.length ? ' (the job’s own sample prompts to start with)' : ''}
        <textarea className="input min-h-16 text-sm" value={prompts} onChange={(e) => setPrompts(e.target.value)} data-testid="compare-prompts" />
      </label>
      {(reason && online) || jobsError || error ? (
        <p className="text-xs text-amber-300" role="status" data-testid="compare-reason">
          {error ?? jobsError ?? reason}
        </p>
      ) : null}
      {grid.cells.length > 0 && (
        <p className="text-xs text-gray-400" data-testid="compare-status">
          {doneCount(grid)} of {grid.cells.length} cells{grid.ended ? (grid.ok ? ' · done' : ' · ended') : running ? ' · running' : ''}
        </p>
      )}
      {grid.cells.length > 0 && <GridView grid={grid} jobId={jobId} online={online} onReuse={onReuse} />}
      {grid.pages.length > 0 && (
        <p className="flex flex-wrap gap-3 text-xs" data-testid="compare-files">
          {grid.pages.map((p, i) => (
            <a key={p.path} className="text-sky-400 hover:underline" href={p.url} target="_blank" rel="noreferrer" data-testid="compare-page">
              {grid.pages.length > 1 ? `Grid image, page ${i + 1}` : 'Grid image'}
            </a>
          ))}
          <a className="text-sky-400 hover:underline" href={replayHref(grid.replay)} download={`${grid.gridId ?? 'grid'}.replay.json`} data-testid="compare-replay">
            Replay JSON (POST /grid)
          </a>
        </p>
      )}
    </section>
  );
}
