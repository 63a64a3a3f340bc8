"""The memory plan inside the engine: the plan in the start frame, a status frame and ``/health``; smaller plans when
memory shrinks; out-of-memory handled by planning again; what a failed request allocated freed at once. On CPU
the planner is switched on as on a GPU (``planned``), with the free memory each test sets."""

import re

import pytest

from extensions_built_in.inference_engine.request_memory import KINDS
from testing.engine_harness import EngineHarness
from testing.test_pool import run, sd1
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.memory_plan import GIB, peak_bytes
from toolkit.models.archs.sd1 import SD1Model


@pytest.fixture()
def planned(tmp_path, tiny_cache, monkeypatch):
    """An engine whose planner is on as on a GPU (placements off the GPU are no-ops on this CPU; 8-bit is int8,
    which runs here), with the free memory a test sets."""
    from extensions_built_in.inference_engine import request_memory

    free = {"bytes": 64 * GIB}
    monkeypatch.setattr(request_memory, "plannable_bytes", lambda device, own: free["bytes"])
    h = EngineHarness(tmp_path)
    h.engine.memory.active, h.engine.memory.qtype = True, "int8"
    h.free = free
    yield h
    h.close()


def frames_of(h, body) -> list:
    return [f.header for f in h.client.generate(body) if not f.header.get("heartbeat")]  # repeats say nothing new


def sd1_peak_on_gpu(size: int = 64) -> int:
    """What tiny SD1 needs with every component resident, by the planner's own accounting."""
    model = SD1Model("cuda", ModelConfig(name_or_path="tiny:sd1", dtype="float32"))
    parts = tuple(model.memory_parts())
    work = model.workload(GenerateImageConfig(prompt="p", width=size, height=size))
    return peak_bytes(parts, {p.role: "gpu" for p in parts}, work, False), parts


def test_the_plan_is_in_the_start_frame_a_status_frame_and_health(planned):
    run(planned, sd1())  # a first request, so the engine has a snapshot to predict from
    headers = frames_of(planned, sd1(seed=8))
    start = headers[0]
    assert (
        start["memory"]["source"] == "auto" and start["memory"]["predicted"]["components"]["unet"]["placement"] == "gpu"
    )
    [status] = [h for h in headers if h["type"] == "status" and h["message"].startswith("Memory plan")]
    assert status["memory"]["components"].keys() == {"unet", "text_encoder", "vae"}
    assert headers[-1] == {**headers[-1], "type": "end", "ok": True}
    health = planned.client.health()["memory"]
    assert health["mode"] == "auto" and health["plan"]["source"] == "auto"


def test_less_free_memory_gives_a_smaller_plan_and_the_pool_loads_it(planned):
    """Something else took memory: not everything fits resident any more, so something is moved off the GPU
    or loaded in 8 bits, and the pool's entries are the plan's."""
    run(planned, sd1())
    assert set(p["placement"] for p in planned.client.health()["memory"]["plan"]["components"].values()) == {"gpu"}
    peak, parts = sd1_peak_on_gpu()
    planned.free["bytes"] = peak - max(p.bytes for p in parts) // 2
    run(planned, sd1(seed=9))
    plan = planned.client.health()["memory"]["plan"]
    assert set(p["placement"] for p in plan["components"].values()) != {"gpu"}
    assert plan["peak_gib"] <= round(planned.free["bytes"] / GIB, 2)
    entries = {e["subfolder"]: e["key"] for e in planned.client.health()["pool"]}
    for role, placed in plan["components"].items():
        assert ("int8" in entries[role]) == (placed["placement"] == "quantized"), (role, placed, entries[role])


def test_a_model_that_cannot_fit_is_refused_before_loading_and_the_next_request_works(planned):
    planned.free["bytes"] = 1000
    out = planned.client.generate_wait(sd1())
    assert out["http_status"] == 507 and out["error"]["code"] == "too_large"
    assert "does not fit" in out["error"]["message"] and "smallest plan" in out["error"]["message"]
    assert planned.client.health()["pool"] == []  # nothing was loaded
    planned.free["bytes"] = 64 * GIB
    run(planned, sd1())


def test_a_request_too_large_for_the_memory_left_is_told_what_size_fits_and_that_size_runs(planned):
    """Tiny SD1's weights are nothing beside a large image's working set, here its sampling's (smaller VAE tiles
    cannot help): the ``too_large`` error names the largest size of the same shape that fits now, and a request
    at that size runs."""
    planned.free["bytes"], _ = sd1_peak_on_gpu(256)
    body = sd1()
    body["sample"].update(width=1536, height=1280)
    out = planned.client.generate_wait(body)
    assert out["http_status"] == 507 and out["error"]["code"] == "too_large"
    match = re.search(r"for this request's size: (\d+)×(\d+) fits\)", out["error"]["message"])
    assert match, out["error"]["message"]
    width, height = int(match.group(1)), int(match.group(2))
    assert 256 * 256 < width * height < 1536 * 1280 and abs(width / height - 1536 / 1280) < 0.1
    body["sample"].update(width=width, height=height, num_inference_steps=1)
    run(planned, body)


def test_a_decode_too_large_for_the_family_s_tile_runs_in_smaller_tiles(planned, monkeypatch):
    """What HunyuanVideo 1.5 needs on 16 GiB, on tiny SD1: at 640x512 its decode does not fit in 512 px tiles
    beside the weights; instead of refusing, the plan tiles smaller, says so, the VAE decodes in those tiles
    (also right after the same request planned in the family's own tiles: the resident holder, which keeps the
    plan it was built with, is not reused), and the image comes out whole."""
    from toolkit.models import base_model

    tiles = []
    real = base_model.set_vae_tiling
    monkeypatch.setattr(
        base_model, "set_vae_tiling", lambda vae, on, tile: tiles.append((on, tile)) or real(vae, on, tile)
    )
    planned.free["bytes"], _ = sd1_peak_on_gpu(512)
    body = sd1()
    body["sample"].update(width=640, height=512, num_inference_steps=1)
    run(planned, body)  # fits in the family's own 512 px tiles
    assert planned.client.health()["memory"]["plan"]["vae_tile"] is None
    planned.free["bytes"], _ = sd1_peak_on_gpu(384)  # something else took memory: the same request, smaller tiles
    headers = frames_of(planned, body)
    [result] = [h for h in headers if h["type"] == "result"]
    plan = planned.client.health()["memory"]["plan"]
    assert plan["vae_tiling"] and plan["vae_tile"] in (384, 256) and plan["summary"].endswith(" px tiles")
    assert tiles[0] == (True, 512) and tiles[-1] == (True, plan["vae_tile"])
    assert (result["width"], result["height"]) == (640, 512)


def test_out_of_memory_under_a_plan_widens_the_reserve_and_runs_again(planned, monkeypatch):
    from toolkit.models.base_model import BaseModel

    original, calls = BaseModel.sample_media, []

    def oom_once(self, pipeline, gen, generator):
        calls.append(self.plan)
        if len(calls) == 1:
            import torch

            raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected)")
        return original(self, pipeline, gen, generator)

    monkeypatch.setattr(BaseModel, "sample_media", oom_once)
    headers = frames_of(planned, sd1())
    assert headers[-1]["ok"] is True and len(calls) == 2
    retry = next(h for h in headers if h["type"] == "status" and "planning again" in h.get("message", ""))
    # Where it struck, for the user and the log: the stage (encoding runs until the first step is done), and
    # what sat on the device then.
    assert retry["oom"]["stage"] == "encoding" and retry["message"].startswith("Out of memory while encoding")
    assert {"unet", "vae", "text_encoder"} <= retry["oom"]["pool_gib"].keys()
    # and the code that asked for the memory, innermost first (which module or offload hook the plan missed)
    assert retry["oom"]["at"].startswith("test_memory_plan_engine.py:") and " oom_once" in retry["oom"]["at"]
    assert f"at {retry['oom']['at']}" in retry["message"]
    # The stage that ran out has its reserves widened: encoding's phases (the encoders, and the first step's).
    assert planned.client.health()["memory"]["reserve_scale"] == {"sd1": {"encoder": 2.0, "denoiser": 2.0}}


def test_the_re_plan_covers_what_the_failed_attempt_needed_beyond_the_plan(planned, monkeypatch):
    """Doubling a short estimate is not always enough: on the H200 at 24 GiB, LTX-2's doubled sampling reserve
    ran out the same way. The re-plan reserves what the attempt was seen to need (its peak plus the allocation
    that failed) beyond the plan's prediction, with a margin."""
    import toolkit.device
    from toolkit.models.base_model import BaseModel

    original, plans = BaseModel.sample_media, []

    def oom_once(self, pipeline, gen, generator):
        plans.append(self.plan)
        if len(plans) == 1:
            import torch

            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has ...")
        return original(self, pipeline, gen, generator)

    monkeypatch.setattr(BaseModel, "sample_media", oom_once)

    # The failed stage peaked at exactly the plan's prediction for it, then asked for 1 GiB more. The request's
    # peak (an earlier stage's, say) is larger and is not what this stage needed.
    def stage_peak():
        return plans[0].peak_of("encoding") if plans else 0

    monkeypatch.setattr(toolkit.device, "stage_peak", stage_peak)
    stats = {"allocated": GIB, "reserved": 3 * GIB, "peak_allocated": 40 * GIB}
    monkeypatch.setattr(toolkit.device, "vram_stats", lambda: stats)
    headers = frames_of(planned, sd1())
    assert headers[-1]["ok"] is True and len(plans) == 2
    retry = next(h for h in headers if h["type"] == "status" and "planning again" in h.get("message", ""))
    assert retry["oom"]["needed_gib"] == round((plans[0].peak_of("encoding") + GIB) / GIB, 2)
    assert "1.0 GiB allocated of 3.0 reserved" in retry["message"]  # the gap: what fragmentation held
    first, second = plans
    # Encoding (the phase that ran out: no step was done) had 0.5 GiB planned; it gets that plus 1.25 x 1 GiB.
    assert first.work_of("encoding") == GIB // 2
    scale = planned.client.health()["memory"]["reserve_scale"]["sd1"]
    assert scale == {"encoder": 3.5, "denoiser": 3.5} and "reserve (encoder 3.5x, denoiser 3.5x)" in retry["message"]
    assert second.work_of("encoding") == int(first.work_of("encoding") * 3.5)
    # The stage's new prediction covers what it needed, with room to spare.
    assert second.peak_of("encoding") >= first.peak_of("encoding") + 1.25 * GIB


def test_the_start_frame_prediction_imports_neither_torch_nor_diffusers(tiny_cache):
    """It runs on the server thread. An import there raced the main thread's on the H200 and left transformers
    half-initialised ("cannot import name 'AutoModel'"): every engine of the first family sweep died of it."""
    import subprocess
    import sys

    from testing.test_bench_scripts import ROOT
    from toolkit.models.tiny import tiny_checkpoint

    tiny_checkpoint("sd1")
    tiny_checkpoint("stable_audio")
    code = """
import sys
from extensions_built_in.inference_engine.request_memory import RequestMemory
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models.registry import get_model_class
from toolkit.models.components.pool import ComponentPool
planner = RequestMemory("cpu", "auto", ComponentPool(), None)
planner.active, planner.snapshot = True, (64 * 1024**3, 64 * 1024**3)
out = planner.predict(get_model_class("sd1"), ModelConfig(name_or_path="tiny:sd1", arch="sd1"),
                      GenerateImageConfig(prompt="p", width=64, height=64))
assert out["predicted"]["components"]["unet"]["placement"] == "gpu", out
# An audio family's decode counts its seconds; Stable Audio's window is read without diffusers here.
audio = ModelConfig(name_or_path="tiny:stable_audio", arch="stable_audio")
out = planner.predict(get_model_class("stable_audio"), audio, GenerateImageConfig(prompt="p", duration_s=2.0))
assert out["predicted"]["components"]["vae"]["placement"] == "gpu", out
print(sorted(m for m in ("torch", "diffusers", "transformers") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_a_quantized_module_counts_its_8_bit_storage_not_its_logical_dtype(tiny_cache):
    """torchao tensors report bf16 (2 bytes an element) while storing int8 or float8 and scales: counted as bf16,
    a quantized Qwen-Image transformer was 40 GB in the pool, and a plan counted that as reclaimable memory."""
    from toolkit.models.components.loading import load_component
    from toolkit.models.components.pool import module_bytes
    from toolkit.models.pinned import tensor_bytes

    plain = load_component("diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bfloat16", device="cpu")
    quantized = load_component(
        "diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bfloat16", device="cpu", qtype="int8"
    )
    weight = quantized.time_embedding.linear_1.weight
    assert type(weight).__name__ != "Parameter" and weight.element_size() == 2  # it says bf16...
    assert weight.numel() <= tensor_bytes(weight) < weight.numel() * 1.5  # ...and stores a byte an element (+ scales)
    assert module_bytes(quantized) < 0.9 * module_bytes(plain)  # this UNet is mostly convolutions, kept bf16


def test_the_plannable_memory_never_exceeds_the_budget(monkeypatch):
    import torch

    from toolkit import device as device_mod
    from toolkit.models.components import pool

    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda d=None: 20 * GIB)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda d=None: 2 * GIB)
    monkeypatch.setattr(pool, "free_device_bytes", lambda d: 4 * GIB)
    monkeypatch.setattr(device_mod, "vram_budget", lambda d: 24 * GIB)
    assert pool.plannable_bytes("cuda", own_bytes=40 * GIB) == int(24 * GIB * 0.98) - 256 * 1024**2
    monkeypatch.setattr(device_mod, "vram_budget", lambda d: None)
    assert pool.plannable_bytes("cuda", own_bytes=0) == int(22 * GIB * 0.98) - 256 * 1024**2


def test_a_default_model_loaded_at_start_is_planned_and_reused(planned):
    """``engine.default_model`` is planned for the family's native size; a request the same plan fits reuses it."""
    model = {"arch": "sd1", "name_or_path": "tiny:sd1", "dtype": "float32"}
    planned.engine.run_on_main(lambda: planned.engine.load_default(model))
    assert planned.client.health()["memory"]["plan"]["source"] == "auto"
    run(planned, sd1())
    assert planned.client.health()["counters"]["holder_reuses"] == 1


def test_each_stage_peak_is_in_the_result_timings(planned, monkeypatch):
    """What the plan's working-set estimates are checked against on the GPU (docs/BENCHMARKS.md), and which
    components had weights on the engine's device (here the CPU) at each stage's end."""
    monkeypatch.setattr("extensions_built_in.inference_engine.request_memory.take_stage_peak", lambda: 3 * GIB)
    timings = run(planned, sd1())["result"]["timings"]
    assert timings["peak_gib"] == {"loading": 3.0, "encoding": 3.0, "sampling": 3.0, "decoding": 3.0}
    assert [{"unet", "vae", "text_encoder"} <= on.keys() for on in timings["gpu_gib"].values()] == [True] * 4


def test_a_damaged_checkpoint_is_a_load_error_not_a_planner_crash(planned, tmp_path):
    import shutil

    from toolkit.models.tiny import tiny_checkpoint

    folder = tmp_path / "damaged"
    shutil.copytree(tiny_checkpoint("sd1"), folder)
    [weights] = (folder / "unet").glob("*.safetensors")
    weights.write_bytes(b"\xff" * 64)  # no safetensors header
    out = planned.client.generate_wait(sd1(main=str(folder), extras=str(folder)))
    assert out["error"]["code"] == "load_failed" and "unet" in out["error"]["message"].lower()
    run(planned, sd1())


def test_out_of_memory_while_loading_under_a_plan_also_plans_again(planned):
    """The load's own retry (free what the request does not use) fails too: then the plan is widened."""
    planned.engine.pool.inject_oom(2)
    headers = frames_of(planned, sd1())
    assert headers[-1]["ok"] is True
    assert any("planning again" in h.get("message", "") for h in headers if h["type"] == "status")


def test_component_sizes_are_read_once_per_model_not_per_request(planned, monkeypatch):
    """Every request is planned; reading sizes each time would ask the hub about a hub id on every request."""
    from toolkit.models import memory_inputs

    calls = []
    original = memory_inputs.weight_bytes
    monkeypatch.setattr(memory_inputs, "weight_bytes", lambda *a, **kw: calls.append(a) or original(*a, **kw))
    for seed in (1, 2, 3):
        run(planned, sd1(seed=seed))
    assert len(calls) == 3  # unet, text_encoder, vae: once each


def test_what_a_request_that_ran_out_of_memory_allocated_is_freed_at_once(planned, monkeypatch):
    """The failed attempt's traceback keeps its frames' locals alive; an object caught in a reference cycle
    there survived the engine's clean-up (which ran while the exception was still held) until some later
    garbage collection: on the H200 a failed Wan 2.1 I2V request left 23.9 GiB allocated, pool empty."""
    import gc
    import weakref

    import torch

    from toolkit.models.base_model import BaseModel

    class Activations:
        pass

    alive = []

    def oom_holding_a_cycle(self, pipeline, gen, generator):
        held = Activations()
        held.cycle = held  # freed only by the garbage collector, never by reference counts
        alive.append(weakref.ref(held))
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected)")

    monkeypatch.setattr(BaseModel, "sample_media", oom_holding_a_cycle)
    planned.engine.memory.reserve_scale["sd1"] = dict.fromkeys(KINDS, 8.0)  # no re-plan: the request fails with `oom`
    gc.disable()
    try:
        headers = frames_of(planned, sd1())
        assert headers[-1]["ok"] is False and any(h.get("code") == "oom" for h in headers)
        assert alive and alive[0]() is None
    finally:
        gc.enable()


def test_the_failed_plans_holder_is_gone_before_the_next_plan_loads(planned, monkeypatch):
    """On the H200 a Wan 2.1 I2V request ran out of memory sampling under its first plan (float8 transformer on
    the GPU), and the second plan ran out of memory *loading*, with 23.8 GiB allocated and none of it the pool's:
    the first holder, with its 8-bit copy, was still referenced while the second loaded."""
    import weakref

    import torch

    from extensions_built_in.inference_engine.resident import ResidentModel
    from toolkit.models.base_model import BaseModel

    original_sample, original_build = BaseModel.sample_media, ResidentModel.build
    holders, alive_at_second_build = [], []

    def build(self, model_class, model_config, plan=None):
        alive_at_second_build.extend(h() is not None for h in holders)
        holder = original_build(self, model_class, model_config, plan)
        holders.append(weakref.ref(holder))
        return holder

    def oom_once(self, pipeline, gen, generator):
        if len(holders) == 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected)")
        return original_sample(self, pipeline, gen, generator)

    monkeypatch.setattr(ResidentModel, "build", build)
    monkeypatch.setattr(BaseModel, "sample_media", oom_once)
    headers = frames_of(planned, sd1())
    assert headers[-1]["ok"] is True and len(holders) == 2
    assert alive_at_second_build == [False]


def test_out_of_memory_while_loading_retries_with_the_half_built_holder_freed(planned, monkeypatch):
    """The load's own retry ran inside the ``except`` block, whose traceback kept the half-built holder (and
    whatever it had put on the GPU) alive through the second build."""
    import weakref

    import torch

    from toolkit.models.base_model import BaseModel

    original_load = BaseModel.load_model
    built, alive_at_second_load = [], []

    def load_model(self):
        alive_at_second_load.extend(h() is not None for h in built)
        built.append(weakref.ref(self))
        if len(built) == 1:
            self.half_loaded = self  # a cycle, as a half-loaded module graph has
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected)")
        return original_load(self)

    monkeypatch.setattr(BaseModel, "load_model", load_model)
    headers = frames_of(planned, sd1())
    assert headers[-1]["ok"] is True and len(built) == 2
    assert any("retrying once" in h.get("message", "") for h in headers)
    assert alive_at_second_load == [False]


def test_an_out_of_memory_error_says_where_it_struck_and_what_sat_on_the_gpu(planned, monkeypatch):
    """The 24 GiB sweep's final `oom` errors carried torch's line alone; which stage and which components were
    resident is what tells a user (and the next benchmark run) what to change."""
    import torch

    from toolkit.models.base_model import BaseModel

    original = BaseModel.sample_media

    def oom(self, pipeline, gen, generator):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.96 GiB (injected)")

    monkeypatch.setattr(BaseModel, "sample_media", oom)
    planned.engine.memory.reserve_scale["sd1"] = dict.fromkeys(KINDS, 8.0)  # no re-plan: the request fails with `oom`
    [error] = [h for h in frames_of(planned, sd1()) if h["type"] == "error"]
    assert error["code"] == "oom" and error["message"].startswith("Out of memory while encoding (")
    assert "unet" in error["message"] and error["message"].endswith("Tried to allocate 1.96 GiB (injected)")
    monkeypatch.setattr(BaseModel, "sample_media", original)
    run(planned, sd1(seed=2))  # the engine serves on


@pytest.mark.parametrize(
    "setting,arch,expected",
    [
        ("auto", "hidream", "float8"),  # its MoE step is faster with float8 weights only (H200, 2026-12-01)
        ("auto", "flux", "float8dq"),
        # Video steps: float8 weights only (H200, 2026-12-01: HunyuanVideo 1.5's float8 activations gave a blank
        # video, Wan 2.1 I2V's ran out of memory at 24 GiB; base_model.py)
        ("auto", "hunyuan_video15", "float8"),
        ("auto", "wan21_i2v", "float8"),
        ("auto", "wan22_14b_i2v", "float8"),
        ("float8dq", "hidream", "float8dq"),  # the user's explicit choice wins
    ],
)
def test_an_automatic_8_bit_type_follows_the_family_and_an_explicit_one_wins(setting, arch, expected):
    from extensions_built_in.inference_engine.request_memory import RequestMemory
    from toolkit.models.components.pool import ComponentPool
    from toolkit.models.registry import get_model_class

    planner = RequestMemory("cpu", "auto", ComponentPool(), None)
    planner.qtype, planner.qtype_setting = "float8dq", setting  # as the planner sets them on an H100/H200
    assert planner.qtype_for(get_model_class(arch)) == expected
