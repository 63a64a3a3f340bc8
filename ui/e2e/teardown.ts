/**
 * After the run: no engine may outlive the tests (job processes are detached, so stopping the Next server
 * does not end them), and the temporary toolkit setup goes away unless E2E_KEEP=1.
 */
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';

function alive(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export default async function teardown() {
  const dir = process.env.AITK_E2E_DIR;
  if (!dir || !existsSync(dir)) return;
  const output = path.join(dir, 'output');
  for (const name of existsSync(output) ? readdirSync(output) : []) {
    const pidFile = path.join(output, name, 'pid.txt');
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : 0;
    if (pid && alive(pid)) {
      console.warn(`teardown: job ${name} (pid ${pid}) still runs; interrupting it`);
      process.kill(pid, 'SIGINT');
      for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 200));
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  }
  if (process.env.E2E_KEEP === '1') console.log(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
