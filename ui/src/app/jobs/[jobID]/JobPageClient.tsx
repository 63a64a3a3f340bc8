'use client';
/** One job: overview (an engine's: its /health, components/EngineJobFields.tsx), the live tail of log.txt, its
 * config; engines link to /generate. */
import Link from 'next/link';
import { useEffect, useRef, useState } from 'react';
import EngineJobFields from '@/components/EngineJobFields';
import JobActions from '@/components/JobActions';
import StatusBadge from '@/components/StatusBadge';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import { type Job, displayStatus, isInferenceJob } from '@/utils/types';

const MAX_LOG_CHARS = 200_000;

/** Follows log.txt with `?offset=` so each poll only moves the new bytes. */
function useLogTail(jobId: string) {
  const [text, setText] = useState('');
  const offset = useRef<number | null>(null);
  usePoll(async () => {
    const q = offset.current === null ? '' : `?offset=${offset.current}`;
    const r = await apiJson<{ log: string; offset: number; reset: boolean }>(`/api/jobs/${jobId}/log${q}`);
    offset.current = r.offset;
    setText((prev) => ((r.reset || q === '' ? r.log : prev + r.log).slice(-MAX_LOG_CHARS)));
    return null;
  }, 1500);
  return text;
}

export default function JobPageClient({ jobId }: { jobId: string }) {
  const job = usePoll(() => apiJson<Job | null>(`/api/jobs?id=${encodeURIComponent(jobId)}`), 1500);
  const log = useLogTail(jobId);
  const [tab, setTab] = useState<'overview' | 'config'>('overview');
  const logBox = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const el = logBox.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [log]);

  if (job.data === null && !job.error) return <div className="text-gray-400">Loading…</div>;
  if (!job.data) return <div className="text-rose-400">Job not found{job.error ? `: ${job.error.message}` : ''}</div>;
  const j = job.data;
  let config = j.job_config;
  try {
    config = JSON.stringify(JSON.parse(j.job_config), null, 2);
  } catch {
    /* show as stored */
  }
  const total = j.total_steps ?? 0;

  return (
    <div className="mx-auto max-w-6xl">
      <div className="mb-4 flex flex-wrap items-center gap-3">
        <h1 className="text-xl font-semibold">Job: {j.name}</h1>
        <StatusBadge status={displayStatus(j)} testId="job-status" />
        {isInferenceJob(j) && (
          <Link className="btn-primary" href={`/generate?job=${j.id}`} data-testid="open-generate">
            Open in Generate
          </Link>
        )}
        <div className="ml-auto">
          <JobActions job={j} onChange={job.refresh} />
        </div>
      </div>
      <div className="mb-3 flex gap-1 border-b border-gray-800">
        {(['overview', 'config'] as const).map((t) => (
          <button key={t} className={`px-3 py-1.5 text-sm ${tab === t ? 'border-b-2 border-sky-500 text-white' : 'text-gray-400'}`} onClick={() => setTab(t)}>
            {t === 'overview' ? 'Overview' : 'Config file'}
          </button>
        ))}
      </div>
      {tab === 'overview' ? (
        <>
          <section className="card mb-4 grid grid-cols-2 gap-x-6 gap-y-2 text-sm md:grid-cols-4" data-testid="job-overview">
            <Field label="Info" value={j.info || '—'} testId="job-info" wide />
            <Field label="Type" value={j.job_type} />
            <Field label="GPUs" value={j.gpu_ids} />
            <Field label="PID" value={j.pid ? String(j.pid) : '—'} />
            {isInferenceJob(j) ? (
              <>
                <Field label="Created" value={new Date(j.created_at).toLocaleString()} />
                <EngineJobFields job={j} />
              </>
            ) : (
              <>
                <Field label="Speed" value={j.speed_string || '?'} />
                {total > 0 && <Field label="Progress" value={`${j.step} / ${total}`} />}
                <Field label="Created" value={new Date(j.created_at).toLocaleString()} />
                <Field label="Updated" value={new Date(j.updated_at).toLocaleString()} testId="job-updated" />
              </>
            )}
          </section>
          <section className="card">
            <h2 className="mb-2 text-sm font-semibold">log.txt</h2>
            <pre ref={logBox} className="h-[28rem] overflow-auto whitespace-pre-wrap rounded bg-black p-3 font-mono text-xs text-gray-300" data-testid="job-log">
              {log || '(empty)'}
            </pre>
          </section>
        </>
      ) : (
        <pre className="card overflow-auto font-mono text-xs text-gray-300" data-testid="job-config">
          {config}
        </pre>
      )}
    </div>
  );
}

function Field({ label, value, testId, wide }: { label: string; value: string; testId?: string; wide?: boolean }) {
  return (
    <div className={wide ? 'col-span-2 md:col-span-4' : ''}>
      <div className="label">{label}</div>
      <div className="break-words text-gray-200" data-testid={testId}>
        {value}
      </div>
    </div>
  );
}
