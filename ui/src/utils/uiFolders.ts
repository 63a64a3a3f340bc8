/**
 * The keys of a job's process entries that say where a job reads and writes (or which Ray cluster it joins):
 * the UI writes them itself when it starts the job (server/uiFolders.ts), and `POST /api/jobs` refuses a
 * `job_config` that names another value, so a job config sent through the API cannot move an engine's folders.
 *
 * Every key InferenceEngine.py and InferenceCluster.py read a path or an address from, as dotted paths inside
 * one `config.process[i]` entry.
 */

/** Read by any process the UI runs (the Job row's DB, AI Toolkit's training folder). */
export const JOB_FOLDER_KEYS = ['sqlite_db_path', 'training_folder'] as const;

/** Read by engine and cluster processes only. */
export const ENGINE_FOLDER_KEYS = [
  'engine.job_folder',
  'engine.output_folder',
  'engine.assets_folder',
  'engine.lora_roots',
  'engine.model_roots',
  'engine.compile_cache_dir',
  'ray.address',
] as const;

export const UI_FOLDER_KEYS = [...JOB_FOLDER_KEYS, ...ENGINE_FOLDER_KEYS] as const;
export type UiFolderKey = (typeof UI_FOLDER_KEYS)[number];

/** The process types whose entries get the engine's folders. */
export const ENGINE_PROCESS_TYPES = ['InferenceEngine', 'InferenceCluster'];

type Entry = Record<string, unknown>;

const isEntry = (value: unknown): value is Entry => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `config.process` entries that are objects, with their index (what the key paths in errors count). */
export function processEntries(config: unknown): [number, Entry][] {
  const list = isEntry(config) && isEntry(config.config) ? config.config.process : undefined;
  if (!Array.isArray(list)) return [];
  return list.flatMap((entry, i): [number, Entry][] => (isEntry(entry) ? [[i, entry]] : []));
}

/** The value at a dotted key of one entry, as Python's `get_conf` reads it (undefined when any step is missing). */
export function valueAt(entry: Entry, key: string): unknown {
  let value: unknown = entry;
  for (const part of key.split('.')) {
    if (!isEntry(value)) return undefined;
    value = value[part];
  }
  return value;
}

/** Set (or with `undefined`, remove) a dotted key of one entry, making the objects on the way. */
export function setAt(entry: Entry, key: string, value: unknown): void {
  const parts = key.split('.');
  const last = parts.pop()!;
  let parent = entry;
  for (const part of parts) {
    if (!isEntry(parent[part])) {
      if (value === undefined) return;
      parent[part] = {};
    }
    parent = parent[part] as Entry;
  }
  if (value === undefined) delete parent[last];
  else parent[last] = value;
}

/**
 * A copy of `config` without the keys the UI writes itself: what the Generate page sends back when it restarts
 * an engine whose stored config still names them (a row made before they were the UI's to set).
 */
export function withoutUiFolders<T>(config: T): T {
  const copy = structuredClone(config);
  for (const [, entry] of processEntries(copy)) for (const key of UI_FOLDER_KEYS) setAt(entry, key, undefined);
  return copy;
}
