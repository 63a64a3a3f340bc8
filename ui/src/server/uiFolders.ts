/**
 * The folders a job started by this UI uses, written by the UI itself (utils/uiFolders.ts lists the keys): the
 * DB and training folder the UI runs on, an engine's job folder under the training folder with its outputs and
 * assets inside, the engine's own LoRA and model roots (from the UI's models and training folders) and compile
 * cache, and a cluster's own Ray. A job config sent through the API may leave them out or repeat them; any other
 * value is refused (`foreignFolderKey`), and a stored row's values are replaced when the job starts
 * (`withUiFolders`).
 */
import path from 'node:path';
import {
  ENGINE_PROCESS_TYPES, JOB_FOLDER_KEYS, UI_FOLDER_KEYS, type UiFolderKey, processEntries, setAt, valueAt,
} from '@/utils/uiFolders';
import { dbPath, jobFolder, toolkitRoot, trainingFolder } from './paths';

/** What the UI writes for a job of this name; `undefined`: the key is left out (the engine's default). */
export type UiFolderValues = Record<UiFolderKey, string | undefined>;

export function uiFolderValues(jobName: string): UiFolderValues {
  const folder = jobFolder(jobName);
  return {
    sqlite_db_path: dbPath(),
    training_folder: trainingFolder(),
    'engine.job_folder': folder,
    'engine.output_folder': path.join(/*turbopackIgnore: true*/ folder, 'outputs'),
    'engine.assets_folder': path.join(/*turbopackIgnore: true*/ folder, 'assets'),
    // The engine's own roots, made from the MODELS_PATH startJob passes (modelsFolder) and the training folder above
    'engine.lora_roots': undefined,
    'engine.model_roots': undefined,
    'engine.compile_cache_dir': undefined, // the engine's cache folder under the toolkit root
    'ray.address': undefined, // a cluster job starts its own Ray and stops it with the job
  };
}

/** A path as the job reads it: relative ones are the toolkit root's (the job's working folder). */
const resolved = (value: string) => path.resolve(/*turbopackIgnore: true*/ toolkitRoot(), value);

function sameValue(sent: unknown, own: string | undefined): boolean {
  return own !== undefined && typeof sent === 'string' && resolved(sent) === own;
}

/**
 * The key path (`config.process[0].engine.output_folder`) of the first folder key this config names with a
 * value other than the UI's own, or null when it names none. Absent and null are the UI's to fill.
 */
export function foreignFolderKey(config: unknown, jobName: string): string | null {
  const own = uiFolderValues(jobName);
  for (const [i, entry] of processEntries(config)) {
    for (const key of UI_FOLDER_KEYS) {
      const sent = valueAt(entry, key);
      if (sent !== undefined && sent !== null && !sameValue(sent, own[key])) return `config.process[${i}].${key}`;
    }
  }
  return null;
}

/**
 * `config` (changed in place) with the UI's folders in every process entry: the DB and training folder in each,
 * the engine's folders in each engine or cluster entry (another process type's `engine` block is not its own).
 */
export function withUiFolders<T>(config: T, jobName: string): T {
  const own = uiFolderValues(jobName);
  for (const [, entry] of processEntries(config)) {
    const keys = ENGINE_PROCESS_TYPES.includes(entry.type as string) ? UI_FOLDER_KEYS : JOB_FOLDER_KEYS;
    for (const key of keys) setAt(entry, key, own[key]);
  }
  return config;
}
