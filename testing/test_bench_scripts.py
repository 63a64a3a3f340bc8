"""The GPU suite's own CPU smoke run (``--tiny``): the script that produces docs/BENCHMARKS.md must not rot
between GPU sessions, which are rare and short."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_suite_tiny_run_measures_streams_and_cancels(tmp_path, tiny_cache):
    out = tmp_path / "out"
    cmd = [sys.executable, "testing/bench/gpu_suite.py", "--tiny", "--out", str(out), "--models", str(tmp_path / "m"),
           "--work", str(tmp_path / "w"), "--families", "flux", "--stages", "measure,cancel,queue", "--repeats", "1",
           "--steps", "4"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((out / "gpu_suite.json").read_text())
    assert results["errors"] == []
    flux = results["families"]["flux"]
    # latest-wins: a reader that falls behind on a busy box gets fewer than 4, never none
    assert 1 <= flux["raw"]["latent_frames"] <= 4 and flux["none"]["latent_frames"] == 0
    assert flux["bare"]["event_step_s"] > 0 and flux["raw"]["ratio_vs_bare"] > 0
    assert flux["raw"]["hook_ms"] > 0 and flux["raw"]["ttfb_ms"] > 0
    assert flux["cancel"]["code"] == "cancelled" and flux["cancel"]["after_ack_s"] >= 0
    queue = flux["queue"]
    assert queue["requests"] == 4 and queue["wall_s"] > 0 and queue["sum_save_s"] > 0
    table = (out / "gpu_suite.md").read_text()
    assert "| flux |" in table and "cancelled" in table and "TINY smoke run" in table and "4 requests at once" in table
