/**
 * Runs once when the Next server starts: opens (and if needed creates) the DB and starts the queue worker
 * in this process, so `npm start` is the whole UI. Set AITK_NO_WORKER=1 when another process (e.g. AI
 * Toolkit's own worker) already works the same DB's queues.
 */
export async function register() {
  if (process.env.NEXT_RUNTIME !== 'nodejs') return;
  if (process.env.NEXT_PHASE === 'phase-production-build') return; // `next build` must not start jobs
  const { db } = await import('./server/db');
  const { dbPath, trainingFolder, toolkitRoot } = await import('./server/paths');
  db();
  if (!process.env.AI_TOOLKIT_QUIET_PATHS) {
    console.log(`TOOLKIT_ROOT: ${toolkitRoot()}\nDB: ${dbPath()}\nTRAINING_FOLDER: ${trainingFolder()}`);
  }
  if (process.env.AITK_NO_WORKER === '1') return;
  const { startWorker } = await import('./server/worker');
  startWorker();
}
