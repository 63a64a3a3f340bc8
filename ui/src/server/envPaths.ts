/**
 * The toolkit root and the DB file: from the environment and the working directory alone, never from a setting.
 * The settings live in that DB, so its path cannot come from one; keeping these apart from `paths.ts` (whose
 * training and models folders do read settings) is what lets `db.ts` import its path without importing
 * `settings.ts`, which imports `db.ts`.
 *
 *   AITK_ROOT     the toolkit root (holds run.py and .venv); default: the parent of the working directory (`ui/`)
 *   AITK_DB_PATH  the sqlite file; default: `<root>/aitk_db.db`
 *
 * Read on every call, so tests can point a server at a temporary setup.
 */
import path from 'node:path';

export function toolkitRoot(): string {
  return path.resolve(/*turbopackIgnore: true*/ process.env.AITK_ROOT || path.join(process.cwd(), '..'));
}

export function dbPath(): string {
  return path.resolve(/*turbopackIgnore: true*/ process.env.AITK_DB_PATH || path.join(toolkitRoot(), 'aitk_db.db'));
}
