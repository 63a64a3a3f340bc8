/**
 * AI Toolkit's database schema: exactly what `prisma db push` makes of its ui/prisma/schema.prisma, and
 * exactly toolkit/ui_job_status.py's AITK_SCHEMA_SQL (tests/schema.test.ts keeps the two identical).
 * A DB made by AI Toolkit therefore works unchanged, and one made here works with AI Toolkit.
 *
 * Storage conventions of Prisma's SQLite connector that raw SQL must follow: DateTime columns hold integer
 * milliseconds since the epoch, Booleans hold 0/1.
 */
export const AITK_SCHEMA_SQL = `\
CREATE TABLE "Settings" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL
);

CREATE TABLE "Queue" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "gpu_ids" TEXT NOT NULL,
    "is_running" BOOLEAN NOT NULL DEFAULT false
);

CREATE TABLE "Job" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "gpu_ids" TEXT NOT NULL,
    "job_config" TEXT NOT NULL,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" DATETIME NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'stopped',
    "stop" BOOLEAN NOT NULL DEFAULT false,
    "return_to_queue" BOOLEAN NOT NULL DEFAULT false,
    "step" INTEGER NOT NULL DEFAULT 0,
    "total_steps" INTEGER,
    "info" TEXT NOT NULL DEFAULT '',
    "speed_string" TEXT NOT NULL DEFAULT '',
    "queue_position" INTEGER NOT NULL DEFAULT 0,
    "pid" INTEGER,
    "job_type" TEXT NOT NULL DEFAULT 'train',
    "job_ref" TEXT,
    "save_now" BOOLEAN NOT NULL DEFAULT false,
    "sample_now" BOOLEAN NOT NULL DEFAULT false
);

CREATE UNIQUE INDEX "Settings_key_key" ON "Settings"("key");

CREATE UNIQUE INDEX "Queue_gpu_ids_key" ON "Queue"("gpu_ids");

CREATE INDEX "Queue_gpu_ids_idx" ON "Queue"("gpu_ids");

CREATE UNIQUE INDEX "Job_name_key" ON "Job"("name");

CREATE INDEX "Job_status_idx" ON "Job"("status");

CREATE INDEX "Job_gpu_ids_idx" ON "Job"("gpu_ids");

CREATE INDEX "Job_job_type_idx" ON "Job"("job_type");

CREATE INDEX "Job_job_ref_idx" ON "Job"("job_ref");
`;

/** The same DDL made idempotent (what Python's create_schema runs): creates only what is missing. */
export function createIfMissingSql(): string {
  return AITK_SCHEMA_SQL.replaceAll('CREATE TABLE ', 'CREATE TABLE IF NOT EXISTS ')
    .replaceAll('CREATE UNIQUE INDEX ', 'CREATE UNIQUE INDEX IF NOT EXISTS ')
    .replaceAll('CREATE INDEX ', 'CREATE INDEX IF NOT EXISTS ');
}
