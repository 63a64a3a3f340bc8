#!/usr/bin/env node
/**
 * `npm start`: serve the built UI (and its queue worker, see src/instrumentation.ts) on
 * http://127.0.0.1:8675. HOST and PORT override the address; binding anything but loopback exposes the
 * job API, so set AI_TOOLKIT_AUTH when you do.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const uiDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const host = process.env.HOST || '127.0.0.1';
const port = process.env.PORT || '8675';

if (!existsSync(path.join(uiDir, '.next', 'BUILD_ID'))) {
  console.error('No production build found: run `npm run build` first (or `npm run build_and_start`).');
  process.exit(1);
}
if (!['127.0.0.1', 'localhost', '::1'].includes(host) && !process.env.AI_TOOLKIT_AUTH) {
  console.warn(`Warning: listening on ${host} without AI_TOOLKIT_AUTH: anyone who can reach it can start jobs.`);
}

const nextBin = createRequire(import.meta.url).resolve('next/dist/bin/next');
// Idle connections are kept 65 s, longer than clients keep theirs (httpx and browsers: 5 s or more): with
// Node's default of 5 s, a client reusing a connection just as the server closed it got a reset under load.
const child = spawn(process.execPath, [nextBin, 'start', '-H', host, '-p', port, '--keepAliveTimeout', '65000'], {
  cwd: uiDir, // the toolkit root is the parent of this folder (src/server/paths.ts)
  stdio: 'inherit',
  env: { NEXT_TELEMETRY_DISABLED: '1', ...process.env },
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
