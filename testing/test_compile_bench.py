"""testing/bench/compile_bench.py on CPU with real inductor and tiny models: each stage runs the code the GPU
machine runs, so a session's device minutes are not spent finding a broken variant."""

import json
import subprocess
import sys

from testing.test_bench_scripts import ROOT


def test_compile_bench_restart_reuses_the_engines_compile_cache(tmp_path, tiny_cache):
    """testing/bench/compile_bench.py's restart stage on CPU with real inductor: an engine started again on the same
    ``engine.compile_cache_dir`` compiles in a fraction of the first start's time, and the cache is in that folder
    (importing diffusers had pointed inductor at /tmp, and the folder stayed empty)."""
    out, work = tmp_path / "out", tmp_path / "w"
    cmd = [
        sys.executable,
        "testing/bench/compile_bench.py",
        "--out",
        str(out),
        "--tiny",
        "--models",
        str(tmp_path / "m"),
    ]
    cmd += ["--work", str(work), "--families", "flux", "--stages", "restart"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    restart = json.loads((out / "compile_bench.json").read_text())["restart"]
    row, warm_up = restart["flux"], restart["engine_warm_up_s"]
    assert warm_up["first_start"] > 0 and warm_up["after_restart"] > 0  # waited for, so not in the first request
    first, again = row["first_start"], row["after_restart"]
    assert first["compile_s"] > 0 and first["graphs_added_by_second_request"] == 0
    assert again["graphs_added_by_second_request"] == 0
    assert row["after_restart_over_first"] < 0.5, row
    assert (work / "compile_cache" / "fxgraph").is_dir()
    # Split by dynamo's timers: the caches took the backend's share; tracing is paid at every start.
    phases = first["compile_phases_s"], again["compile_phases_s"]
    assert phases[1]["backend"] < phases[0]["backend"] / 2 and min(p["tracing"] for p in phases) > 0, phases


def test_compile_bench_tuning_times_each_lossless_variant(tmp_path, tiny_cache):
    """testing/bench/compile_bench.py's tuning stage on CPU with real inductor: each variant (fused projections,
    the transformer as one graph, all the lossless gains at once) compiles from eager and is timed, none fails,
    the JSON names them all."""
    out = tmp_path / "out"
    cmd = [sys.executable, "testing/bench/compile_bench.py", "--out", str(out), "--tiny", "--models", str(tmp_path)]
    cmd += ["--work", str(tmp_path / "w"), "--families", "flux", "--stages", "tuning", "--steps", "2", "--repeats", "1"]
    cmd += ["--variants", "fused_qkv,whole,whole_graphs,whole_graphs_fused_qkv_cdt"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((out / "compile_bench.json").read_text())
    rows = result["tuning"]["flux"]
    assert set(rows) == {"fused_qkv", "whole", "whole_graphs", "whole_graphs_fused_qkv_cdt"} and result["errors"] == []
    assert all(row["step_s"] > 0 and row["first_s"] > 0 for row in rows.values()), rows


def test_compile_bench_tuning_settings_are_inductor_s_own_and_undone_after_the_variant():
    """A renamed inductor setting fails here, not as a lost variant on the GPU machine."""
    import torch._inductor.config as config

    from testing.bench.compile_bench import _inductor_settings

    settings = _inductor_settings("max_autotune_cdt_tma")
    assert set(settings) == {
        "coordinate_descent_tuning",
        "coordinate_descent_check_all_directions",
        "triton.enable_persistent_tma_matmul",
    }
    # Off first: torchao, imported by an earlier test in the same process, switches coordinate descent on for it.
    with config.patch({"coordinate_descent_tuning": False, "triton.enable_persistent_tma_matmul": False}):
        with config.patch(settings):
            assert config.coordinate_descent_tuning and config.triton.enable_persistent_tma_matmul
        assert not config.coordinate_descent_tuning and not config.triton.enable_persistent_tma_matmul
    assert _inductor_settings("whole_graphs") == {}


def test_compile_bench_attention_times_each_kernel_alone_eager_and_compiled(tmp_path, tiny_cache):
    """The attention stage on CPU: the flash kernel (the one a CPU has) timed eager and compiled; a kernel that
    cannot take the call, FA4 without its package included, is a row saying why, not a failed run."""
    out = tmp_path / "out"
    cmd = [sys.executable, "testing/bench/compile_bench.py", "--out", str(out), "--tiny", "--models", str(tmp_path)]
    cmd += ["--work", str(tmp_path / "w"), "--families", "flux", "--stages", "attention", "--steps", "2"]
    cmd += ["--repeats", "1"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((out / "compile_bench.json").read_text())
    rows = result["attention"]["flux"]
    assert rows["flash"]["step_s"] > 0 and rows["flash_compiled"]["step_s"] > 0 and result["errors"] == []
    assert "flash_attn" in rows["fa4"]["unsupported"] and "flash_attn" in rows["fa4_compiled"]["unsupported"]
    assert "No viable backend" in rows["cudnn"]["unsupported"]


def test_compile_bench_engine_fast_keeps_every_request_and_passes_the_frozen_heap_setting(tmp_path, tiny_cache):
    """The engine stage's ``requests``: one row per timed request, each from that request's own result (a median
    and the last request's timings hid a creep across requests on an H100); ``--freeze-heap off`` reaches the
    engine's config, so the run with the heap frozen and the one without compare the setting, not two harnesses."""
    out, work = tmp_path / "out", tmp_path / "w"
    cmd = [sys.executable, "testing/bench/compile_bench.py", "--out", str(out), "--tiny", "--models", str(tmp_path)]
    cmd += ["--work", str(work), "--families", "flux", "--stages", "engine_fast", "--speeds", "lossless"]
    cmd += ["--fast-steps", "2", "--repeats", "3", "--freeze-heap", "off"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    row = json.loads((out / "compile_bench.json").read_text())["engine_fast"]["lossless"]
    requests = row["requests"]
    assert [r["s"] for r in requests] == row["e2e_runs"] and len(requests) == 3
    assert all(r["sampling_s"] > 0 and r["step_s"] > 0 and r["save_s"] > 0 for r in requests), requests
    assert len({r["picked_at"] for r in requests}) == 3  # each row its own request's
    config = json.loads((work / "engine_fast" / "engine_config.json").read_text())
    assert config["config"]["process"][0]["engine"]["freeze_heap"] is False


def test_compile_bench_peer_line_alternates_the_engine_and_each_peer_with_both_resident(tmp_path, tiny_cache):
    """testing/bench/peer_line.py: the engine and bare diffusers (then a cache around it) resident at once, their
    requests alternating with the order swapped every pair, so a card that drifts reaches both alike; the verdict
    compares the engine's median with the peer's, the PNG written on both sides; the two compute the same image."""
    out, work = tmp_path / "out", tmp_path / "w"
    cmd = [sys.executable, "testing/bench/compile_bench.py", "--out", str(out), "--tiny", "--models", str(tmp_path)]
    cmd += ["--work", str(work), "--families", "flux", "--stages", "peer_line", "--fast-steps", "2"]
    cmd += ["--repeats", "4", "--fast-variants", "magcache,fp8"]  # fp8 is no peer: left out
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((out / "compile_bench.json").read_text())
    assert results["errors"] == []
    row = results["peer_line"]
    assert {"bare", "magcache"} <= set(row) and "fp8" not in row
    assert row["engine_first_s"] > 0 and row["engine_vs_bare_image"]["psnr_db"] > 40
    for peer in ("bare", "magcache"):
        line = row[peer]
        peer_at = [r["at"] for r in line["peer"]["runs"]]
        engine_at = [r["picked_at"] for r in line["engine"]["requests"]]
        assert len(peer_at) == len(engine_at) == 4
        assert [p < e for p, e in zip(peer_at, engine_at)] == [True, False, True, False]  # the order swapped
        assert line["engine_plans_seen"] == 1  # no plan on a CPU; a changed one: the test below
        peer_s, engine_s = line["peer"]["e2e_with_file_s"], line["engine"]["e2e_s"]
        assert line["holds"] == (engine_s <= peer_s) and line["peer"]["e2e_s"] < peer_s
        assert len(line["engine_minus_peer_s"]) == 4


def test_the_bench_reads_each_component_s_placement_from_the_engine_s_memory_plan():
    """compile_bench's engine requests keep the plan their status frame carried, in the shape the engine sends
    (``Plan.describe``): it read a key the frame never had, and every plan came back None."""
    from testing.bench.peer_line import plan_row
    from toolkit.memory_plan import GIB, Part, Plan, Workload, peak_bytes

    parts = (Part("transformer", "denoiser", 10 * GIB), Part("text_encoder", "encoder", 8 * GIB))
    parts += (Part("vae", "decoder", GIB),)
    work = Workload(denoise=2 * GIB, decode=6 * GIB, decode_tiled=GIB, encode=GIB)
    placements = {"transformer": "gpu", "text_encoder": "visit", "vae": "gpu"}
    plan = Plan(placements, False, peak_bytes(parts, placements, work, False), 0, parts, work=work)
    row = plan_row(json.loads(json.dumps(plan.describe())))  # as it crosses the wire
    assert row == {"summary": plan.summary(), "placements": placements}


def test_the_peer_line_counts_a_memory_plan_that_changed_with_the_peer_resident():
    """A peer loaded beside the engine could squeeze its next plan (a text encoder sent to the host): the summary
    counts the distinct plans, so a race against a handicapped engine shows instead of passing as a win."""
    from testing.bench.peer_line import _summary

    timings = {"stage_s": {"sampling": 1.0}, "step_s": 0.1, "hook_ms": 0.5, "save_s": 0.02, "gc_s": 0.0}
    gpu = {"summary": "all on the GPU", "placements": {"transformer": "gpu", "text_encoder": "gpu"}}
    visit = {"summary": "text encoder visits", "placements": {"transformer": "gpu", "text_encoder": "visit"}}
    engine = [{"s": s, "plan": plan, "timings": timings} for s, plan in ((1.1, gpu), (1.3, visit), (1.2, gpu))]
    peer = [{"e2e_s": s - 0.05, "e2e_with_file_s": s, "e2e_docs_file_s": s + 0.1, "at": 0} for s in (1.25, 1.2, 1.3)]
    line = _summary(peer, engine, gpu)
    assert line["engine_plans_seen"] == 2
    assert line["engine"]["e2e_s"] == 1.2 and line["peer"]["e2e_with_file_s"] == 1.25 and line["holds"]
    assert line["engine_minus_peer_s"] == [-0.15, 0.1, -0.1] and line["engine_over_peer_pct"] == -4.0
    assert _summary(peer, engine[::2], gpu)["engine_plans_seen"] == 1
