"""The GPU suite's own CPU smoke run (``--tiny``): the script that produces docs/BENCHMARKS.md must not rot
between GPU sessions, which are rare and short."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_suite_tiny_run_measures_streams_and_cancels(tmp_path, tiny_cache):
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "testing/bench/gpu_suite.py",
        "--tiny",
        "--out",
        str(out),
        "--models",
        str(tmp_path / "m"),
        "--work",
        str(tmp_path / "w"),
        "--families",
        "flux",
        "--stages",
        "measure,cancel,queue",
        "--repeats",
        "1",
        "--steps",
        "4",
    ]
    done = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
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
    assert len(queue["gaps_s"]) == 3 and all(0 <= g < queue["wall_s"] for g in queue["gaps_s"])  # where a queue stalls
    table = (out / "gpu_suite.md").read_text()
    assert "| flux |" in table and "cancelled" in table and "TINY smoke run" in table and "4 requests at once" in table


def test_compile_bench_tiny_run_times_max_beside_auto_and_the_tiers_through_the_engine(tmp_path, tiny_cache):
    """testing/bench/compile_bench.py's stages of issue #14's next queue (inductor on this CPU, tiny Flux); ``max``
    with its modulation table planned per request, then filled per call, then planned again; ``blocks`` (``auto``
    without the table) first."""
    cmd = [sys.executable, "testing/bench/compile_bench.py", "--tiny", "--out", str(tmp_path / "out")]
    cmd += ["--models", str(tmp_path / "m"), "--work", str(tmp_path / "w"), "--families", "flux", "--steps", "2"]
    cmd += ["--repeats", "1", "--stages", "tuning,fast,engine_fast", "--speeds", "lossless,cache"]
    cmd += ["--fast-steps", "2", "--fast-variants", "magcache"]  # the peers' stage: float8 left out
    cmd += ["--variants", "blocks,auto,max,max_per_step,max"]  # max again: its table bound again after the one before
    done = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "compile_bench.json").read_text())
    tuning = results["tuning"]["flux"]
    assert set(tuning) == {"blocks", "auto", "max", "max_per_step", "max_4"}
    assert all(row["step_s"] > 0 and row["psnr_db"] > 40 for row in tuning.values()), tuning
    tiers = results["engine_fast"]
    assert set(tiers) == {"lossless", "cache"} and tiers["cache"]["psnr_db"] > 20 and tiers["lossless"]["e2e_s"] > 0
    assert len(tiers["lossless"]["e2e_runs"]) == 1
    bare = results["fast"]
    assert set(bare) == {"lossless", "magcache"}, bare  # only the variant asked for
    lossless = bare["lossless"]
    assert min(lossless["e2e_with_file_s"], lossless["e2e_docs_file_s"]) >= lossless["e2e_s"] > 0  # + the file (ms)
    assert bare["magcache"]["psnr_db"] > 20


def test_budget_probe_tiny_run_splits_each_request_into_phases(tmp_path, tiny_cache):
    """testing/bench/budget_probe.py on CPU with small models (the GPU run is what docs/BENCHMARKS.md reports)."""
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "testing/bench/budget_probe.py",
        "--out",
        str(out),
        "--tiny",
        "--models",
        str(tmp_path / "m"),
        "--work",
        str(tmp_path / "w"),
        "--te-layers",
        "2",
        "--steps",
        "3",
        "--options",
        "none,low_vram,quantize",
    ]
    done = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((out / "budget_probe_24gb.json").read_text())
    for name in ("none", "low_vram"):
        for run in ("cold", "warm"):
            phases = result["options"][name][run]["phases"]
            assert set(phases) >= {"encode", "sample", "decode", "save"} and all(v >= 0 for v in phases.values())
        assert "load" in result["options"][name]["cold"]["phases"]
    assert result["options"]["quantize"]["cold"]["http_status"] == 422  # fp8 needs CUDA: refused, named


def test_family_sweep_tiny_run_checks_each_output_and_records_the_plan(tmp_path, tiny_cache):
    """testing/bench/family_sweep.py on CPU at real widths, one layer per stack (the GPU run is docs/BENCHMARKS.md's
    per-family table)."""
    out = tmp_path / "out"
    cmd = [sys.executable, "testing/bench/family_sweep.py", "--out", str(out), "--models", str(tmp_path / "m")]
    cmd += [
        "--work",
        str(tmp_path / "w"),
        *"--tiny --families flux --budgets 0,24 --steps 2 --bare --engines 2 --repeats 2".split(),
        *"--quality bf16,int8 --quality-steps 2 --memory-quality fast --host-ram-gb 64 --from-image".split(),
    ]
    done = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((out / "family_sweep.json").read_text())
    flux = result["families"]["flux"]
    assert flux["build"]["gib"]["transformer"] > 0 and not (tmp_path / "m" / "flux").exists()  # deleted after
    for budget in ("0", "24"):
        run = flux["runs"][budget]
        assert "exception" not in run and run["warm"]["output"]["ok"] and run["warm"]["output"]["kind"] == "image"
        assert run["warm"]["timings"]["step_s"] > 0 and run["plan"]["source"] == "default"
        assert run["prompt_cache"]["hits"] >= 1 and run["new_prompt"]["output"]["ok"]  # warm repeats the prompt
        assert len(run["engines"]) == 2 and all(e["ok"] and e["step_s"] > 0 for e in run["engines"])
        # --repeats 2: one more warm and one more new-prompt request per engine, a prompt of its own each
        assert all(e["requests"] == 2 for e in run["engines"]) and len(run["repeats"]["new_prompt"]) == 1
        # 3 prompts; the image-to-image pipeline (from_pipe: a pipeline object of its own) shares the cache of the
        # modules it holds, so its prompt, the warm one, hits
        assert run["prompt_cache"]["misses"] == 3 and run["repeats"]["warm"][0]["step_s"] > 0
        assert run["host_ram_budget"] == {"requested_gb": 64.0, "bytes": 64 * 2**30} and run["engine_peak_rss_gb"] > 0
        # --from-image: image-to-image at 0.5 from the warm result, and its upscale x2 at twice the size
        assert run["img2img_0.5"]["output"]["ok"] and run["img2img_0.5"]["timings"]["total_s"] > 0
        assert run["upscale_x2"]["output"]["ok"] and run["upscale_x2"]["output"]["width"] == 2 * run["sample"]["width"]
    assert flux["bare"]["step_s"] > 0 and len(flux["bare"]["steps_s"]) == 3
    # The 24 GiB engine beside a neighbour holding the rest of the card, with no budget setting of its own.
    engine = json.loads((tmp_path / "w" / "flux_24" / "engine_config.json").read_text())
    assert "vram_budget_gb" not in engine["config"]["process"][0]["engine"]
    assert flux["runs"]["24"]["budget_mode"] == "neighbour" and flux["runs"]["24"]["neighbour"]["pid"] > 0
    assert "neighbour" not in flux["runs"]["0"] and result["meta"]["budget_mode"] == "neighbour"
    assert flux["runs"]["24"]["memory_quality"]["asked"] == "fast" and "engine_found" in flux["runs"]["24"]
    # --quality: in the full card's first engine, the reference twice (the same file) and int8 (CPU's 8 bits).
    quality = flux["quality"]
    assert quality["steps"] == 2 and quality["bf16"]["identical"] and not quality["reference"]["plan_quantized"]
    assert quality["int8"]["plan_quantized"] and 20 < quality["int8"]["psnr_db"] and quality["int8"]["ssim"] > 0.5
    # Engines interleave across budgets, so a slow process is as likely under either.
    assert [line.split()[1] for line in done.stdout.splitlines() if line.startswith("flux ")] == ["0", "24"] * 2
    table = (out / "family_sweep.md").read_text()
    assert "| flux | full |" in table and "| flux | 24 GiB |" in table and "TINY smoke run" in table
    assert "2 engines)" in table
    assert "× bare" in table
    assert "flux, 8-bit denoiser against bf16 (2 steps): bf16: identical; int8: " in table


def test_plan_table_predicts_a_plan_or_a_reason_for_every_family_on_each_card():
    """testing/bench/plan_table.py: the 24 and 16 GiB columns predicted from published sizes (docs/BENCHMARKS.md)."""
    from testing.bench.plan_table import predicted, table
    from toolkit.models.registry import ARCHS

    text = table([24, 16], host_gib=64)
    assert all(f"| {arch} |" in text for arch in ARCHS)
    assert predicted("sdxl", 16, 64)["summary"].endswith("on the GPU")  # 6.5 GiB of weights: all resident
    flux = predicted("flux", 24, 64)
    assert flux["fits"] and "transformer, text_encoder_2 visit the GPU" in flux["summary"]  # as measured on the H200
    flux2 = predicted("flux2", 24, 64)  # 104 GiB of bf16 weights: only 8-bit streaming fits 64 GiB of RAM
    assert flux2["fits"] and "float8dq stream to the GPU" in flux2["summary"]
    flux2 = predicted("flux2", 24, 48)  # less RAM than its 59 GiB of 8-bit copies: host RAM is what it lacks
    assert not flux2["fits"] and "host RAM" in flux2["summary"]


def test_pinned_probe_tiny_run_measures_both_allocators(tmp_path):
    """testing/bench/pinned_probe.py: torch's pinned allocator against ``empty_like_all`` (which the GPU run
    checks for exact sizes and full copy speed), and torchao's quantization speed."""
    # its own process, as on the GPU machine: resident-set deltas inside the suite's process see other tests'
    # threads allocate and free
    probe = [sys.executable, str(ROOT / "testing/bench/pinned_probe.py"), "--out", str(tmp_path), "--tiny"]
    subprocess.run(probe, check=True, capture_output=True, cwd=ROOT)
    result = json.loads((tmp_path / "pinned_probe.json").read_text())
    for stage in ("torch_pin_memory", "empty_like_all", "empty_like_all_7_pieces"):
        assert 0.5 * result["tensor_gib"] <= result[stage]["held_gib"] <= 2 * result["tensor_gib"] + 0.01
    assert result["empty_like_all"]["pinned"] is False  # nothing to page-lock for without a GPU
    assert result["quantize_s_per_gb"]["int8_cpu"] > 0
    assert result["round_trips"] == {"host_copies_pinned": False, "visit_equal": True, "group_offload_equal": True}


@pytest.mark.parametrize("arch", ["pixart_sigma", "hunyuan_video15", "ltx2"])
def test_the_bare_pipeline_clock_times_families_without_a_step_callback(arch, tmp_path, tiny_cache):
    """The bare-diffusers reference is clocked at ``scheduler.step``: with ``callback_on_step_end`` it had no
    marks for PixArt-Σ and a TypeError for HunyuanVideo 1.5 on the H200, so neither had a bare ratio. LTX-2
    deep-copies its scheduler for audio: the copy's steps must neither count nor step this one."""
    from testing.bench.bare_pipeline import BarePipeline
    from toolkit.models import tiny

    settings = {k: v for k, v in tiny.sample(arch).items() if k != "output_ext"}
    bare = BarePipeline(arch, f"tiny:{arch}", "cpu", "float32", settings, tmp_path)
    wall, step = bare.call(3)
    assert step is not None and 0 < step < wall
    assert "step" not in vars(bare.model.pipeline.scheduler)  # the class's own step again


def test_the_gpu_report_compares_the_engine_with_bare_diffusers_under_the_same_compile():
    """Issue #14 asks for both references from one run: bare eager and bare with the engine's compile."""
    from testing.bench.gpu_suite_report import _compiled

    family = {
        "bare": {"event_step_s": 0.17},
        "bare_compiled": {"event_step_s": 0.125, "first_call_s": 31.0, "how": {"transformer": "regional"}},
        "raw": {"event_step_s": 0.128, "ratio_vs_bare": 0.753, "ratio_vs_bare_compiled": 1.024},
        "cold_total_s": 42.5,
        "compile_graphs": {"after_warm_up": 7, "after_measure": 7},
        "cuda_graphs": {"after_warm_up": 1, "after_measure": 13},  # recorded again: the twenty-third run's bug
    }
    text = "\n".join(_compiled({"flux": family, "sd1": {"raw": {}}}))
    [row] = [line for line in text.splitlines() if line.startswith("| flux | 0.17 | 0.125 (31.0)")]
    assert row.endswith("| 0.128 | 0.753 | 1.024 ❌ | 42.5 | 0 ✅ | 12 ❌ |")
    assert "engine / bare compiled" in text and "| sd1 |" not in text.split("engine / bare compiled")[1]
    assert _compiled({"flux": {"bare": {"event_step_s": 0.17}, "raw": {"event_step_s": 0.128}}}) == []


def test_an_engine_that_dies_mid_request_is_reported_with_how_it_ended():
    """FLUX.2-dev's first 24 GiB run was killed by the host's out-of-memory killer; the sweep only recorded the
    client's "peer closed connection". ``engine_process`` now says the process died and how."""
    from testing.bench.engine_process import _died

    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    killed = subprocess.Popen(sleeper)
    killed.kill()
    assert "killed (SIGKILL" in _died(killed)
    alive = subprocess.Popen(sleeper)
    try:
        assert _died(alive, wait_s=0.1) is None
    finally:
        alive.kill()
        alive.wait()
    exited = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert _died(exited) == "the engine process exited with code 3"


def test_a_background_run_is_waited_for_in_pieces_and_its_results_come_back(tmp_path):
    """testing/bench/background.sh: a sweep longer than one GPU call starts in the background; each wait returns
    by its deadline with what the run has written so far (exit 3: still running), and the last one with its exit
    code."""
    script, name = str(ROOT / "testing/bench/background.sh"), f"bgtest{os.getpid()}"
    results, out = tmp_path / "results", tmp_path / "out"
    env = {**os.environ, "OUT": str(out)}
    many = " ".join(f"{results}/stacks{i}.txt" for i in range(9))  # more than a call brings back
    late = f"echo 2 > {results}/b.json; echo '{{\"cells\": 16}}' > {results}/zz_grid"  # JSON under a bare name too
    run = f"mkdir -p {results}; echo 1 > {results}/a.json; touch {many}; sleep 8; {late}; exit 4"
    subprocess.run(["bash", script, "start", name, str(results), "--", "bash", "-c", run], check=True, env=env)
    first = subprocess.run(["bash", script, "wait", name, "3"], env=env, capture_output=True, text=True)
    assert first.returncode == 3 and "still running" in first.stdout
    assert (out / name / "a.json").exists() and not (out / name / "b.json").exists()
    shutil.rmtree(out)  # the GPU machine empties $OUT before each call
    last = subprocess.run(["bash", script, "wait", name, "30"], env=env, capture_output=True, text=True)
    assert last.returncode == 0 and "exit code 4" in last.stdout
    assert (out / name / "b.json").read_text().strip() == "2" and (out / f"{name}.rc").read_text().strip() == "4"
    assert json.loads((out / name / "zz_grid").read_text()) == {"cells": 16}  # before the stack samples
    assert len([f for f in out.rglob("*") if f.is_file()]) == 8  # the JSON first, the call's limit kept
    started = time.monotonic()  # a fresh machine, which never started the run: the wait says so at once
    never = subprocess.run(["bash", script, "wait", f"{name}never", "30"], env=env, capture_output=True, text=True)
    assert never.returncode == 4 and "no run named" in never.stdout and time.monotonic() - started < 10


def test_attention_kernels_tiny_run_times_each_kernel_against_the_math_kernel(tmp_path):
    """testing/bench/attention_kernels.py on CPU: the flash kernel runs and matches float32 math; FA4, absent here,
    is recorded with the reason instead of stopping the run."""
    cmd = [sys.executable, "testing/bench/attention_kernels.py", "--out", str(tmp_path), "--tiny", "--repeats", "2"]
    cmd += ["--shapes", "flux_1024,sdxl_32x32"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shapes = json.loads((tmp_path / "attention_kernels.json").read_text())["shapes"]
    assert set(shapes) == {"flux_1024", "sdxl_32x32"}
    flux = shapes["flux_1024"]
    assert flux["shape"] == [24, 288, 288, 128] and flux["flash"]["ms"] > 0
    assert flux["flash"]["max_abs_err"] < 1e-4 and flux["flash"]["flash_impl"] is None
    assert "flash_attn" in flux["fa4"]["unsupported"]


def test_sdpa_probe_tiny_run_names_the_kernel_each_order_ran_eager_and_compiled(tmp_path):
    """testing/bench/sdpa_probe.py on CPU (compiled through AOT autograd, which picks the kernel as inductor's
    trace does): every order's attention op is named from the profiler, and the Flux transformer runs eager and
    through the engine's compile_denoiser."""
    cmd = [sys.executable, "testing/bench/sdpa_probe.py", "--out", str(tmp_path), "--tiny", "--repeats", "2"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / "sdpa_probe.json").read_text())
    for order in ("flash", "cudnn", "efficient"):
        for key in (order, f"{order}_compiled"):
            assert result["sdpa"][key]["ms"] > 0, result["sdpa"][key]
            assert any("scaled_dot_product" in op for op in result["sdpa"][key]["ops"]), result["sdpa"][key]
    assert set(result["flux"]) == {"flash", "cudnn", "flash_compiled", "cudnn_compiled"}
    assert all(row["ms"] > 0 and row["ops"] for row in result["flux"].values()), result["flux"]


def test_step_profile_splits_the_denoising_loop_into_kernel_kinds_and_gpu_idle(tmp_path):
    """testing/bench/step_profile.py: kernels are sorted by kind (cuDNN's attention kernel is a wgmma kernel too,
    and counts as attention), overlapping kernels count once, what lies outside the denoising loop does not
    count, and the gaps are the GPU's idle. The CPU run checks the plumbing: the loop's window is found from
    the profiler's ranges around each denoiser call."""
    from testing.bench.step_profile import breakdown, kind_of

    cudnn = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0"
    assert kind_of(cudnn) == "attention" and kind_of("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT") == "gemm"
    assert kind_of("triton_poi_fused_add_mul_6") == "triton" and kind_of("Memcpy DtoH (Device -> Pinned)") == "copy"
    assert kind_of("void at::native::elementwise_kernel<128, 2>") == "other"
    kernels = [
        ("encoder_gemm", 0, 50),  # before the loop: the text encoder's
        ("nvjet_a", 100, 140),
        ("triton_poi_x", 130, 150),  # overlaps the GEMM by 10
        (cudnn, 170, 230),
        ("nvjet_a", 260, 300),
        ("vae_conv", 420, 500),  # after it
    ]
    got = breakdown(kernels, steps=2, window=(100, 400))
    assert got["window_ms_per_step"] == 0.15 and got["busy_ms_per_step"] == 0.075 and got["idle_ms_per_step"] == 0.075
    assert got["kernel_ms_per_step"] == {"gemm": 0.04, "attention": 0.03, "triton": 0.01}
    assert got["top_kernels_ms_per_step"][0] == ["nvjet_a", 0.04]

    cmd = [sys.executable, "testing/bench/step_profile.py", "--out", str(tmp_path), "--tiny", "--repeats", "1"]
    cmd += ["--models", str(tmp_path / "m")]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    flux = json.loads((tmp_path / "step_profile.json").read_text())["families"]["flux"]
    assert flux["step_s"] > 0 and flux["window_ms_per_step"] > 0 and flux["kernels"] == 0, flux  # no GPU here
    parts = flux["call_anatomy"]  # disjoint parts of one call: before the first denoiser call, it, after the last
    outside = parts["before_first_denoiser_ms"] + parts["after_last_denoiser_ms"]
    assert parts["before_first_denoiser_ms"] > 0 and parts["after_last_denoiser_ms"] > 0, parts
    assert outside + parts["first_denoiser_ms"] + parts["median_denoiser_ms"] <= parts["call_ms"], parts  # 4 steps


def test_a_wheel_carried_in_parts_is_joined_whole(tmp_path):
    """PyAV's wheel does not fit one call beside the tree, so ``fetch_gpu_wheels.sh --av`` cuts it with ``split``;
    the benches' ``--wheels`` joins the parts back, byte for byte, and leaves whole wheels as they are."""
    from testing.bench.gpu_machine import join_parts

    wheel = bytes(range(256)) * 1000
    carried = tmp_path / "carried"
    carried.mkdir()
    (carried / "av-1.0-py3-none-any.whl").write_bytes(wheel)
    subprocess.run(["split", "-b", "100000", "av-1.0-py3-none-any.whl", "av-1.0-py3-none-any.whl.part-"], cwd=carried)
    (carried / "av-1.0-py3-none-any.whl").unlink()
    (carried / "whole-1.0-py3-none-any.whl").write_bytes(b"x")
    assert len(list(carried.glob("*.part-*"))) == 3
    joined = join_parts(str(carried), str(tmp_path / "joined"))
    assert [Path(p).name for p in joined] == ["av-1.0-py3-none-any.whl"]
    assert Path(joined[0]).read_bytes() == wheel


def test_the_carried_fa4_parts_are_checked_unpacked_and_put_on_the_path(tmp_path, monkeypatch):
    """What ``fetch_gpu_wheels.sh --fa4`` cuts, ``--fa4`` puts back together: a wrong sum stops the bench; the
    DSL's packages, found by a .pth file in a site directory, go on the path by name."""
    from testing.bench.gpu_machine import install_fa4

    packed = tmp_path / "site"
    (packed / "nvidia_cutlass_dsl" / "dsl_packages" / "cutlass").mkdir(parents=True)
    (packed / "nvidia_cutlass_dsl" / "dsl_packages" / "cutlass" / "__init__.py").write_text("VERSION = 'x'\n")
    (packed / "flash_attn").mkdir()
    (packed / "flash_attn" / "__init__.py").write_text("")
    parts = tmp_path / "parts"
    parts.mkdir()
    cut = f"tar -C {packed} -cf - . | xz -1 | split -b 200 - {parts}/fa4.tar.xz."
    subprocess.run(
        ["bash", "-c", cut + f" && cat {parts}/fa4.tar.xz.* | sha256sum | cut -d' ' -f1 > {parts}/fa4.sha256"]
    )
    assert len(list(parts.glob("fa4.tar.xz.*"))) > 1
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", "")
    site = tmp_path / "unpacked"
    install_fa4(str(parts), str(site))
    assert (site / "flash_attn" / "__init__.py").exists()
    assert sys.path[:2] == [str(site), str(site / "nvidia_cutlass_dsl" / "dsl_packages")]
    assert os.environ["PYTHONPATH"].split(os.pathsep)[:2] == sys.path[:2]  # the engines it starts see them too
    (parts / "fa4.tar.xz.aa").write_bytes(b"cut short")
    with pytest.raises(SystemExit, match="do not add up"):
        install_fa4(str(parts), str(tmp_path / "again"))


def test_family_sweep_refuses_before_building_a_family_whose_file_it_cannot_write(monkeypatch):
    """LTX-2's mp4 needs PyAV; without it the GPU run sampled twice and failed at saving (2026-12-03)."""
    import importlib.util

    from testing.bench.family_sweep import missing_writer
    from toolkit.models.registry import get_model_class

    assert missing_writer(get_model_class("ltx2"), False) is None  # installed here
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
    assert "--wheels .whl_engine,.whl_av" in missing_writer(get_model_class("ltx2"), False)
    assert missing_writer(get_model_class("hunyuan_video15"), False) is None  # webp: Pillow


def test_fraction_probe_times_the_step_with_and_without_the_budget_in_alternating_order(tmp_path):
    """testing/bench/fraction_probe.py on CPU: SD 1.5's and SDXL's UNets are built at real width from the real
    configs, stepped at batch 2 with their conditioning, and timed per setting in every round, the order flipped
    each round, so a setting's cost and its position can be told apart; the JSON keeps each round and medians."""
    cmd = [sys.executable, "testing/bench/fraction_probe.py", "--out", str(tmp_path), "--tiny"]
    cmd += ["--families", "sd1,sdxl", "--rounds", "2", "--repeats", "1"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / "fraction_probe.json").read_text())
    assert result["sdxl"]["median_s"]["whole"] > 0  # SDXL's pooled text and size conditioning were accepted
    rows = result["sd1"]
    assert [r["order"] for r in rows["rounds"]] == [["whole", "24 GiB"], ["24 GiB", "whole"]]
    assert all(r["median_s"][name] > 0 for r in rows["rounds"] for name in ("whole", "24 GiB"))
    assert set(rows["median_s"]) == {"whole", "24 GiB"} and rows["fraction"] is None  # no fraction on CPU


def test_grid_bench_tiny_run_times_the_grid_beside_plain_and_by_hand_without_reloading(tmp_path, tiny_cache):
    """testing/bench/grid_bench.py (issue #58's GPU line) on tiny SD 1.5 with ``engine.lora_patch``: 16 cells per
    stage, one LoRA load per checkpoint and no pool miss in the grid or by hand, then plain cells again; its queue's
    stages parse as the GPU machine would run them."""
    from testing.bench.grid_bench import build_parser

    for line in (ROOT / "testing/bench/queues/issue58_grids.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, script, *args = line.split()
            parsed = build_parser().parse_args(["--out", f"/tmp/R/{name}", "--models", "/tmp/m", *args])
            assert script == "grid_bench.py" and parsed.real and parsed.device == "cuda" and 16 <= parsed.rank <= 32
    out = tmp_path / "grid_bench.json"
    cmd = [sys.executable, "testing/bench/grid_bench.py", "--tiny", "--arch", "sd1", "--steps", "2", "--lora-patch"]
    cmd += ["--out", str(out), "--models", str(tmp_path / "m")]
    done = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    for stage, loads in (("plain", 0), ("grid", 4), ("by_hand", 4)):
        row = result[stage]
        assert row["cells"] == 16 and row["counters_delta"]["requests"] == 16 and row["total_s"] > 0, stage
        assert row["lora_loads"] == loads and not row["base_reloaded"] and row["counters_delta"]["misses"] == 0, stage
    assert result["grid"]["pages"] == 1 and result["grid"]["grid_over_plain"] > 0
    assert result["by_hand"]["by_hand_over_plain"] > 0 and result["lora_warm"]["lora_loads"] == 1
    assert result["plain_after"]["cells"] == 4 and result["plain_after"]["lora_loads"] == 0
    assert result["args"]["lora_patch"]
