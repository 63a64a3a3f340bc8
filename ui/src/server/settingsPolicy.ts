/**
 * What the settings routes accept and give back. The UI is reachable by any page in the user's browser that
 * gets past requestGuard, and by anyone holding AI_TOOLKIT_AUTH; neither may point the public /api/files at a
 * system folder, nor read a secret back.
 *
 * - Folder settings must be absolute paths to existing folders this user owns, never `/` or a system folder.
 * - `HF_TOKEN` is write-only: GET says whether one is set, never what it is; an empty string in a POST leaves
 *   it as it is (the form round-trips what GET gave it), `HF_TOKEN_CLEAR: true` removes it.
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';

export const FOLDER_KEYS = ['TRAINING_FOLDER', 'DATASETS_FOLDER', 'MODELS_PATH'] as const;
export const SECRET_KEYS = ['HF_TOKEN'] as const;

const SYSTEM_TREES = ['/bin', '/boot', '/dev', '/etc', '/lib', '/lib32', '/lib64', '/libx32', '/proc', '/run', '/sbin',
  '/sys', '/usr', '/var'];
const SYSTEM_EXACT = ['/', '/home', '/root', '/tmp', '/mnt', '/media', '/opt', '/srv'];

/** `real` (links resolved) is `/`, a system tree or a folder that holds other users' files. */
export function isSystemFolder(real: string): boolean {
  return SYSTEM_EXACT.includes(real) || SYSTEM_TREES.some((t) => real === t || real.startsWith(t + '/'));
}

/** Why `value` cannot be the folder setting `key`, or null when it can. */
export function folderProblem(key: string, value: string): string | null {
  if (!path.isAbsolute(value)) return `${key} must be an absolute path`;
  let real: string;
  try {
    real = realpathSync(/*turbopackIgnore: true*/ value);
  } catch {
    return `${key}: ${value} does not exist; create the folder first`;
  }
  const st = statSync(/*turbopackIgnore: true*/ real);
  if (!st.isDirectory()) return `${key}: ${value} is not a folder`;
  if (isSystemFolder(real)) return `${key}: ${real} is a system folder; pick a folder of your own`;
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) return `${key}: ${real} belongs to another user`;
  return null;
}

export type SettingsUpdate = { set: Record<string, string>; clear: string[]; errors: Record<string, string> };

/** Sort a POST body into what to store, what to remove and what is refused (nothing is stored on errors). */
export function settingsUpdate(body: Record<string, unknown>): SettingsUpdate {
  const update: SettingsUpdate = { set: {}, clear: [], errors: {} };
  for (const key of FOLDER_KEYS) {
    const value = body[key];
    if (typeof value !== 'string') continue;
    if (value.trim() === '') {
      update.clear.push(key);
      continue;
    }
    const problem = folderProblem(key, value.trim());
    if (problem) update.errors[key] = problem;
    else update.set[key] = path.resolve(value.trim());
  }
  for (const key of SECRET_KEYS) {
    if (body[`${key}_CLEAR`] === true) update.clear.push(key);
    else if (typeof body[key] === 'string' && (body[key] as string).trim()) update.set[key] = (body[key] as string).trim();
  }
  return update;
}
