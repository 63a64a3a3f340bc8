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

OUTPUTS = ROOT / "testing" / ".engine_test_outputs"
MEDIA_EXTS = {"image": ("png", "jpg", "webp"), "video": ("mp4", "webp"), "audio": ("wav", "mp3", "flac")}


def body_for(arch: str, steps: int = 3, seed: int = 7, **sample) -> dict:
    from toolkit.models import tiny

    return {
        "model": {"arch": arch, "name_or_path": f"tiny:{arch}", "dtype": "float32"},
        "sample": {
            "prompt": "a red circle on a blue background",
            "num_inference_steps": steps,
            "seed": seed,
            **tiny.sample(arch),
            **sample,
        },
    }


def check_arch(client, arch: str, controls: int | None = None) -> dict:
    """One generation, asserting the stream contract; returns a report row (raises AssertionError on a FAIL).
    ``controls``: control images to upload (default: as many as the family needs; flex2's is optional)."""
    import numpy as np

    from toolkit.media_probe import probe
    from toolkit.models.registry import get_model_class

    body = body_for(arch)
    for i in range(get_model_class(arch).control_images if controls is None else controls):
        body["sample"]["ctrl_img" if i == 0 else f"ctrl_img_{i + 1}"] = upload_test_image(client, seed=i)["id"]
    t0 = time.monotonic()
    frames = list(client.generate(body))
    elapsed = time.monotonic() - t0
    types = [f.type for f in frames]
    assert types[0] == "start" and types[-1] == "end", types
    assert frames[-1].header["ok"] is True, [f.header for f in frames if f.type == "error"]
    seqs = [f.seq for f in frames]
    assert all(b > a for a, b in zip(seqs, seqs[1:])), seqs
    start = frames[0].header
    latents = [f for f in frames if f.type == "latent"]
    assert any(t == "progress" for t in types) and latents
    # "sampling" is announced once, as the denoiser starts (before step 1's progress), after encoding
    # (a heartbeat repeats the current status when a stage goes a second without a frame: a slow CI step)
    stages = [
        (i, f.header["stage"]) for i, f in enumerate(frames) if f.type == "status" and not f.header.get("heartbeat")
    ]
    sampling = [i for i, stage in stages if stage == "sampling"]
    encoding = [i for i, stage in stages if stage == "encoding"]
    assert len(sampling) == 1 and encoding and encoding[-1] < sampling[0] < types.index("progress"), stages
    for f in latents:
        assert f.header["shape"] == start["latent"]["shape"], (f.header["shape"], start["latent"]["shape"])
        assert f.header["layout"] == start["latent"]["layout"] and f.header["dtype"] == "float16"
        assert np.isfinite(f.array().astype("float32")).all()
    [result] = [f.header for f in frames if f.type == "result"]
    kind = get_model_class(arch).modality
    assert result["kind"] == kind == start["output"]["kind"] and result["ext"] in MEDIA_EXTS[kind]
    assert os.path.isfile(result["path"]) and os.path.getsize(result["path"]) > 1024
    assert result["path"].endswith("." + result["ext"]) and probe(result["path"])["kind"] == kind
    return {
        "arch": arch,
        "status": "PASS",
        "seconds": round(elapsed, 2),
        "kind": kind,
        "ext": result["ext"],
        "latent_shape": start["latent"]["shape"],
        "latent_frames": len(latents),
        "path": result["path"],
        "timings": result["timings"],
    }


def upload_test_image(client, seed: int = 0, size=(64, 64)) -> dict:
    """A small coloured gradient as a control image, uploaded through /assets like a user's."""
    import tempfile

    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    pixels = (rng.random((size[1], size[0], 3)) * 255).astype("uint8")
    with tempfile.NamedTemporaryFile(suffix=".png", delete=False) as f:
        Image.fromarray(pixels).save(f, format="PNG")
    try:
        return client.upload_asset(f.name)
    finally:
        os.unlink(f.name)


def cancel_and_replay(client, arch: str = "sd1", steps: int = 40) -> dict:
    """Uncancelled run, a run cancelled mid-way, then the uncancelled run again: the two files are identical."""
    body = body_for(arch, steps=steps, seed=99)
    first = next(f.header for f in client.generate(body) if f.type == "result")
    cancelled_frames = []
    for frame in client.generate(body):
        cancelled_frames.append(frame)
        if frame.type == "progress" and frame.header["step"] == 3:
            client.cancel(frame.request_id)
    errors = [f.header for f in cancelled_frames if f.type == "error"]
    assert errors and errors[0]["code"] == "cancelled", errors
    assert cancelled_frames[-1].type == "end" and cancelled_frames[-1].header["ok"] is False
    last_step = max(f.header["step"] for f in cancelled_frames if f.type == "progress")
    assert last_step < steps, "the cancelled run went to the end"
    replay = next(f.header for f in client.generate(body) if f.type == "result")
    assert Path(first["path"]).read_bytes() == Path(replay["path"]).read_bytes()
    return {"arch": arch, "status": "PASS", "cancelled_at_step": last_step}


def swap_sequence(client, archs: list[str]) -> list[dict]:
    """Requests one after the other; per step the pool's hits/misses and what stayed resident.

    Asserts the pool contract: after each request only its own components are resident (keep_resident_gb 0),
    and repeating the last config is a holder fast path with no loads."""
    rows = []
    for arch in archs:
        before = client.health()
        out = client.generate_wait(body_for(arch))
        assert out["http_status"] == 200, out
        after = client.health()
        delta = {k: after["counters"][k] - before["counters"][k] for k in ("hits", "misses", "evictions")}
        kept = {e["key"] for e in before["pool"]} & {e["key"] for e in after["pool"]}
        stale = [e["key"] for e in after["pool"] if not e["in_use"]]
        assert not stale, f"after {arch}: components of an earlier model stayed resident: {stale}"
        rows.append(
            {
                "arch": arch,
                **delta,
                "shared": sorted(kept),
                "resident": len(after["pool"]),
                "resident_mb": round(after["resident_bytes"] / 2**20, 2),
            }
        )
    before = client.health()["counters"]
    client.generate_wait(body_for(archs[-1], seed=8))
    after = client.health()["counters"]
    assert after["misses"] == before["misses"] and after["holder_reuses"] == before["holder_reuses"] + 1
    return rows


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
