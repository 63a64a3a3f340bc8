/**
 * Where things live, as AI Toolkit's ui/src/paths.ts has it: the toolkit root is the parent of the UI's
 * working directory (`ui/`), the DB is `<root>/aitk_db.db`, jobs live in `<TRAINING_FOLDER>/<job name>/`.
 *
 * Environment overrides (read on every call, so tests can point a server at a temporary setup):
 *   AITK_ROOT             the toolkit root (holds run.py and .venv); read in envPaths.ts
 *   AITK_DB_PATH          the sqlite file; read in envPaths.ts (the settings live in it: no setting moves it)
 *   AITK_TRAINING_FOLDER  the jobs folder; wins over the TRAINING_FOLDER setting
 *   MODELS_PATH           the models folder; wins over the MODELS_PATH setting
 */
import path from 'node:path';
import { toolkitRoot } from './envPaths';
import { getSetting } from './settings';

// The root and the DB file come from the environment alone (envPaths.ts); re-exported so every path is here.
export { dbPath, toolkitRoot } from './envPaths';

export function defaultTrainingFolder(): string {
  return path.join(/*turbopackIgnore: true*/ toolkitRoot(), 'output');
}

export function trainingFolder(): string {
  const fromEnv = process.env.AITK_TRAINING_FOLDER?.trim();
  if (fromEnv) return path.resolve(/*turbopackIgnore: true*/ fromEnv);
  const fromSettings = getSetting('TRAINING_FOLDER')?.trim();
  return path.resolve(/*turbopackIgnore: true*/ fromSettings || defaultTrainingFolder());
}

/** `<training folder>/<job name>`: config, log.txt, pid.txt and, for engines, engine.json and outputs/. */
export function jobFolder(jobName: string): string {
  return path.join(/*turbopackIgnore: true*/ trainingFolder(), jobName);
}

/**
 * Where jobs look for models (and the engine for LoRAs besides the training folder): toolkit/paths.py's
 * MODELS_PATH, which a started job gets from this server's environment, else the MODELS_PATH setting, else
 * `<root>/models`. Relative paths are the toolkit root's, the job's working folder.
 */
export function modelsFolder(): string {
  const configured = process.env.MODELS_PATH?.trim() || getSetting('MODELS_PATH')?.trim();
  return path.resolve(/*turbopackIgnore: true*/ toolkitRoot(), configured || 'models');
}
