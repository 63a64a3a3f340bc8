"""Jobs, processes and the UI database protocol, through real `python run.py` runs.

A test-only extension ("TestStepper") is written into tmp_path and found through
AI_TOOLKIT_EXTENSION_DIRS; it drives its Job row with `UIJobStatus` the way a real
process does. The database is a real sqlite file created with AI Toolkit's schema; a
trigger logs every change of the row so the tests can check the whole sequence.
"""

import json
import os
import random
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from contextlib import closing

import pytest

from jobs.BaseJob import BaseJob, resolve_process_class
from jobs.process.BaseProcess import BaseProcess
from toolkit.paths import TOOLKIT_ROOT
from toolkit.ui_job_status import AITK_SCHEMA_SQL, UIJobStatus, create_schema, insert_job

pytestmark = pytest.mark.slow

STEPPER_INIT = """
from toolkit.extension import Extension

class StepperExtension(Extension):
    uid = "TestStepper"
    name = "Test stepper"

    @classmethod
    def get_process(cls):
        from .stepper import StepperProcess
        return StepperProcess

AI_TOOLKIT_EXTENSIONS = [StepperExtension]
"""

STEPPER_PROCESS = """
import random
import sys
import threading
import time

from jobs.process.BaseExtensionProcess import BaseExtensionProcess
from toolkit.ui_job_status import DEFAULT_SQLITE_DB_PATH, UIJobStatus


class StepperProcess(BaseExtensionProcess):
    def __init__(self, process_id, job, config):
        super().__init__(process_id, job, config)
        self.status = UIJobStatus(self.get_conf("sqlite_db_path", DEFAULT_SQLITE_DB_PATH))
        self.mode = self.get_conf("mode", "steps")
        self.steps = self.get_conf("steps", 3, as_type=int)
        self.step_sleep = self.get_conf("step_sleep", 0.0, as_type=float)

    def run(self):
        super().run()
        print(f"random {random.random()!r}")
        self.status.update_status("running", "Starting")
        self.status.start_stop_watcher(
            self.get_conf("watch_interval", 1.0, as_type=float), self.get_conf("watch_repeat", 5.0, as_type=float)
        )
        self.status.update(total_steps=self.steps, step=0)
        for step in range(1, self.steps + 1):
            time.sleep(self.step_sleep)
            self.status.update(step=step, info=f"Step {step}/{self.steps}")
            print(f"step {step}")
        if self.mode == "block":
            self.status.update(info="Blocking")
            threading.Event().wait(60)  # only a signal aimed at the main thread ends this early
            print("block ended without a signal")
        if self.mode == "swallow":
            self.status.update(info="Blocking")
            try:
                threading.Event().wait(60)
            except KeyboardInterrupt:  # lost, as one raised in a gc callback or a __del__ is
                print("first interrupt lost", flush=True)
            threading.Event().wait(60)
            print("block ended without a signal")
        if self.mode == "fail":
            raise RuntimeError("stepper exploded at the end")
        print("stderr line", file=sys.stderr)
        self.status.complete("Stepper done")

    def on_error(self, e):
        self.status.on_error(e)
"""

# Logs every change of a Job row, so a test sees the whole history, not just the end.
HISTORY_SQL = """
CREATE TABLE history (status TEXT, info TEXT, step INTEGER, total_steps INTEGER);
CREATE TRIGGER job_history AFTER UPDATE ON "Job" BEGIN
    INSERT INTO history VALUES (NEW.status, NEW.info, NEW.step, NEW.total_steps);
END;
"""


@pytest.fixture
def ext_dir(tmp_path):
    folder = tmp_path / f"aitk_test_ext_{uuid.uuid4().hex[:8]}"
    (folder / "stepper_ext").mkdir(parents=True)
    (folder / "stepper_ext" / "__init__.py").write_text(textwrap.dedent(STEPPER_INIT))
    (folder / "stepper_ext" / "stepper.py").write_text(textwrap.dedent(STEPPER_PROCESS))
    return folder


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "aitk_db.db")
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(AITK_SCHEMA_SQL + HISTORY_SQL)
    return path


def make_config(tmp_path, db, **process):
    """Write a job config the way the UI does: JSON in the job folder, absolute DB path."""
    entry = {"type": "TestStepper", "sqlite_db_path": db, "watch_interval": 0.25, **process}
    config = {"job": "extension", "config": {"name": "stepper", "process": [entry]}}
    folder = tmp_path / "output" / "stepper"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".job_config.json"
    path.write_text(json.dumps(config, indent=2))
    return config, str(path)


def run_env(ext_dir, job_id=None, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("AITK_JOB_ID", "SEED")}
    env.update(PYTHONUNBUFFERED="1", AI_TOOLKIT_EXTENSION_DIRS=str(ext_dir), **extra)
    if job_id is not None:
        env["AITK_JOB_ID"] = f"  {job_id}\n"  # the id is stripped, as AI Toolkit does
    return env


def run_tool(args, env, timeout=20):
    return subprocess.run(
        [sys.executable, "run.py", *args],
        cwd=TOOLKIT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def start_tool():
    """Popen `run.py`; whatever is still running when the test ends is killed."""
    started = []

    def start(args, env):
        proc = subprocess.Popen(
            [sys.executable, "run.py", *args],
            cwd=TOOLKIT_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def row(db, job_id):
    with closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        return dict(conn.execute('SELECT * FROM "Job" WHERE id = ?', (job_id,)).fetchone())


def history(db):
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT status, info, step, total_steps FROM history").fetchall()


def set_flag(db, job_id, column):
    assert column in ("stop", "return_to_queue")
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute(f'UPDATE "Job" SET {column} = 1 WHERE id = ?', (job_id,))


def wait_until(predicate, proc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        assert proc.poll() is None, f"process ended early: {proc.communicate()}"
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def finish(proc, timeout=5.0):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


# -- BaseJob / BaseProcess -------------------------------------------------------------


def make_process(entry):
    job = BaseJob({"job": "extension", "config": {"name": "job1", "process": [entry]}, "meta": {"owner": "me"}})
    return BaseProcess(0, job, entry)


def test_get_conf_dotted_keys_as_type_and_required(capsys):
    process = make_process({"type": "t", "a": {"b": {"c": "5"}, "n": None}, "s": "text"})
    assert json.loads(capsys.readouterr().out)["a"]["b"]["c"] == "5"  # config printed as JSON
    assert process.name == "job1" and process.meta == {"owner": "me"}
    assert process.get_conf("a.b.c") == "5"
    assert process.get_conf("a.b.c", as_type=int) == 5
    assert process.get_conf("a.n", "dflt") == "dflt"  # null counts as missing
    assert process.get_conf("a.x.y", 3, as_type=float) == 3.0
    assert process.get_conf("s.x") is None  # walking into a string is "missing"
    with pytest.raises(ValueError, match=r'Missing "config.process\[0\].a.x" key'):
        process.get_conf("a.x", required=True)


def test_base_job_requires_name_and_processes():
    with pytest.raises(ValueError, match=r'Missing "config.name" key'):
        BaseJob({"job": "extension", "config": {}})
    job = BaseJob({"job": "extension", "config": {"name": "n"}})
    with pytest.raises(ValueError, match=r'"config.process" must be a non-empty list'):
        job.load_processes({})
    job.config["process"] = [{"nope": 1}]
    with pytest.raises(ValueError, match=r'Missing "config.process\[0\].type" key'):
        job.load_processes({})


def test_load_processes_accepts_classes_and_strings():
    job = BaseJob({"job": "x", "config": {"name": "n", "process": [{"type": "a"}, {"type": "b"}]}})
    job.load_processes({"a": BaseProcess, "b": "jobs.process.BaseExtensionProcess:BaseExtensionProcess"})
    assert [type(p).__name__ for p in job.process] == ["BaseProcess", "BaseExtensionProcess"]
    assert [p.process_id for p in job.process] == [0, 1]
    assert resolve_process_class("BaseProcess") is BaseProcess  # AI Toolkit's bare-name form


# -- UIJobStatus in process ------------------------------------------------------------


def test_disabled_without_job_id_or_db(db, tmp_path, monkeypatch):
    job_id = insert_job(db, "j", {"job": "extension"})
    monkeypatch.delenv("AITK_JOB_ID", raising=False)
    for status in (UIJobStatus(db), UIJobStatus(str(tmp_path / "missing.db"), job_id)):
        assert not status.enabled
        status.update_status("running", "x")
        status.update(step=3)
        status.start_stop_watcher(0.01)
        assert not status.should_stop() and not status.should_return_to_queue()
        status.on_error(RuntimeError("boom"))
        status.complete()
    assert row(db, job_id)["status"] == "queued" and row(db, job_id)["step"] == 0
    monkeypatch.setenv("AITK_JOB_ID", f" {job_id} ")
    assert UIJobStatus(db).job_id == job_id and UIJobStatus(db).enabled


def test_update_whitelists_columns(db):
    status = UIJobStatus(db, insert_job(db, "j", {}))
    with pytest.raises(ValueError, match="cannot write Job column.*pid"):
        status.update(pid=1)
    status.update(step=4, total_steps=10, speed_string="1.00 iter/sec", info="i")
    got = row(db, status.job_id)
    assert (got["step"], got["total_steps"], got["speed_string"], got["info"]) == (4, 10, "1.00 iter/sec", "i")


def test_flags_and_missing_row(db):
    job_id = insert_job(db, "j", {})
    status = UIJobStatus(db, job_id)
    assert not status.should_stop() and not status.should_return_to_queue()
    set_flag(db, job_id, "return_to_queue")
    assert status.should_return_to_queue() and not status.should_stop()
    assert not UIJobStatus(db, "no-such-id").should_stop()


def hold_write_lock(db, seconds, locked):
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        locked.set()
        time.sleep(seconds)
        conn.execute("COMMIT")


@pytest.mark.parametrize("timeout, retried", [(0.05, True), (30.0, False)])
def test_write_during_a_held_write_lock_lands(db, capsys, timeout, retried):
    """Short busy timeout: our backoff retries; default timeout: sqlite's busy wait."""
    status = UIJobStatus(db, insert_job(db, "j", {}), timeout=timeout, base_delay=0.1)
    locked = threading.Event()
    holder = threading.Thread(target=hold_write_lock, args=(db, 1.0, locked))
    holder.start()
    locked.wait(5)
    started = time.monotonic()
    status.update(step=42)
    elapsed = time.monotonic() - started
    holder.join()
    assert row(db, status.job_id)["step"] == 42
    assert elapsed >= 0.5
    assert ("[AITK] Database locked, retrying" in capsys.readouterr().out) is retried


def test_lock_retries_give_up_and_other_errors_raise_at_once(db, tmp_path):
    status = UIJobStatus(db, insert_job(db, "j", {}), timeout=0.02, base_delay=0.02, max_attempts=2)
    locked = threading.Event()
    holder = threading.Thread(target=hold_write_lock, args=(db, 0.6, locked))
    holder.start()
    locked.wait(5)
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        status.update(step=1)
    holder.join()
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        UIJobStatus(str(empty), "id", base_delay=1.0).update(step=1)
    assert time.monotonic() - started < 0.5


def test_create_schema_and_insert_job_match_prisma_storage(tmp_path):
    db = str(tmp_path / "fresh.db")
    create_schema(db)
    create_schema(db)  # idempotent
    job_id = insert_job(db, "n", {"job": "extension", "config": {"name": "n"}}, job_type="inference")
    got = row(db, job_id)
    uuid.UUID(job_id)
    assert json.loads(got["job_config"])["config"]["name"] == "n"
    assert isinstance(got["created_at"], int) and got["created_at"] > 1_600_000_000_000
    assert (got["status"], got["stop"], got["return_to_queue"], got["step"]) == ("queued", 0, 0, 0)
    assert (got["gpu_ids"], got["job_type"], got["info"], got["total_steps"]) == ("0", "inference", "", None)
    with pytest.raises(sqlite3.IntegrityError):
        insert_job(db, "n", {})  # Job_name_key
    with closing(sqlite3.connect(db)) as conn:
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        conn.execute("INSERT INTO Queue (gpu_ids) VALUES ('0')")
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("INSERT INTO Queue (gpu_ids) VALUES ('0')")
    assert {
        "Job_name_key",
        "Job_status_idx",
        "Job_gpu_ids_idx",
        "Job_job_type_idx",
        "Job_job_ref_idx",
        "Queue_gpu_ids_key",
        "Queue_gpu_ids_idx",
        "Settings_key_key",
    } <= indexes


# -- real run.py subprocesses ----------------------------------------------------------


def test_ui_mode_run_to_completion(tmp_path, db, ext_dir):
    config, path = make_config(tmp_path, db, steps=3)
    job_id = insert_job(db, "stepper", config, status="running")
    result = run_tool([path], run_env(ext_dir, job_id))
    assert result.returncode == 0, result.stderr
    assert history(db) == [
        ("running", "Starting", 0, None),
        ("running", "Starting", 0, 3),
        ("running", "Step 1/3", 1, 3),
        ("running", "Step 2/3", 2, 3),
        ("running", "Step 3/3", 3, 3),
        ("completed", "Stepper done", 3, 3),
    ]
    assert '"type": "TestStepper"' in result.stdout  # process config printed for the log
    assert "1 completed job" in result.stdout


def test_stop_flag_interrupts_a_main_thread_blocked_in_a_wait(tmp_path, db, ext_dir, start_tool):
    config, path = make_config(tmp_path, db, mode="block", steps=2, step_sleep=0.05)
    job_id = insert_job(db, "stepper", config, status="running")
    proc = start_tool([path], run_env(ext_dir, job_id))
    wait_until(lambda: row(db, job_id)["info"] == "Blocking", proc)
    set_flag(db, job_id, "stop")
    flagged = time.monotonic()
    code, out, err = finish(proc)
    assert time.monotonic() - flagged < 3.0
    assert code == 0, err
    assert (row(db, job_id)["status"], row(db, job_id)["info"]) == ("stopped", "Job stopped")
    assert "Job stopped" in out and "[AITK] Stop requested" in out
    assert "block ended without a signal" not in out


def test_a_lost_interrupt_is_sent_again_until_the_job_stops(tmp_path, db, ext_dir, start_tool):
    """A KeyboardInterrupt raised while the main thread runs a gc callback or a ``__del__`` is printed and dropped;
    the watcher interrupts again until the job acknowledges the stop, so the row does not stay `stopping`."""
    config, path = make_config(tmp_path, db, mode="swallow", steps=1, watch_repeat=0.5)
    job_id = insert_job(db, "stepper", config, status="running")
    proc = start_tool([path], run_env(ext_dir, job_id))
    wait_until(lambda: row(db, job_id)["info"] == "Blocking", proc)
    set_flag(db, job_id, "stop")
    code, out, err = finish(proc)
    assert code == 0, err
    assert (row(db, job_id)["status"], row(db, job_id)["info"]) == ("stopped", "Job stopped")
    assert "first interrupt lost" in out and "interrupting the job again" in out
    assert "block ended without a signal" not in out


def test_return_to_queue_ends_as_queued(tmp_path, db, ext_dir, start_tool):
    config, path = make_config(tmp_path, db, steps=400, step_sleep=0.02)
    job_id = insert_job(db, "stepper", config, status="running")
    proc = start_tool([path], run_env(ext_dir, job_id))
    wait_until(lambda: row(db, job_id)["step"] >= 2, proc)
    set_flag(db, job_id, "return_to_queue")
    flagged = time.monotonic()
    code, out, err = finish(proc)
    assert time.monotonic() - flagged < 3.0
    assert code == 0, err
    got = row(db, job_id)
    assert (got["status"], got["info"]) == ("queued", "Job queued")
    assert 2 <= got["step"] < 400


def test_exception_marks_error_and_exits_non_zero(tmp_path, db, ext_dir):
    config, path = make_config(tmp_path, db, mode="fail", steps=1)
    job_id = insert_job(db, "stepper", config, status="running")
    result = run_tool([path], run_env(ext_dir, job_id))
    assert result.returncode == 1
    assert (row(db, job_id)["status"], row(db, job_id)["info"]) == ("error", "stepper exploded at the end")
    assert "Error running job: stepper exploded at the end" in result.stdout
    assert "RuntimeError: stepper exploded at the end" in result.stderr


def test_without_job_id_the_job_runs_and_the_db_is_untouched(tmp_path, db, ext_dir):
    config, path = make_config(tmp_path, db, steps=3)
    job_id = insert_job(db, "stepper", config, status="running")
    result = run_tool([path], run_env(ext_dir))
    assert result.returncode == 0, result.stderr
    assert "step 3" in result.stdout
    assert history(db) == [] and row(db, job_id)["status"] == "running"


def test_log_file_tee_appends_stdout_and_stderr(tmp_path, db, ext_dir):
    _, path = make_config(tmp_path, db, steps=2)
    log = tmp_path / "logs" / "deeper" / "run.log"
    log.parent.mkdir(parents=True)
    log.write_text("previous run\n")
    result = run_tool([path, "-l", str(log)], run_env(ext_dir))
    assert result.returncode == 0, result.stderr
    text = log.read_text()
    assert text.startswith("previous run\n")
    for line in ("Running job: stepper", "step 2", "stderr line", "1 completed job"):
        assert line in text
    assert "step 2" in result.stdout and "stderr line" in result.stderr
    fresh = tmp_path / "new_dir" / "log.txt"
    assert run_tool([path, "--log", str(fresh)], run_env(ext_dir)).returncode == 0
    assert "step 2" in fresh.read_text()


def test_bad_config_exits_1_and_recover_continues(tmp_path, db, ext_dir):
    _, path = make_config(tmp_path, db, steps=1)
    missing = str(tmp_path / "missing.yaml")
    result = run_tool([missing], run_env(ext_dir))
    assert result.returncode == 1
    assert "Could not find config file" in result.stderr
    result = run_tool(["-r", missing, path], run_env(ext_dir))
    assert result.returncode == 0, result.stderr
    assert "1 completed job" in result.stdout and "1 failure" in result.stdout


def test_unknown_process_type_names_the_choices(tmp_path, db, ext_dir):
    path = tmp_path / "unknown.json"
    path.write_text(json.dumps({"job": "extension", "config": {"name": "u", "process": [{"type": "Nope"}]}}))
    result = run_tool([str(path)], run_env(ext_dir))
    assert result.returncode == 1
    assert 'Unknown process type "Nope"' in result.stderr and "TestStepper" in result.stderr


def test_name_flag_and_seed(tmp_path, db, ext_dir):
    config, _ = make_config(tmp_path, db, steps=1)
    config["config"]["name"] = "[name]"
    path = tmp_path / "named.yaml"
    path.write_text(json.dumps(config))  # JSON is valid YAML
    result = run_tool([str(path), "-n", "my_run"], run_env(ext_dir, SEED="123"))
    assert result.returncode == 0, result.stderr
    assert "Running job: my_run" in result.stdout
    assert f"random {random.Random(123).random()!r}" in result.stdout


def set_pid(db, job_id, pid):
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute('UPDATE "Job" SET pid = ? WHERE id = ?', (pid, job_id))


def test_a_process_writes_only_its_own_run_and_clears_the_pid_when_it_ends(db):
    """Stop, then start again: the old process, still cleaning up, must not write over the new run's row."""
    job_id = insert_job(db, "j", {})
    status = UIJobStatus(db, job_id)
    set_pid(db, job_id, os.getpid())  # our run, as the UI records it
    status.update_status("running", "mine")
    assert (row(db, job_id)["status"], row(db, job_id)["info"]) == ("running", "mine")
    set_pid(db, job_id, 999_999_999)  # the UI restarted the job: another process's run now
    status.update_status("running", "stale")
    status.on_error(KeyboardInterrupt())
    assert (row(db, job_id)["info"], row(db, job_id)["pid"]) == ("mine", 999_999_999)
    set_pid(db, job_id, os.getpid())
    status.on_error(KeyboardInterrupt())
    assert (row(db, job_id)["status"], row(db, job_id)["pid"]) == ("stopped", None)
    set_pid(db, job_id, None)  # run by hand with AITK_JOB_ID: no pid recorded, the row is ours
    status.complete("done")
    assert (row(db, job_id)["status"], row(db, job_id)["info"]) == ("completed", "done")
