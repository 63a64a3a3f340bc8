/**
 * Finding a running inference engine for the proxy. An engine job writes `<job folder>/engine.json`
 * (`{host, port, token, pid, started_at, url, output_folder}`, mode 0600) once it listens and removes it on
 * exit; a file whose pid is dead is a leftover of a crash and is ignored.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { isInferenceJob } from './jobConfig';
import { type Job, listJobs } from './jobs';
import { jobFolder, trainingFolder } from './paths';
import { isPidAlive } from './process';

export interface EngineInfo {
  host: string;
  port: number;
  token: string;
  pid: number;
  started_at?: number;
  url?: string;
  output_folder?: string;
}

export type EngineLookup =
  | { ok: true; job: Job | null; folder: string; info: EngineInfo }
  | { ok: false; status: number; error: string };

/** The folder startJob tells the engine to use (server/uiFolders.ts): never one a stored config names. */
export function engineFolder(job: Job): string {
  return jobFolder(job.name);
}

export function readEngineJson(folder: string): EngineInfo | null {
  try {
    const info = JSON.parse(readFileSync(path.join(/*turbopackIgnore: true*/ folder, 'engine.json'), 'utf8'));
    if (typeof info?.port !== 'number' || typeof info?.token !== 'string' || !isPidAlive(info.pid)) return null;
    return { ...info, host: info.host || '127.0.0.1' };
  } catch {
    return null;
  }
}

/**
 * `selector` (the `?job=` query: a job id or name) picks one of several engines; without it the most
 * recently created running engine job answers. With no engine job running at all, an engine started by
 * hand (`python run.py config/examples/inference_engine_tiny.yaml`) under the training folder is used.
 */
export function findEngine(selector?: string | null): EngineLookup {
  const engines = listJobs({ status: ['running'] }).filter(isInferenceJob);
  if (selector) {
    const job = listJobs().find((j) => j.id === selector || j.name === selector);
    if (!job) return { ok: false, status: 404, error: `no job ${JSON.stringify(selector)}` };
    if (!isInferenceJob(job)) return { ok: false, status: 400, error: `job ${job.name} is not an inference engine` };
    if (job.status !== 'running') return { ok: false, status: 503, error: `engine ${job.name} is ${job.status}` };
    const info = readEngineJson(engineFolder(job));
    return info
      ? { ok: true, job, folder: engineFolder(job), info }
      : { ok: false, status: 503, error: `engine ${job.name} is starting` };
  }
  for (const job of engines) {
    const info = readEngineJson(engineFolder(job));
    if (info) return { ok: true, job, folder: engineFolder(job), info };
  }
  if (engines.length) return { ok: false, status: 503, error: `engine ${engines[0].name} is starting` };
  const manual = findManualEngine();
  return manual ?? { ok: false, status: 503, error: 'no inference engine is running: start one on /generate' };
}

function findManualEngine(): EngineLookup | null {
  const root = trainingFolder();
  let names: string[];
  try {
    names = readdirSync(/*turbopackIgnore: true*/ root);
  } catch {
    return null;
  }
  for (const name of names) {
    const folder = path.join(/*turbopackIgnore: true*/ root, name);
    const info = readEngineJson(folder);
    if (info) return { ok: true, job: null, folder, info };
  }
  return null;
}
