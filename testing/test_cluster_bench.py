"""testing/bench/cluster_bench.py's throughput run on CPU (issue #16's GPU run, with tiny models and CPU replicas):
the three clusters start, take the same mix from concurrent clients, and residency routing swaps nothing, so a
GPU session spends its minutes measuring, not finding a broken bench."""

import json
import subprocess
import sys

from testing.test_bench_scripts import ROOT


def test_cluster_bench_throughput_runs_one_replica_residency_and_random_and_residency_never_swaps(tmp_path):
    out = tmp_path / "cluster.json"
    cmd = [sys.executable, "testing/bench/cluster_bench.py", "--clients", "2", "--requests", "8", "--replicas", "2"]
    cmd += ["--vram-budget-gb", "40", "--out", str(out)]  # a budget, as replicas sharing one GPU run
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["args"]["vram_budget_gb"] == 40.0
    runs = result["throughput"]
    for name in ("one_replica", "residency", "random"):
        assert runs[name]["requests"] == 8 and runs[name]["images_per_s"] > 0 and runs[name]["p95_s"] > 0
    assert (runs["residency"]["holder_builds"], runs["residency"]["misses"]) == (0, 0)
    assert runs["one_replica"]["holder_builds"] > 0  # one engine holds one model at a time: the mix swaps
