"""``make demo``'s first lines are the engine's own: no warning from a library that a user cannot act on (torchao's
native kernels, torch's pytree notice and diffusers' torchao note used to open the demo;
toolkit/models/components/loading.py ``QUIET`` drops them where they are logged)."""

import os
import re
import subprocess
import sys
import time

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
