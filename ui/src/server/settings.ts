/** The `Settings` key/value table (AI Toolkit keys: TRAINING_FOLDER, DATASETS_FOLDER, HF_TOKEN, MODELS_PATH). */
import { db } from './db';

export function getSetting(key: string): string | undefined {
  const row = db().prepare('SELECT value FROM "Settings" WHERE key = ?').get(key) as { value: string } | undefined;
  return row?.value;
}

export function getSettings(): Record<string, string> {
  const rows = db().prepare('SELECT key, value FROM "Settings"').all() as { key: string; value: string }[];
  return Object.fromEntries(rows.map((r) => [r.key, r.value]));
}

export function setSetting(key: string, value: string): void {
  db()
    .prepare('INSERT INTO "Settings" (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value')
    .run(key, value);
}

export function deleteSetting(key: string): void {
  db().prepare('DELETE FROM "Settings" WHERE key = ?').run(key);
}
