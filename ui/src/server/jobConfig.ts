/** Reading AI Toolkit job configs (`{job, config: {name, process: [...]}, meta}`) without trusting their shape. */
import type { Job } from './jobs';

export interface ProcessEntry {
  type?: string;
  sqlite_db_path?: string;
  engine?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface JobConfig {
  job?: string;
  config?: { name?: string; process?: ProcessEntry[]; [key: string]: unknown };
  meta?: Record<string, unknown>;
  [key: string]: unknown;
}

export function parseJobConfig(job: Pick<Job, 'job_config'>): JobConfig {
  try {
    const parsed = JSON.parse(job.job_config);
    return typeof parsed === 'object' && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}

export function firstProcess(config: JobConfig): ProcessEntry | undefined {
  const list = config.config?.process;
  return Array.isArray(list) && typeof list[0] === 'object' && list[0] !== null ? list[0] : undefined;
}

export const INFERENCE_JOB_TYPE = 'inference';
export const ENGINE_PROCESS_TYPE = 'InferenceEngine';

/** An engine job: marked by job_type, or (for rows made elsewhere) by its process type. */
export function isInferenceJob(job: Pick<Job, 'job_type' | 'job_config'>): boolean {
  return job.job_type === INFERENCE_JOB_TYPE || firstProcess(parseJobConfig(job))?.type === ENGINE_PROCESS_TYPE;
}
