/**
 * The interpreter for job processes, found the way AI Toolkit's cron/pythonPath.ts does: the toolkit's own
 * virtualenv first (`.venv`, then `venv`), else `python3` on PATH. `AITK_PYTHON` overrides all of it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { toolkitRoot } from './paths';

export function resolvePythonPath(): string {
  const override = process.env.AITK_PYTHON?.trim();
  if (override) return override;
  const root = toolkitRoot();
  const candidates =
    process.platform === 'win32'
      ? [path.join(root, '.venv', 'Scripts', 'python.exe'), path.join(root, 'venv', 'Scripts', 'python.exe')]
      : [path.join(root, '.venv', 'bin', 'python'), path.join(root, 'venv', 'bin', 'python')];
  return candidates.find((p) => existsSync(/*turbopackIgnore: true*/ p)) ?? (process.platform === 'win32' ? 'python.exe' : 'python3');
}
