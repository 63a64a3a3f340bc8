/** Small process helpers shared by the worker, the job routes and the engine lookup. */

/** True while `pid` names a live process we may signal (EPERM: alive, owned by someone else). */
export function isPidAlive(pid: number | null | undefined): boolean {
  if (!pid || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Send `signal` and report whether it was delivered (the process may already be gone). */
export function signalPid(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}
