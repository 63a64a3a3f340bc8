"""testing/bench/load_test.py in miniature, and load_soak.py's readings: the RSS plateau of a soak and the result
files checked at its end."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_load_test_short_run_loses_nothing_and_refuses_every_hostile_body(tmp_path, tiny_cache):
    """testing/bench/load_test.py in miniature (docs/RELIABILITY.md has the 200-client, 5-minute runs)."""
    out = tmp_path / "load.json"
    cmd = [
        sys.executable,
        "testing/bench/load_test.py",
        "--target",
        "engine",
        "--clients",
        "12",
        "--duration",
        "8",
        "--max-queue",
        "4",
        "--out",
        str(out),
    ]
    done = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["server_errors"] == 0 and result["lost"] == 0 and result["hostile_not_refused"] == []
    assert result["max_queue_position_seen"] <= 4 and result["engine_answers_after"]
    counts = result["counts"]
    assert counts["accepted"] > 0 and counts.get("ended_with_result", 0) > 0 and counts["hostile_refused"] > 0
    assert counts.get("refused_queue_full", 0) > 0  # 12 clients against a cap of 4
    assert result["ttfb_ms"]["n"] > 0 and result["engine"]["fds_after_warmup"][1] > 0
    checked = result["results_at_the_end"]
    assert checked["results"] > 0 and not (checked["missing"] or checked["broken"] or checked["temp_files_left"])
    assert result["engine"]["rss_growth_last_30_min"]["growth_mb"] is None  # 8 s is not a soak


def test_the_soak_s_rss_growth_is_the_last_engine_s_over_the_last_half_hour():
    from testing.bench.load_soak import rss_growth

    def samples(pid, start, end, rss_at):
        return [{"t": t, "pid": pid, "rss_mb": rss_at(t)} for t in range(start, end + 1, 10)]

    killed = samples(1, 0, 900, lambda t: 900.0)  # a killed engine's samples never count
    flat = killed + samples(2, 920, 3600, lambda t: 500.0 + (3.0 if t > 3000 else 0.0))
    assert rss_growth(flat)["growth_mb"] == 3.0 and rss_growth(flat)["pid"] == 2
    creeping = killed + samples(2, 920, 3600, lambda t: 500.0 + t / 100)
    assert rss_growth(creeping)["growth_mb"] == 16.8  # 0.6 MB a minute, medians 28 minutes apart: over 5 MB
    short = samples(2, 0, 1500, lambda t: 500.0)
    assert rss_growth(short)["growth_mb"] is None and "under 1800" in rss_growth(short)["why"]


def test_the_soak_finds_a_missing_a_half_written_and_a_left_over_result(tmp_path):
    import numpy as np
    from PIL import Image

    from testing.bench.load_soak import check_results

    paths = []
    for i in range(3):
        path = tmp_path / f"r{i}.png"
        Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(path)
        path.with_suffix(".json").write_text("{}")
        paths.append(str(path))
    assert check_results(paths) == {"results": 3, "missing": [], "broken": [], "temp_files_left": []}
    data = open(paths[1], "rb").read()
    open(paths[1], "wb").write(data[: len(data) // 2])
    os.remove(paths[2])
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "r9.png").write_bytes(b"x")
    found = check_results(paths)
    assert found["missing"] == [paths[2]] and found["broken"][0].startswith(paths[1])
    (tmp_path / "r0.json.tmp").write_text("{")
    found = check_results(paths)
    assert found["temp_files_left"] == [str(tmp_path / ".tmp" / "r9.png"), str(tmp_path / "r0.json.tmp")]
