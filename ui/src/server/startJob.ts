/**
 * Start one job's Python process the way AI Toolkit's cron/actions/startJob.ts does:
 * `<python> <root>/run.py <job folder>/.job_config.json`, detached, cwd = toolkit root, stdout+stderr
 * appended to `<job folder>/log.txt` (the previous log rotated), pid in `Job.pid` and `pid.txt`.
 * Exit code 0 means Python wrote its own final status; anything else marks the job `error` with the
 * last log line.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isInferenceJob, parseJobConfig } from './jobConfig';
import { type Job, getJob, updateJob } from './jobs';
import { lastLogLine, rotateLog } from './logFile';
import { jobFolder, modelsFolder, toolkitRoot } from './paths';
import { isPidAlive } from './process';
import { resolvePythonPath } from './pythonPath';
import { getSetting } from './settings';
import { withUiFolders } from './uiFolders';

/** Children this server process launched and still waits on, by job id (their exit handler owns them). */
const g = globalThis as unknown as { __aitkChildren?: Map<string, ChildProcess> };
export function watchedChildren(): Map<string, ChildProcess> {
  return (g.__aitkChildren ??= new Map());
}

/**
 * Write the config the job runs with: the folders are the UI's (server/uiFolders.ts), whatever the stored row
 * says, so a row written before the API refused other folders still runs in its own.
 */
export function writeRunConfig(job: Job, folder: string): string {
  const config = withUiFolders(parseJobConfig(job), job.name);
  const file = path.join(/*turbopackIgnore: true*/ folder, '.job_config.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/**
 * The engine removes its engine.json on the way out, but a crash (SIGKILL, OOM killer) or an interrupt
 * landing in its cleanup can leave it behind. Remove it when its pid is dead (optionally: only when it
 * belongs to `ofPid`), so it never outlives the engine. Returns true when a leftover was removed.
 */
export const LEFTOVER_ENGINE_JSON = '[ui] engine.json was left behind by the exited engine; removed';
function removeStaleEngineJson(folder: string, ofPid?: number): boolean {
  const file = path.join(/*turbopackIgnore: true*/ folder, 'engine.json');
  try {
    const info = JSON.parse(readFileSync(file, 'utf8'));
    if ((ofPid !== undefined && info.pid !== ofPid) || isPidAlive(info.pid)) return false;
    rmSync(file, { force: true });
    return true;
  } catch {
    return false; // absent or unreadable: nothing to clean
  }
}

function fail(jobId: string, info: string, logFile?: string) {
  updateJob(jobId, { status: 'error', info, pid: null });
  if (logFile) {
    try {
      appendFileSync(logFile, `\n${info}\n`);
    } catch {
      /* the folder may be gone */
    }
  }
}

/**
 * Claim the queued job and launch it. Returns false when another worker claimed it first (the claim is a
 * conditional UPDATE, so two UIs on one DB never start the same job twice).
 */
export function startJob(jobId: string): boolean {
  const claimed = updateJob(
    jobId,
    { status: 'running', stop: false, return_to_queue: false, info: 'Starting job...' },
    'queued',
  );
  if (!claimed) return false;
  const job = getJob(jobId)!;
  const root = toolkitRoot();
  const folder = jobFolder(job.name);
  let logFile: string | undefined;
  try {
    mkdirSync(folder, { recursive: true });
    rotateLog(folder);
    logFile = path.join(/*turbopackIgnore: true*/ folder, 'log.txt');
    removeStaleEngineJson(folder);
    const configFile = writeRunConfig(job, folder);
    const runPy = path.join(/*turbopackIgnore: true*/ root, 'run.py');
    if (!existsSync(runPy)) {
      fail(jobId, 'Error launching job: run.py not found', logFile);
      return true;
    }
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      AITK_JOB_ID: job.id,
      CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
      CUDA_VISIBLE_DEVICES: job.gpu_ids,
      IS_AI_TOOLKIT_UI: '1',
      PYTHONUNBUFFERED: '1',
    };
    const hfToken = getSetting('HF_TOKEN')?.trim();
    if (hfToken) env.HF_TOKEN = hfToken;
    env.MODELS_PATH = modelsFolder(); // the engine's model and LoRA roots start from it (server/uiFolders.ts)

    const logFd = openSync(logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(/*turbopackIgnore: true*/ resolvePythonPath(), [runPy, configFile], {
        detached: true, // its own process group: it outlives a UI restart, and Ctrl-C on the UI does not reach it
        stdio: ['ignore', logFd, logFd],
        env,
        cwd: root,
      });
    } finally {
      closeSync(logFd); // the child has its own copy
    }
    child.on('error', (e) => fail(jobId, `Error launching job process: ${e.message}`, logFile));
    const engine = isInferenceJob(job);
    child.on('exit', (code, signal) => {
      watchedChildren().delete(jobId);
      if (engine && child.pid && removeStaleEngineJson(folder, child.pid)) {
        try {
          appendFileSync(logFile!, `\n${LEFTOVER_ENGINE_JSON}\n`);
        } catch {
          /* folder deleted */
        }
      }
      // A stop in progress ends here whatever the exit: Python wrote `stopped` already, or it died first.
      updateJob(jobId, { status: 'stopped', info: 'Job stopped', pid: null }, 'stopping');
      if (code === 0) return; // Python wrote its own final status (completed / stopped / queued)
      const how = signal ? `with signal ${signal}` : `with exit code ${code}`;
      const last = lastLogLine(logFile!);
      const info = `Job process terminated ${how}.${last ? ` Last log line: ${last}` : ''}`;
      // Only a job still marked running: a stop from the UI has already written `stopped`.
      if (updateJob(jobId, { status: 'error', info, pid: null }, 'running')) {
        try {
          appendFileSync(logFile!, `\n${info}\n`);
        } catch {
          /* folder deleted */
        }
      }
    });
    child.unref();
    if (child.pid) {
      watchedChildren().set(jobId, child);
      updateJob(jobId, { pid: child.pid });
      writeFileSync(path.join(/*turbopackIgnore: true*/ folder, 'pid.txt'), String(child.pid));
    }
  } catch (e) {
    fail(jobId, `Error launching job: ${(e as Error).message}`, logFile);
  }
  return true;
}
