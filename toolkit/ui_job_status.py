"""The job's row in the UI database: status writes, stop flags, and the stop watcher.

The UI launches `python run.py` with `AITK_JOB_ID` set and watches the `Job` row of
`aitk_db.db`. Without that variable, or without the database file, the job runs from a
plain command line and every method here does nothing, so a process can call them freely.

Each operation opens its own connection: the UI writes the same row concurrently, and a
short-lived connection never holds a lock across a slow step. Writes take the write lock
up front (`BEGIN IMMEDIATE`) and are retried with backoff while the database is locked.
"""

import json
import os
import signal
import sqlite3
import threading
import time
import uuid
from contextlib import closing
from typing import Callable, Optional, Tuple, TypeVar

DEFAULT_SQLITE_DB_PATH = "./aitk_db.db"

# Columns a job process may write. Names are interpolated into SQL, so they must come
# from this list and never from the caller.
WRITABLE_COLUMNS = ("status", "info", "step", "total_steps", "speed_string")
# A process writes only the row of its own run: once it is stopped and the job started again, the UI has put
# the new process's pid in the row, and the old one, still cleaning up, must not write "stopped" over it.
# (A row without a pid is a job run by hand with AITK_JOB_ID, where nobody else writes.)
OWN_RUN = 'id = ? AND ("pid" IS NULL OR "pid" = ?)'

# What `prisma db push` creates for AI Toolkit's ui/prisma/schema.prisma. Prisma stores
# DateTime as integer milliseconds since the epoch and Boolean as 0/1.
AITK_SCHEMA_SQL = """\
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
"""

T = TypeVar("T")


def create_schema(db_path: str) -> None:
    """Create AI Toolkit's tables in `db_path` unless they already exist."""
    script = (
        AITK_SCHEMA_SQL.replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ")
        .replace("CREATE UNIQUE INDEX ", "CREATE UNIQUE INDEX IF NOT EXISTS ")
        .replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ")
    )
    with closing(sqlite3.connect(db_path, timeout=30.0)) as conn:
        conn.executescript(script)


def insert_job(
    db_path: str,
    name: str,
    job_config: dict,
    job_type: str = "train",
    gpu_ids: str = "0",
    status: str = "queued",
) -> str:
    """Insert a Job row the way the UI would and return its id (a UUID string)."""
    job_id = str(uuid.uuid4())
    now_ms = int(time.time() * 1000)
    with closing(sqlite3.connect(db_path, timeout=30.0, isolation_level=None)) as conn:
        conn.execute(
            'INSERT INTO "Job" (id, name, gpu_ids, job_config, created_at, updated_at, '
            "status, job_type) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (job_id, name, gpu_ids, json.dumps(job_config), now_ms, now_ms, status, job_type),
        )
    return job_id


def interrupt_main_thread() -> None:
    """Raise KeyboardInterrupt in the main thread, even when it is blocked in a call.

    A process-wide `raise_signal` from a helper thread may be delivered to that thread,
    leaving a main thread blocked in a lock or a syscall asleep; aiming the signal at the
    main thread makes the blocked call return EINTR and the handler run.
    """
    if hasattr(signal, "pthread_kill"):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    else:  # Windows: Python's own handler flags the main thread.
        signal.raise_signal(signal.SIGINT)


class UIJobStatus:
    """Reads and writes one `Job` row; a silent no-op outside UI mode."""

    def __init__(
        self,
        sqlite_db_path: str = DEFAULT_SQLITE_DB_PATH,
        job_id: Optional[str] = None,
        *,
        timeout: float = 30.0,
        base_delay: float = 0.2,
        max_attempts: int = 6,
    ):
        if job_id is None:
            job_id = os.environ.get("AITK_JOB_ID", "").strip() or None
        self.db_path = sqlite_db_path
        self.job_id = job_id
        self.timeout = timeout
        self.base_delay = base_delay
        self.max_attempts = max_attempts
        self.enabled = bool(job_id) and os.path.isfile(sqlite_db_path)
        self.stop_reason: Optional[str] = None  # 'stop' | 'queue', set by the watcher
        self._watcher: Optional[threading.Thread] = None
        self._watcher_done = threading.Event()

    # -- low level ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.db_path, timeout=self.timeout, isolation_level=None)

    def _retry(self, operation: Callable[[], T]) -> T:
        """Run `operation`, backing off while another connection holds the write lock."""
        attempt = 0
        while True:
            try:
                return operation()
            except sqlite3.OperationalError as exc:
                attempt += 1
                if "database is locked" not in str(exc) or attempt >= self.max_attempts:
                    raise
                delay = self.base_delay * 2 ** (attempt - 1)
                print(f"[AITK] Database locked, retrying in {delay:.2f}s (attempt {attempt}/{self.max_attempts})")
                time.sleep(delay)

    def _write(self, sql: str, params: tuple) -> None:
        def operation() -> None:
            with closing(self._connect()) as conn:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute(sql, params)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")

        self._retry(operation)

    def _read_flags(self) -> Tuple[bool, bool]:
        """(stop, return_to_queue); a missing row reads as neither."""

        def operation() -> Tuple[bool, bool]:
            with closing(self._connect()) as conn:
                row = conn.execute('SELECT stop, return_to_queue FROM "Job" WHERE id = ?', (self.job_id,)).fetchone()
            return (False, False) if row is None else (row[0] == 1, row[1] == 1)

        return self._retry(operation)

    # -- writes ------------------------------------------------------------------------

    def update_status(self, status: str, info: Optional[str] = None) -> None:
        """Set `status` (and `info` when given)."""
        if info is None:
            self.update(status=status)
        else:
            self.update(status=status, info=info)

    def update(self, **columns) -> None:
        """Write any of `WRITABLE_COLUMNS` in one transaction."""
        unknown = set(columns) - set(WRITABLE_COLUMNS)
        if unknown:
            raise ValueError(
                f"cannot write Job column(s) {', '.join(sorted(unknown))}; writable: {', '.join(WRITABLE_COLUMNS)}"
            )
        if not self.enabled or not columns:
            return
        names = [name for name in WRITABLE_COLUMNS if name in columns]
        assignments = ", ".join(f'"{name}" = ?' for name in names)
        self._write(f'UPDATE "Job" SET {assignments} WHERE {OWN_RUN}', tuple(columns[n] for n in names) + self._run())

    def _run(self) -> tuple:
        return self.job_id, os.getpid()

    def finish(self, status: str, info: str) -> None:
        """The run's last word: its final status, and ``pid`` cleared so nothing signals a reused pid later."""
        if self.enabled:
            self._write(
                f'UPDATE "Job" SET "status" = ?, "info" = ?, "pid" = NULL WHERE {OWN_RUN}', (status, info) + self._run()
            )

    def complete(self, info: str = "Job completed") -> None:
        self.stop_watcher()
        self.finish("completed", info)

    def on_error(self, e: BaseException) -> None:
        """Record how the job ended; call it from the process's `on_error`."""
        self.stop_watcher()
        if not self.enabled:
            return
        try:
            if isinstance(e, KeyboardInterrupt) or self.stop_reason is not None:
                if self._stop_reason_now() == "queue":
                    self.finish("queued", "Job queued")
                else:
                    self.finish("stopped", "Job stopped")
            else:
                self.finish("error", str(e))
        except Exception as db_error:
            print(f"[AITK] Warning: failed to update DB during error handling: {db_error}")

    # -- reads -------------------------------------------------------------------------

    def should_stop(self) -> bool:
        return self.enabled and self._read_flags()[0]

    def should_return_to_queue(self) -> bool:
        return self.enabled and self._read_flags()[1]

    def _stop_reason_now(self) -> str:
        """Why we are stopping; a SIGINT not sent by our watcher is looked up in the row."""
        if self.stop_reason is not None:
            return self.stop_reason
        stop, return_to_queue = self._read_flags()
        return "queue" if return_to_queue and not stop else "stop"

    # -- stop watcher ------------------------------------------------------------------

    def start_stop_watcher(self, interval: float = 1.0, repeat: float = 5.0) -> None:
        """Poll the stop flags on a daemon thread and SIGINT the main thread when one is set, again every
        ``repeat`` seconds until the job acknowledges the stop (``stop_watcher``).

        The main thread may be deep in a model call or blocked on a queue; a signal reaches
        it wherever it is, and `run.py` turns the KeyboardInterrupt into `on_error`. It can also be lost: a
        KeyboardInterrupt raised while the main thread runs a garbage-collector callback, a ``__del__`` or a
        weakref callback is printed as "Exception ignored" and dropped, and the job would serve on with its row
        `stopping`; hence the repeats. Jobs ignore SIGINT once their stop has begun, so a repeat that arrives
        then changes nothing.
        """
        if not self.enabled or self._watcher is not None:
            return
        self._watcher_done.clear()
        self._watcher = threading.Thread(
            target=self._watch, args=(interval, repeat), name="aitk-stop-watcher", daemon=True
        )
        self._watcher.start()

    def stop_watcher(self) -> None:
        self._watcher_done.set()
        watcher, self._watcher = self._watcher, None
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=5.0)

    def _watch(self, interval: float, repeat: float) -> None:
        while not self._watcher_done.wait(interval):
            try:
                stop, return_to_queue = self._read_flags()
            except Exception as exc:  # a hiccup must not kill the watcher
                print(f"[AITK] Warning: stop watcher could not read the job row: {exc}")
                continue
            if (stop or return_to_queue) and not self._watcher_done.is_set():
                self.stop_reason = "stop" if stop else "queue"
                what = "Stop" if stop else "Return to queue"
                print(f"[AITK] {what} requested, interrupting the job", flush=True)
                interrupt_main_thread()
                while not self._watcher_done.wait(repeat):
                    print(f"[AITK] {what} not acknowledged yet, interrupting the job again", flush=True)
                    interrupt_main_thread()
                return
