/**
 * A job config cannot move the engine's folders: `POST /api/jobs` (the real handler) refuses a config naming any
 * folder, DB or Ray address other than the UI's own, on create and on update, and takes the configs the UI's own
 * callers send; a row stored before that rule still starts in the UI's folders.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NextRequest } from 'next/server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { POST } from '@/app/api/jobs/route';
import { closeDb } from '@/server/db';
import { engineFolder } from '@/server/engines';
import { type Job, createJob, enqueueJob, getJob, getJobByName } from '@/server/jobs';
import { outputsFolderOf } from '@/server/outputs';
import { setSetting } from '@/server/settings';
import { startJob, watchedChildren } from '@/server/startJob';
import { uiFolderValues } from '@/server/uiFolders';
import { DEFAULT_ENGINE_SETTINGS, newEngineJobConfig, withEngineSettings } from '@/utils/engineSettings';
import { UI_FOLDER_KEYS, setAt, withoutUiFolders } from '@/utils/uiFolders';

const ENV = ['AITK_ROOT', 'AITK_DB_PATH', 'AITK_TRAINING_FOLDER', 'AITK_PYTHON', 'MODELS_PATH'];
let root: string;

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'aitk-folders-'));
  process.env.AITK_ROOT = root;
  process.env.AITK_DB_PATH = path.join(root, 'db', 'aitk_db.db'); // not `./aitk_db.db`, as in the e2e runs
  process.env.AITK_TRAINING_FOLDER = path.join(root, 'output');
  process.env.MODELS_PATH = path.join(root, 'models');
});

afterEach(() => {
  closeDb();
  for (const k of ENV) delete process.env[k];
});

function engineConfig(name: string, engine: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return { job: 'extension', config: { name, process: [{ type: 'InferenceEngine', device: 'auto', ...extra, engine }] } };
}

async function postJob(body: Record<string, unknown>): Promise<{ status: number; json: { error?: string; id?: string } & Partial<Job> }> {
  const req = new NextRequest('http://127.0.0.1:8675/api/jobs', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const res = await POST(req);
  return { status: res.status, json: await res.json() };
}

/** A value for each key that is not the UI's: a folder elsewhere, a list with one, a Ray cluster to join. */
const FOREIGN: Record<string, unknown> = {
  sqlite_db_path: '/tmp/other/aitk_db.db',
  training_folder: '/home/someone',
  'engine.job_folder': '/home/someone/job',
  'engine.output_folder': '../../elsewhere',
  'engine.assets_folder': '/etc',
  'engine.lora_roots': ['/'],
  'engine.model_roots': ['/home/someone/models'],
  'engine.compile_cache_dir': '/home/someone/.cache',
  'ray.address': 'ray://evil.example:10001',
};

describe('the UI-owned keys', () => {
  it('are every key the engine and the cluster read a folder, path or address from', () => {
    const repo = path.resolve(__dirname, '..', '..');
    const sources = ['extensions_built_in/inference_engine/InferenceEngine.py', 'extensions_built_in/inference_cluster/InferenceCluster.py']
      .map((f) => readFileSync(path.join(repo, f), 'utf8'))
      .join('\n');
    const read = [...sources.matchAll(/get_conf\(\s*"([\w.]+)"/g)].map((m) => m[1]);
    const placeish = read.filter((key) => /folder|dir|root|path|address/.test(key));
    expect(placeish.length).toBeGreaterThan(0);
    for (const key of placeish) expect(UI_FOLDER_KEYS as readonly string[], key).toContain(key);
  });
});

describe('POST /api/jobs and the UI-owned folders', () => {
  it('refuses a config naming another value for any folder key, and says which key', async () => {
    expect(Object.keys(FOREIGN).sort()).toEqual([...UI_FOLDER_KEYS].sort()); // every key is tried
    for (const [key, value] of Object.entries(FOREIGN)) {
      const config = engineConfig('eng');
      setAt(config.config.process[0], key, value);
      const res = await postJob({ name: 'eng', gpu_ids: '0', job_config: config, job_type: 'inference' });
      expect(res.status, key).toBe(400);
      expect(res.json.error, key).toContain(`config.process[0].${key}`);
    }
    expect(getJobByName('eng')).toBeNull();
  });

  it('looks at every process entry, not only the first', async () => {
    const config = engineConfig('eng');
    (config.config.process as Record<string, unknown>[]).push({ type: 'InferenceCluster', engine: { output_folder: '/srv/www' } });
    const res = await postJob({ name: 'eng', gpu_ids: '0', job_config: config });
    expect(res.status).toBe(400);
    expect(res.json.error).toContain('config.process[1].engine.output_folder');
  });

  it('refuses it on update too, and leaves the stored row as it was', async () => {
    const created = await postJob({ name: 'eng', gpu_ids: '0', job_config: engineConfig('eng'), job_type: 'inference' });
    expect(created.status).toBe(200);
    const moved = engineConfig('eng', { output_folder: '/srv/www' });
    const res = await postJob({ id: created.json.id, name: 'eng', gpu_ids: '0', job_config: moved, job_type: 'inference' });
    expect(res.status).toBe(400);
    expect(res.json.error).toContain('config.process[0].engine.output_folder');
    expect(getJob(created.json.id!)!.job_config).toBe(JSON.stringify(engineConfig('eng')));
  });

  it("takes the UI's own values, absolute or relative to the toolkit root, and null", async () => {
    const own = uiFolderValues('eng');
    const same = engineConfig(
      'eng',
      { job_folder: own['engine.job_folder'], output_folder: 'output/eng/outputs/', assets_folder: own['engine.assets_folder'],
        lora_roots: null, compile_cache_dir: null },
      { sqlite_db_path: './db/aitk_db.db', training_folder: own.training_folder, ray: { address: null } },
    );
    expect((await postJob({ name: 'eng', gpu_ids: '0', job_config: same, job_type: 'inference' })).status).toBe(200);
  });

  it("takes what the UI's callers send: the Generate page's new and restarted engines, make demo's config", async () => {
    const fresh = newEngineJobConfig('inference_engine_gpu0', DEFAULT_ENGINE_SETTINGS);
    const created = await postJob({ name: 'inference_engine_gpu0', gpu_ids: '0', job_config: fresh, job_type: 'inference' });
    expect(created.status).toBe(200);
    // a row stored before the rule, restarted from the page: the page sends it without the UI's keys
    const old = engineConfig('inference_engine_gpu0', { output_folder: '/srv/www', keep: 1 }, { sqlite_db_path: '/elsewhere.db' });
    const restarted = withoutUiFolders(withEngineSettings(old, DEFAULT_ENGINE_SETTINGS));
    expect(restarted.config?.process?.[0]).toEqual({ type: 'InferenceEngine', device: 'auto', engine: { keep: 1, compile: 'auto' } });
    const update = { id: created.json.id, name: 'inference_engine_gpu0', gpu_ids: '0', job_config: restarted, job_type: 'inference' };
    expect((await postJob(update)).status).toBe(200);
    // scripts/demo.mjs posts config/examples/inference_engine_demo.yaml less its sqlite_db_path
    const demo = engineConfig('inference_engine_demo', { idle_unload_seconds: 0, default_model: { arch: 'sd1', name_or_path: 'builtin:shapes' } });
    expect((await postJob({ name: 'inference_engine_demo', gpu_ids: '0', job_config: demo, job_type: 'inference' })).status).toBe(200);
  });
});

/** The job's process has gone and its exit handler has run (it writes to the DB this test set up). */
async function exited(jobId: string) {
  for (let i = 0; watchedChildren().has(jobId); i++) {
    if (i > 200) throw new Error('run.py did not exit');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('starting a stored row', () => {
  // run.py that says which models folder it got and exits: the test reads the config the UI wrote for it
  beforeEach(() => {
    writeFileSync(path.join(root, 'run.py'), 'import os\nprint("MODELS_PATH=" + os.environ["MODELS_PATH"])\n');
    process.env.AITK_PYTHON = 'python3';
  });

  it("runs with the UI's folders, whatever a row made before the rule says", async () => {
    const config = engineConfig('old');
    for (const [key, value] of Object.entries(FOREIGN)) setAt(config.config.process[0], key, value);
    (config.config.process as Record<string, unknown>[]).push({ type: 'InferenceCluster', ray: { address: 'auto' }, engine: { lora_roots: ['/'] } });
    delete process.env.MODELS_PATH;
    setSetting('MODELS_PATH', path.join(root, 'my-models'));
    const job = createJob({ name: 'old', gpu_ids: '0', job_config: config, job_type: 'inference' }); // straight into the DB
    enqueueJob(job.id);
    expect(startJob(job.id)).toBe(true);
    await exited(job.id);
    const folder = path.join(root, 'output', 'old');
    const written = JSON.parse(readFileSync(path.join(folder, '.job_config.json'), 'utf8'));
    const engine = { job_folder: folder, output_folder: path.join(folder, 'outputs'), assets_folder: path.join(folder, 'assets') };
    const [first, second] = written.config.process;
    expect(first).toEqual({
      type: 'InferenceEngine', device: 'auto', sqlite_db_path: path.join(root, 'db', 'aitk_db.db'), training_folder: path.join(root, 'output'),
      engine, ray: {},
    });
    expect(second.engine).toEqual(engine);
    expect(second.ray).toEqual({});
    // the engine's own LoRA and model roots start from the UI's models folder (here: the MODELS_PATH setting)
    expect(readFileSync(path.join(folder, 'log.txt'), 'utf8')).toContain(`MODELS_PATH=${path.join(root, 'my-models')}\n`);
  });

  it('finds its engine.json and outputs in its own folder, not where the row says', () => {
    const foreign = { job_folder: '/home/someone/job', output_folder: path.join(os.tmpdir(), 'elsewhere') };
    const job = createJob({ name: 'old', gpu_ids: '0', job_config: engineConfig('old', foreign), job_type: 'inference' });
    expect(engineFolder(job)).toBe(path.join(root, 'output', 'old'));
    expect(outputsFolderOf(job)).toBe(path.join(root, 'output', 'old', 'outputs'));
  });
});
