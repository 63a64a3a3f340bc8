/** Stop and delete, as AI Toolkit's job routes do them on Linux: set Job.stop, then SIGINT the process. */
import { rmSync } from 'node:fs';
import { type Job, deleteJobRow, getJob, updateJob } from './jobs';
import { jobFolder } from './paths';
import { isPidAlive, signalPid } from './process';

/**
 * `stop=1` is what the job's own stop watcher polls (every second for the engine); SIGINT reaches it at
 * once. A running job is `stopping` until its process has exited: Python then records `stopped` itself (and
 * clears `pid`), or the exit handler / the worker's reaper does when it died. Until then the job cannot be
 * started again, so an old process still cleaning up never shares the row, the GPU or engine.json with a new
 * one (AI Toolkit marks the row stopped at once; a restart then raced the old process's cleanup).
 */
export function stopJob(id: string): Job | null {
  const before = getJob(id);
  if (!before) return null;
  const alive = Boolean(before.pid && isPidAlive(before.pid));
  updateJob(id, { stop: true, info: 'Stopping job...' });
  if (alive) signalPid(before.pid!, 'SIGINT');
  if (before.status === 'running' || before.status === 'stopping') {
    updateJob(id, alive ? { status: 'stopping' } : { status: 'stopped', info: 'Job stopped', pid: null });
  } else if (before.status === 'queued') {
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
