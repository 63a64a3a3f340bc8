/**
 * The DB is shared with Python and with AI Toolkit itself: the DDL must be the one Python uses
 * (toolkit/ui_job_status.py AITK_SCHEMA_SQL), and a DB made by Python must work here unchanged.
 */
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDb, db } from '@/server/db';
import { createJob, getJob, listJobs, updateJob } from '@/server/jobs';
import { AITK_SCHEMA_SQL } from '@/server/schema';

const ROOT = path.resolve(__dirname, '../..');
const PY = path.join(ROOT, 'toolkit', 'ui_job_status.py');
const venvPython = path.join(ROOT, '.venv', 'bin', 'python');
const python = process.env.AITK_PYTHON || (existsSync(venvPython) ? venvPython : 'python3');

function pythonSchema(): string {
  const src = readFileSync(PY, 'utf8');
  const m = /AITK_SCHEMA_SQL = """\\\n([\s\S]*?)"""/.exec(src);
  if (!m) throw new Error('AITK_SCHEMA_SQL not found in ui_job_status.py');
  return m[1];
}

afterEach(() => {
  closeDb();
  delete process.env.AITK_DB_PATH;
});

describe('schema', () => {
  it('is byte for byte the DDL Python uses', () => {
    expect(AITK_SCHEMA_SQL).toBe(pythonSchema());
  });

  it('opens a DB that Python created and filled, without changing its schema', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aitk-schema-'));
    const file = path.join(dir, 'aitk_db.db');
    const script = `import sys; sys.path.insert(0, ${JSON.stringify(ROOT)})
from toolkit.ui_job_status import create_schema, insert_job
create_schema(${JSON.stringify(file)})
print(insert_job(${JSON.stringify(file)}, "made-by-python", {"job": "extension", "config": {"name": "x", "process": []}}, job_type="inference", status="stopped"))`;
    const id = execFileSync(python, ['-c', script], { encoding: 'utf8' }).trim();
    const schemaOf = () => {
      const raw = new Database(file, { readonly: true });
      const rows = raw.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY name').all();
      raw.close();
      return rows;
    };
    const before = schemaOf();

    process.env.AITK_DB_PATH = file;
    db();
    const job = getJob(id)!;
    expect(job.name).toBe('made-by-python');
    expect(job.stop).toBe(false);
    expect(new Date(job.created_at).getTime()).toBeGreaterThan(Date.parse('2020-01-01'));
    expect(listJobs({ jobType: 'inference' }).map((j) => j.id)).toEqual([id]);
    closeDb();
    expect(schemaOf()).toEqual(before);
  });

  it('stores what Prisma stores: ms timestamps and 0/1 booleans', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aitk-schema-'));
    process.env.AITK_DB_PATH = path.join(dir, 'aitk_db.db');
    const job = createJob({ name: 'n', gpu_ids: '0', job_config: { job: 'extension' } });
    updateJob(job.id, { stop: true });
    const raw = db().prepare('SELECT created_at, updated_at, stop, return_to_queue, status, queue_position FROM "Job"').get() as Record<string, unknown>;
    expect(typeof raw.created_at).toBe('number');
    expect(typeof raw.updated_at).toBe('number');
    expect(raw.stop).toBe(1);
    expect(raw.return_to_queue).toBe(0);
    expect(raw.status).toBe('stopped');
    expect(raw.queue_position).toBe(1000);
    expect(() => createJob({ name: 'n', gpu_ids: '0', job_config: {} })).toThrow(/already exists/);
  });
});
