/**
 * End-to-end tests against the real stack: this UI's production build (`next start`, queue worker
 * inside), the Python engine started FROM the UI as a job (tiny random-weight models, CPU), headless
 * Debian Chromium. Every run gets a fresh temporary toolkit setup: its own sqlite DB, training folder and
 * tiny-model cache, passed to the server through AITK_DB_PATH / AITK_TRAINING_FOLDER / AITK_TINY_CACHE.
 *
 *   npm run build && npx playwright test        (npm run test:e2e does both)
 *
 * Never `npx playwright install`: the browser is /usr/bin/chromium (CHROMIUM_PATH overrides).
 */
import { defineConfig } from '@playwright/test';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Evaluated by the runner and again by each worker: the runner makes the folder, workers inherit the env.
process.env.AITK_E2E_DIR ??= mkdtempSync(path.join(os.tmpdir(), 'aitk-ui-e2e-'));
process.env.E2E_TOKEN ??= 'e2e-token-not-secret';
const dir = process.env.AITK_E2E_DIR;
const port = Number(process.env.E2E_PORT ?? 8676);

export default defineConfig({
  testDir: './e2e',
  timeout: 300_000,
  expect: { timeout: 30_000 },
  workers: 1,
  retries: 0,
  reporter: [['list']],
  globalTeardown: './e2e/teardown.ts',
  outputDir: 'test-results',
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    viewport: { width: 1400, height: 1000 },
    trace: process.env.E2E_TRACE === '1' ? 'retain-on-failure' : 'off',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    },
  },
  projects: [{ name: 'chromium', use: { browserName: 'chromium' } }],
  webServer: {
    command: 'node scripts/start.mjs',
    url: `http://127.0.0.1:${port}/generate`,
    timeout: 60_000,
    reuseExistingServer: false,
    stdout: 'pipe',
    stderr: 'pipe',
    env: {
      HOST: '127.0.0.1',
      PORT: String(port),
      AITK_DB_PATH: path.join(dir, 'aitk_db.db'),
      AITK_TRAINING_FOLDER: path.join(dir, 'output'),
      AITK_TINY_CACHE: process.env.AITK_TINY_CACHE ?? path.join(dir, 'tiny_cache'),
      AI_TOOLKIT_AUTH: process.env.E2E_TOKEN,
      NEXT_TELEMETRY_DISABLED: '1',
      // The engine (a job of this server) inherits this. On a 2-core box shared with Chromium and Node,
      // torch's default of one OpenMP thread per core oversubscribes: tiny:sd1 at 96 px measured 60-70 s
      // for 200 steps with 2 threads under load, 4 s with 1.
      OMP_NUM_THREADS: process.env.OMP_NUM_THREADS ?? '1',
    },
  },
});
