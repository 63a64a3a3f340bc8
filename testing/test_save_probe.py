"""testing/bench/save_probe.py's CPU smoke run: the probe that splits a result's save time on the GPU machine
(issue #14's peer line) must not rot between GPU sessions."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_save_probe_times_each_layer_of_the_save_beside_the_engines_own_save_s(tmp_path, tiny_cache):
    """testing/bench/save_probe.py: the engine's ``save_s`` for its pictures, then every layer of that save on
    the engine's last picture, each with its runs."""
    cmd = [sys.executable, "testing/bench/save_probe.py", "--tiny", "--out", str(tmp_path / "out"), "--size", "128"]
    cmd += ["--models", str(tmp_path / "m"), "--work", str(tmp_path / "w"), "--repeats", "2"]
    done = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "save_probe.json").read_text())
    assert len(results["engine"]["runs"]) == 3 and results["engine"]["save_s"] > 0
    assert Path(results["engine"]["path"]).suffix == ".png"
    layers = results["layers"]
    assert set(layers) == {"pil_save", "save_image", "save_media", "save_generated", "save_generated_thread"}
    assert all(len(layer["runs"]) == 2 and layer["median_s"] > 0 for layer in layers.values()), layers
