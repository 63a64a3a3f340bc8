'use client';
/** The queue: one row per GPU set (start/stop), then every job, inference engines included (an engine's row says
 * what its /health says, and "Updated" is when it last answered: components/EngineJobFields.tsx). */
import Link from 'next/link';
import { UpdatedAt } from '@/components/EngineJobFields';
import StatusBadge from '@/components/StatusBadge';
import JobActions from '@/components/JobActions';
import { useEngineHealths } from '@/hooks/useEngineHealths';
import { usePoll } from '@/hooks/usePoll';
import { engineSummary } from '@/utils/engineHealth';
import { POST, apiJson } from '@/utils/api';
import { type Job, type Queue, displayStatus, isInferenceJob } from '@/utils/types';

export default function JobsPage() {
  const jobs = usePoll(() => apiJson<{ jobs: Job[] }>('/api/jobs').then((r) => r.jobs), 2000);
  const queues = usePoll(() => apiJson<{ queues: Queue[] }>('/api/queue').then((r) => r.queues), 2000);
  const healthOf = useEngineHealths(jobs.data ?? []);
  const infoOf = (job: Job) => (isInferenceJob(job) && job.status === 'running' ? engineSummary(job, healthOf(job).health) || job.info : job.info);
  const refresh = () => {
    jobs.refresh();
    queues.refresh();
  };

  async function toggleQueue(q: Queue) {
    await apiJson(`/api/queue/${encodeURIComponent(q.gpu_ids)}/${q.is_running ? 'stop' : 'start'}`, POST);
    refresh();
  }

  return (
    <div className="mx-auto max-w-6xl">
      <h1 className="mb-4 text-xl font-semibold">Jobs</h1>
      <section className="card mb-4">
        <h2 className="mb-2 text-sm font-semibold">Queues</h2>
        {!queues.data?.length && <div className="text-sm text-gray-500">No queues yet: starting a job creates its GPU&apos;s queue.</div>}
        <div className="flex flex-wrap gap-2">
          {queues.data?.map((q) => (
            <div key={q.id} className="flex items-center gap-2 rounded border border-gray-800 px-3 py-1.5 text-sm" data-testid="queue-row">
              GPU {q.gpu_ids}
              <StatusBadge status={q.is_running ? 'running' : 'stopped'} />
              <button className="btn-ghost px-2 py-0.5 text-xs" onClick={() => toggleQueue(q)}>
                {q.is_running ? 'Stop queue' : 'Start queue'}
              </button>
            </div>
          ))}
        </div>
      </section>
      {/* Below md each row stacks: the name on its own line with type, GPU and info under it, then status and
          actions; the header row and the time go. From md the columns come back, info and time from lg. */}
      <section className="card overflow-x-auto">
        <table className="block w-full text-left text-sm md:table" data-testid="jobs-table">
          <thead className="hidden text-xs uppercase text-gray-400 md:table-header-group">
            <tr>
              <th className="py-2 pr-3">Name</th>
              <th className="hidden pr-3 md:table-cell">Type</th>
              <th className="hidden pr-3 md:table-cell">GPU</th>
              <th className="pr-3">Status</th>
              <th className="hidden pr-3 lg:table-cell">Info</th>
              <th className="hidden pr-3 lg:table-cell">Updated</th>
              <th>Actions</th>
            </tr>
          </thead>
          <tbody className="block md:table-row-group">
            {jobs.data?.map((job) => (
              <tr key={job.id} className="flex flex-wrap items-center gap-x-3 gap-y-1 border-t border-gray-800 py-2 first:border-t-0 md:table-row md:py-0 md:first:border-t" data-testid="job-row" data-job-id={job.id} data-status={displayStatus(job)}>
                <td className="w-full min-w-0 pr-3 md:w-auto md:py-2">
                  <Link className="break-words text-sky-400 hover:underline" href={`/jobs/${job.id}`}>
                    {job.name}
                  </Link>
                  <div className="whitespace-nowrap text-xs text-gray-400 md:hidden" data-testid="job-row-details">
                    {job.job_type} · GPU {job.gpu_ids}
                    {isInferenceJob(job) && (
                      <Link className="ml-2 text-sky-400 hover:underline" href={`/generate?job=${job.id}`}>
                        generate
                      </Link>
                    )}
                  </div>
                  {infoOf(job) && <div className="break-words text-xs text-gray-500 lg:hidden">{infoOf(job)}</div>}
                </td>
                <td className="hidden pr-3 text-gray-300 md:table-cell">
                  {job.job_type}
                  {isInferenceJob(job) && (
                    <Link className="ml-2 text-xs text-sky-400 hover:underline" href={`/generate?job=${job.id}`}>
                      generate
                    </Link>
                  )}
                </td>
                <td className="hidden pr-3 md:table-cell">{job.gpu_ids}</td>
                <td className="pr-3">
                  <StatusBadge status={displayStatus(job)} />
                </td>
                <td className="hidden max-w-xs truncate pr-3 text-gray-400 lg:table-cell" title={infoOf(job)} data-testid="job-row-info">
                  {infoOf(job)}
                </td>
                <td className="hidden pr-3 text-xs text-gray-500 lg:table-cell">
                  {isInferenceJob(job) ? <UpdatedAt job={job} healthAt={healthOf(job).at ?? null} testId="job-row-updated" /> : new Date(job.updated_at).toLocaleString()}
                </td>
                <td>
                  <JobActions job={job} onChange={refresh} compact />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {jobs.data && !jobs.data.length && <div className="py-4 text-sm text-gray-500">No jobs yet. Start an engine on the Generate page.</div>}
      </section>
    </div>
  );
}
