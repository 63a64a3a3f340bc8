"""The engine through real HTTP, on tiny models. Also a CLI:

    python testing/test_inference_engine.py --arch sd1          # one arch, in this process
    python testing/test_inference_engine.py --arch sd1 --cancel # cancel mid-run, then replay
    python testing/test_inference_engine.py --arch flex2 --controls 1   # with an optional control image
    python testing/test_inference_engine.py --all               # every arch, one subprocess each, + report.md
    python testing/test_inference_engine.py --swap wan21,wan22_5b,wan21   # pool hits for what the models share

Results (files, report.md) go to testing/.engine_test_outputs/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from testing.stream_contract import (  # noqa: E402 (after the path above: the CLI runs as a script)
    body_for,
    cancel_and_replay,
    check_arch,
    swap_sequence,
)

OUTPUTS = ROOT / "testing" / ".engine_test_outputs"


# ================================================================================================ pytest
try:
    import pytest
except ImportError:  # the CLI works without pytest
    pytest = None

if pytest is not None:
    from toolkit.models.registry import ARCHS

    @pytest.mark.parametrize("arch", sorted(ARCHS))
    def test_arch_streams_start_progress_latent_result_end(engine_server, arch):
        check_arch(engine_server.client, arch)

    def test_cancel_mid_run_then_same_holder_replays_byte_identical(engine_server):
        builds = engine_server.engine.counters["holder_builds"]
        cancel_and_replay(engine_server.client)
        assert engine_server.engine.counters["holder_builds"] <= builds + 1  # one build at most, then reuse

    def test_swap_across_families_shares_what_is_byte_identical(tmp_path, tiny_cache):
        """SD1 and Flux carry the same CLIP-L text encoder (in real life too): a swap reuses it, frees the rest."""
        from testing.engine_harness import EngineHarness

        h = EngineHarness(tmp_path)
        try:
            rows = swap_sequence(h.client, ["sd1", "flux", "sd1"])
        finally:
            h.close()
        assert [(r["hits"], r["misses"], r["evictions"]) for r in rows] == [(0, 4, 0), (2, 4, 2), (2, 2, 4)]
        assert all(len(r["shared"]) == 2 for r in rows[1:])

    def test_wait_mode_returns_one_json_object(engine_server):
        out = engine_server.client.generate_wait(body_for("sd1"))
        assert out["http_status"] == 200 and out["result"]["kind"] == "image"
        timings = out["timings"]
        assert os.path.isfile(out["result"]["path"]) and timings["total_s"] > 0
        parts = timings["load_s"] + timings["sample_s"] + timings["save_s"]
        assert timings["step_s"] > 0 and parts <= timings["total_s"] + 0.001  # each rounded to 0.1 ms
        assert 0 < timings["hook_ms"] / 1000 < timings["step_s"]  # the hook is part of a step
        stages = timings["stage_s"]  # where the sampling time went, saving left to save_s
        assert list(stages) == ["encoding", "sampling", "decoding"] and min(stages.values()) > 0
        assert stages["sampling"] >= timings["step_s"] and sum(stages.values()) <= timings["sample_s"] + 0.001

    def test_wait_mode_reports_a_load_failure_as_json(engine_server, tmp_path):
        body = body_for("sd1")
        body["model"]["name_or_path"] = str(tmp_path / "no_such_model")  # inside the model roots, never written
        out = engine_server.client.generate_wait(body)
        assert out["http_status"] == 424 and out["error"]["code"] == "load_failed"
        assert "no_such_model" in out["error"]["message"]


def pytest_cli():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", help="run one arch in this process")
    parser.add_argument("--cancel", action="store_true", help="also cancel mid-run and check the replay")
    parser.add_argument("--all", action="store_true", help="every registered arch, one subprocess each")
    parser.add_argument("--swap", help="comma-separated archs run one after the other, e.g. wan21,wan22_5b")
    parser.add_argument("--json", help="write this arch's report row here (used by --all)")
    parser.add_argument("--controls", type=int, help="control images to upload (default: as many as the arch needs)")
    args = parser.parse_args()
    OUTPUTS.mkdir(parents=True, exist_ok=True)
    if args.all:
        return run_all()
    if args.swap:
        return run_swap(args.swap.split(","))
    if not args.arch:
        parser.error("give --arch NAME or --all")
    return run_one(args.arch, args.cancel, args.json, args.controls)


def run_one(arch: str, cancel: bool, json_path: str | None, controls: int | None = None) -> int:
    from testing.engine_harness import EngineHarness

    harness = EngineHarness(OUTPUTS / arch)
    try:
        row = check_arch(harness.client, arch, controls)
        if cancel:
            row["cancel"] = cancel_and_replay(harness.client, arch)
    except AssertionError as e:
        row = {"arch": arch, "status": "FAIL", "error": str(e)[:2000]}
    except Exception as e:
        row = {"arch": arch, "status": "FAIL", "error": f"{type(e).__name__}: {e}"[:2000]}
    finally:
        harness.close()
    print(json.dumps(row, indent=2))
    if json_path:
        Path(json_path).write_text(json.dumps(row))
    return 0 if row["status"] == "PASS" else 1


def run_swap(archs: list[str]) -> int:
    from testing.engine_harness import EngineHarness

    harness = EngineHarness(OUTPUTS / "swap")
    try:
        rows = swap_sequence(harness.client, archs)
    except AssertionError as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        harness.close()
    for row in rows:
        shared = ", ".join(k.split("|")[1].rsplit("/", 1)[-1] for k in row["shared"]) or "-"
        print(
            f"{row['arch']:16} hits {row['hits']:2}  misses {row['misses']:2}  evictions {row['evictions']:2}  "
            f"resident {row['resident']:2} ({row['resident_mb']} MB)  shared: {shared}"
        )
    print("PASS")
    return 0


def run_all() -> int:
    from toolkit.models.registry import ARCHS

    rows = []
    for arch in sorted(ARCHS):
        out = OUTPUTS / f"{arch}.json"
        out.unlink(missing_ok=True)
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, __file__, "--arch", arch, "--json", str(out)], capture_output=True, text=True, cwd=ROOT
        )
        row = (
            json.loads(out.read_text())
            if out.exists()
            else {"arch": arch, "status": "FAIL", "error": (proc.stderr or proc.stdout)[-1500:]}
        )
        row["process_s"] = round(time.monotonic() - t0, 1)
        rows.append(row)
        print(f"{row['status']:4}  {arch:24} {row['process_s']:6.1f}s  {row.get('error', '')[:120]}", flush=True)
    write_report(rows)
    failed = [r for r in rows if r["status"] != "PASS"]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed  ->  {OUTPUTS / 'report.md'}")
    return 1 if failed else 0


def write_report(rows: list[dict]) -> None:
    lines = [
        "# Engine test report",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}, every arch through the HTTP stream (tiny checkpoints, CPU).",
        "",
        "| arch | result | process s | stream s | output | latent shape | latent frames |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["status"] == "PASS":
            lines.append(
                f"| {r['arch']} | PASS | {r['process_s']} | {r['seconds']} | {r['kind']} .{r['ext']} | "
                f"{r['latent_shape']} | {r['latent_frames']} |"
            )
        else:
            lines.append(f"| {r['arch']} | **FAIL** | {r['process_s']} | | | | {r.get('error', '')[:200]} |")
    (OUTPUTS / "report.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(pytest_cli())
