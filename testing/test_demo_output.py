"""``make demo``'s first lines are the engine's own: no warning from a library that a user cannot act on (torchao's
native kernels, torch's pytree notice and diffusers' torchao note used to open the demo;
toolkit/models/components/loading.py ``QUIET`` drops them where they are logged); and the demo itself, run as a
terminal runs it, prints its URL and little else, and Ctrl+C stops the engine job before the UI."""

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY_NOISE = re.compile(r"Warning|WARNING|^[WE]\d{4} |Failed to load|Unable to import|deprecat", re.IGNORECASE)


def test_the_demo_starts_without_library_warnings(tmp_path):
    with open(os.path.join(ROOT, "config", "examples", "inference_engine_demo.yaml")) as f:
        config = yaml.safe_load(f)
    process = config["config"]["process"][0]
    process.update(training_folder=str(tmp_path / "output"), sqlite_db_path=str(tmp_path / "aitk_db.db"))
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    proc = subprocess.Popen(
        [sys.executable, "run.py", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines, deadline = [], time.monotonic() + 120
    try:
        for line in proc.stdout:  # until the default model has loaded: imports, warm-up and loading are behind
            lines.append(line.rstrip())
            if line.startswith("Loading sd1: scheduler") or time.monotonic() > deadline:
                break
    finally:
        proc.terminate()
        proc.wait(60)
    assert any(line.startswith("Loading sd1: scheduler") for line in lines), "\n".join(lines[-20:])
    noise = [line for line in lines if LIBRARY_NOISE.search(line)]
    assert not noise, noise


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _gone(pid: int) -> bool:
    """No such process, or only its zombie (exited, not yet reaped by whoever is its parent now)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.timeout(900)  # scripts/demo.sh builds the UI first when its sources changed since the last build
def test_ctrl_c_stops_the_engine_job_then_the_ui_and_the_output_is_short(tmp_path):
    """Ctrl+C in a terminal is SIGINT to the whole foreground process group: the demo's. The engine job must end
    as the UI's Stop ends it (Job row `stopped`, engine.json removed, process gone), the UI's port must be free,
    and the demo must exit 0, having printed the page's URL and little else."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("AI_TOOLKIT_AUTH", "PYTHONWARNINGS")}
    env.update(
        PORT=str(port),
        AITK_DB_PATH=str(tmp_path / "aitk_db.db"),
        AITK_TRAINING_FOLDER=str(tmp_path / "output"),
        AITK_DEMO_LOG_DIR=str(tmp_path),
        OMP_NUM_THREADS="1",
    )
    proc = subprocess.Popen(
        ["bash", "scripts/demo.sh"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in proc.stdout), daemon=True)
    reader.start()
    job_folder = tmp_path / "output" / "inference_engine_demo"
    try:
        deadline = time.monotonic() + 780
        while not any("Open http" in line for line in lines):
            assert proc.poll() is None, "\n".join(lines)
            assert time.monotonic() < deadline, "\n".join(lines)
            time.sleep(0.5)
        engine = json.loads((job_folder / "engine.json").read_text())
        assert _listening(port) and _listening(engine["port"])
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(120) == 0, "\n".join(lines)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    reader.join(10)

    deadline = time.monotonic() + 10  # the engine has exited; its parent may be reaping it still
    while not _gone(engine["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(engine["pid"]), f"engine process {engine['pid']} still running"
    assert not (job_folder / "engine.json").exists()
    with sqlite3.connect(tmp_path / "aitk_db.db") as db:
        (status,) = db.execute("SELECT status FROM Job WHERE name = 'inference_engine_demo'").fetchone()
    assert status == "stopped"
    assert not _listening(port), "the UI still listens"
    assert not _listening(engine["port"]), "the engine still listens"

    said = [line.strip() for line in lines if line.strip()]
    assert f"Open http://127.0.0.1:{port}/generate?job=" in "\n".join(said)
    assert len(said) <= 5, said  # a build note (when it built), a starting note, the URL, the Ctrl+C hint, a stop note
    noise = [
        line for line in said if re.search(r"telemetry|Experiments|Route \(app\)|Next\.js|▲|✓", line, re.IGNORECASE)
    ]
    assert not noise, noise
