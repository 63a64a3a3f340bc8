"""The engine as a real job: ``python run.py`` subprocess, a real sqlite Job row, stop from the DB or a signal."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

from extensions_built_in.inference_engine.client import EngineClient
from testing.engine_harness import wait_for
from testing.stream_contract import body_for
from toolkit.ui_job_status import create_schema, insert_job

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def job_row(db, job_id):
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return dict(conn.execute("SELECT * FROM Job WHERE id = ?", (job_id,)).fetchone())


@pytest.fixture()
def engine_job(tmp_path):
    """Starts the engine the way the UI does: a DB row, .job_config.json, AITK_JOB_ID, a detached run.py."""
    db = str(tmp_path / "aitk_db.db")
    create_schema(db)
    folder = tmp_path / "engine_job"
    config = {
        "job": "extension",
        "config": {
            "name": "engine_job",
            "process": [
                {
                    "type": "InferenceEngine",
                    "sqlite_db_path": db,
                    "device": "cpu",
                    "engine": {
                        "job_folder": str(folder),
                        "default_model": {"arch": "sd1", "name_or_path": "tiny:sd1", "dtype": "float32"},
                    },
                }
            ],
        },
    }
    job_id = insert_job(db, "engine_job", config, job_type="inference", status="running")
    folder.mkdir()
    (folder / ".job_config.json").write_text(json.dumps(config))
    log = open(folder / "log.txt", "w")
    proc = subprocess.Popen(
        [sys.executable, "run.py", str(folder / ".job_config.json")],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "AITK_JOB_ID": job_id, "PYTHONUNBUFFERED": "1"},
    )
    engine_json = folder / "engine.json"
    try:
        wait_for(lambda: engine_json.exists() or proc.poll() is not None, 90, "engine.json")
        assert proc.poll() is None, (folder / "log.txt").read_text()[-3000:]
        wait_for(lambda: job_row(db, job_id)["info"].startswith("Idle — sd1"), 60, "the warm load")
        yield proc, db, job_id, engine_json
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        log.close()


def start_long_generation(engine_json):
    """A generation running on a background thread; returns the list its frames land in."""
    frames, progressed = [], threading.Event()

    def run():
        with EngineClient.from_engine_json(str(engine_json), generation_timeout_s=120) as client:
            try:
                for frame in client.generate(body_for("sd1", steps=500)):
                    frames.append(frame)
                    if frame.type == "progress":
                        progressed.set()
            except Exception as e:  # a stream cut without an end frame would land here
                frames.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert progressed.wait(60), frames
    return frames, thread


def test_engine_json_is_private_and_the_row_shows_idle(engine_job):
    proc, db, job_id, engine_json = engine_job
    info = json.loads(engine_json.read_text())
    assert info["host"] == "127.0.0.1" and info["pid"] == proc.pid and len(info["token"]) >= 32
    assert oct(os.stat(engine_json).st_mode & 0o777) == "0o600"
    row = job_row(db, job_id)
    assert row["status"] == "running" and row["info"] == "Idle — sd1 (tiny:sd1)"
    with EngineClient.from_engine_json(str(engine_json), generation_timeout_s=120) as client:
        assert client.health()["warm_up_s"] > 0  # model code imported before the first request


def test_warm_up_imports_the_model_code_a_first_request_would(tmp_path):
    code = (
        "import sys, time; from extensions_built_in.inference_engine.engine import Engine;"
        "from extensions_built_in.inference_engine.settings import EngineSettings;"
        "e = Engine(EngineSettings(output_folder=sys.argv[1], assets_folder=sys.argv[2], compile='off'), 'cpu');"
        "assert 'diffusers.models.modeling_utils' not in sys.modules;"
        "e.warm_up(); assert 'diffusers.models.modeling_utils' in sys.modules"
        " and 'transformers.modeling_utils' in sys.modules and e.health()['warm_up_s'] > 0"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "o"), str(tmp_path / "a")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_job_stop_flag_ends_the_engine_cleanly(engine_job):
    proc, db, job_id, engine_json = engine_job
    frames, thread = start_long_generation(engine_json)
    wait_for(lambda: job_row(db, job_id)["info"].startswith("Generating"), 30, "info 'Generating n/N'")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE Job SET stop = 1 WHERE id = ?", (job_id,))
    assert proc.wait(30) == 0
    thread.join(10)
    row = job_row(db, job_id)
    assert row["status"] == "stopped"
    assert not engine_json.exists()
    assert frames[-1].type == "end" and frames[-1].header["ok"] is False
    assert any(f.type == "error" and f.header["code"] == "cancelled" for f in frames)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signals_end_the_engine_cleanly(engine_job, sig):
    proc, db, job_id, engine_json = engine_job
    frames, thread = start_long_generation(engine_json)
    proc.send_signal(sig)
    assert proc.wait(30) == 0
    thread.join(10)
    assert job_row(db, job_id)["status"] == "stopped"
    assert not engine_json.exists()
    assert frames[-1].type == "end" and any(f.type == "error" for f in frames)


def test_an_engine_removes_only_its_own_engine_json(tmp_path):
    """A stopping engine whose job was started again must leave the new run's engine.json alone."""
    import json
    import os

    from extensions_built_in.inference_engine.InferenceEngine import InferenceEngine

    process = object.__new__(InferenceEngine)  # just the file handling, no job
    process.engine_json = str(tmp_path / "engine.json")
    (tmp_path / "engine.json").write_text(json.dumps({"pid": os.getpid() + 1, "port": 1}))
    process.remove_engine_json()
    assert (tmp_path / "engine.json").exists()
    process.output_folder = str(tmp_path)
    process.write_engine_json("127.0.0.1", 5, "t")
    process.remove_engine_json()
    assert not (tmp_path / "engine.json").exists()
    process.remove_engine_json()  # already gone: nothing to do


def test_engine_json_ignores_a_planted_temp_file_or_link(tmp_path, monkeypatch):
    """A world-readable ``engine.json.tmp`` (or one at the next temp name, or a link there) planted in the job
    folder used to be opened and filled, keeping its 0644 mode: the token came out readable by all."""
    from extensions_built_in.inference_engine import private_file
    from extensions_built_in.inference_engine.InferenceEngine import InferenceEngine

    process = object.__new__(InferenceEngine)  # just the file handling, no job
    process.engine_json, process.output_folder = str(tmp_path / "engine.json"), str(tmp_path)
    planted, victim = tmp_path / "engine.json.tmp", tmp_path / "victim.txt"
    planted.write_text("")
    victim.write_text("theirs")
    os.chmod(planted, 0o644)
    process.write_engine_json("127.0.0.1", 5, "secret-token")
    assert oct(os.stat(tmp_path / "engine.json").st_mode & 0o777) == "0o600"
    assert planted.read_text() == "" and json.loads((tmp_path / "engine.json").read_text())["token"] == "secret-token"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["engine.json", "engine.json.tmp", "victim.txt"]
    # Whoever guesses the next temp name finds it refused, not reused: nothing is written through their file.
    monkeypatch.setattr(private_file, "_random_suffix", lambda: "guessed")
    for plant in (lambda p: p.write_text(""), lambda p: os.symlink(victim, p)):
        guessed = tmp_path / ".engine.json.guessed.tmp"
        plant(guessed)
        with pytest.raises(FileExistsError):
            process.write_engine_json("127.0.0.1", 6, "next-token")
        assert victim.read_text() == "theirs" and json.loads((tmp_path / "engine.json").read_text())["port"] == 5
        guessed.unlink()
