/** Stop and delete, as AI Toolkit's job routes do them on Linux: set Job.stop, then SIGINT the process. */
import { rmSync } from 'node:fs';
import { type Job, deleteJobRow, getJob, updateJob } from './jobs';
import { jobFolder } from './paths';
import { isPidAlive, signalPid } from './process';

/**
 * `stop=1` is what the job's own stop watcher polls (every second for the engine); SIGINT reaches it at
 * once. Either way Python records `stopped` itself and exits 0; the row is marked stopped here too, as
 * AI Toolkit does, so the queue moves on without waiting for the shutdown.
 */
export function stopJob(id: string): Job | null {
  const before = getJob(id);
  if (!before) return null;
  updateJob(id, { stop: true, info: 'Stopping job...' });
  if (before.pid && isPidAlive(before.pid)) signalPid(before.pid, 'SIGINT');
  if (before.status === 'running' || before.status === 'queued' || before.status === 'stopping') {
    updateJob(id, { status: 'stopped', info: 'Job stopped' });
  }
  return before;
}

/** AI Toolkit's "Mark as Stopped": no signal, just the row. */
export function markStopped(id: string): void {
  updateJob(id, { stop: true, status: 'stopped', info: 'Job stopped', pid: null });
}

/** Stop it if it runs, remove `<training folder>/<name>` and the row. */
export function deleteJob(id: string): boolean {
  const job = getJob(id);
  if (!job) return false;
  if (job.pid && isPidAlive(job.pid)) stopJob(id);
  rmSync(jobFolder(job.name), { recursive: true, force: true });
  deleteJobRow(id);
  return true;
}
