/**
 * The queue worker, AI Toolkit's cron/worker.ts + cron/actions/processQueue.ts: once a second, for each
 * Queue row (one per `gpu_ids` string):
 *   - queue stopped: running jobs on it are asked to return to the queue (`return_to_queue=1`);
 *   - queue running: when nothing runs on those GPUs, start the queued job with the lowest
 *     `queue_position`; when nothing is queued either, the queue stops itself.
 * It runs inside the Next server (src/instrumentation.ts), so one `npm start` serves pages and runs jobs.
 */
import { getJob, listJobs, listQueues, setQueueRunning, updateJob } from './jobs';
import { jobFolder } from './paths';
import { isPidAlive } from './process';
import { lastLogLine } from './logFile';
import { startJob, watchedChildren } from './startJob';
import path from 'node:path';

export const TICK_MS = 1000;

export function processQueue(): void {
  reapOrphans();
  for (const queue of listQueues()) {
    const onGpus = listJobs({ gpuIds: queue.gpu_ids });
    if (!queue.is_running) {
      for (const job of onGpus)
        if (job.status === 'running' && !job.return_to_queue)
          updateJob(job.id, { return_to_queue: true, info: 'Stopping job...' });
      continue;
    }
    if (onGpus.some((j) => j.status === 'running' || j.status === 'stopping')) continue;
    const next = onGpus.filter((j) => j.status === 'queued').sort((a, b) => a.queue_position - b.queue_position)[0];
    if (next) startJob(next.id);
    else setQueueRunning(queue.gpu_ids, false);
  }
}

/**
 * Jobs marked running whose process is gone and that no exit handler here is watching (the UI restarted
 * while they ran, or they were killed): without this they would hold their GPU's queue forever.
 * (An addition to AI Toolkit, whose Linux worker relies on the exit handler alone.)
 */
function reapOrphans(): void {
  const watched = watchedChildren();
  for (const job of listJobs({ status: ['running', 'stopping'] })) {
    if (!job.pid || watched.has(job.id) || isPidAlive(job.pid)) continue;
    const fresh = getJob(job.id);
    if (fresh?.status === 'stopping') {
      updateJob(job.id, { status: 'stopped', info: 'Job stopped', pid: null }, 'stopping');
      continue;
    }
    if (fresh?.status !== 'running') continue; // it finished between the two reads
    const last = lastLogLine(path.join(/*turbopackIgnore: true*/ jobFolder(job.name), 'log.txt'));
    updateJob(
      job.id,
      { status: 'error', info: `Job process ${job.pid} is no longer running.${last ? ` Last log line: ${last}` : ''}`, pid: null },
      'running',
    );
  }
}

const g = globalThis as unknown as { __aitkWorker?: NodeJS.Timeout };

export function startWorker(): void {
  if (g.__aitkWorker) return;
  let busy = false;
  g.__aitkWorker = setInterval(() => {
    if (busy) return; // never overlap ticks
    busy = true;
    try {
      processQueue();
    } catch (e) {
      console.error('[worker] queue tick failed:', e);
    } finally {
      busy = false;
    }
  }, TICK_MS);
  g.__aitkWorker.unref?.();
}

export function stopWorker(): void {
  if (g.__aitkWorker) clearInterval(g.__aitkWorker);
  g.__aitkWorker = undefined;
}
