"""The automatic memory plan (toolkit/memory_plan.py, extensions_built_in/inference_engine/memory_planner.py).

Decision tables use the real models' component sizes (bf16 bytes of the released checkpoints, as measured on the
H200: docs/BENCHMARKS.md) and the memory a card leaves free; each row says what a 48, 32, 24 or 16 GiB card
gets. Then the wiring: explicit options win over the plan, the plan reaches the pool's loads, the status frame
and /health, a model that cannot fit is refused before anything loads, and the next request still works.
"""
import pytest

from testing.engine_harness import EngineHarness
from testing.test_pool import run, sd1
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.memory_plan import GIB, Part, PlanDoesNotFit, Workload, peak_bytes, plan_memory
from toolkit.models.archs.flux import FluxModel
from toolkit.models.archs.sd1 import SD1Model


def gib(x: float) -> int:
    return int(x * GIB)


FLUX = [Part("transformer", "denoiser", gib(22.17)), Part("text_encoder", "encoder", gib(0.23)),
        Part("text_encoder_2", "encoder", gib(8.87)), Part("vae", "decoder", gib(0.16))]
QWEN_IMAGE = [Part("transformer", "denoiser", gib(38.1)), Part("text_encoder", "encoder", gib(15.4)),
              Part("vae", "decoder", gib(0.24))]
SDXL = [Part("unet", "denoiser", gib(4.78)), Part("text_encoder", "encoder", gib(0.23)),
        Part("text_encoder_2", "encoder", gib(1.29)), Part("vae", "decoder", gib(0.16))]
WAN22_14B = [Part("transformer", "denoiser", gib(26.6)), Part("transformer_2", "denoiser", gib(26.6)),
             Part("text_encoder", "encoder", gib(10.6)), Part("vae", "decoder", gib(0.24))]


def flux_work(size=1024) -> Workload:
    return FluxModel("cuda", ModelConfig(name_or_path="x", arch="flux")).workload(
        GenerateImageConfig(prompt="p", width=size, height=size))


PLENTY_OF_RAM = gib(256)

CASES = [
    # name, parts, card GiB, workload, expected placements (role -> placement), vae tiling
    ("sdxl fits a 16 GiB card whole", SDXL, 16, flux_work(),
     {"unet": "gpu", "text_encoder": "gpu", "text_encoder_2": "gpu", "vae": "gpu"}, False),
    ("flux on 48: everything resident", FLUX, 48, flux_work(),
     {"transformer": "gpu", "text_encoder": "gpu", "text_encoder_2": "gpu", "vae": "gpu"}, False),
    ("flux on 32: T5 visits for the prompt, the transformer stays", FLUX, 32, flux_work(),
     {"transformer": "gpu", "text_encoder": "gpu", "text_encoder_2": "visit", "vae": "gpu"}, False),
    ("flux on 24: the transformer and T5 take turns (measured: 2.57 s vs 1.86 s full card)", FLUX, 24, flux_work(),
     {"transformer": "visit", "text_encoder": "gpu", "text_encoder_2": "visit", "vae": "gpu"}, False),
    ("flux on 16: 8-bit transformer resident, T5 streamed for the prompt", FLUX, 16, flux_work(),
     {"transformer": "quantized", "text_encoder": "gpu", "text_encoder_2": "stream", "vae": "gpu"}, False),
    ("flux at 2048x2048 on 24: the decode fits beside nothing else, untiled; even the VAE waits off the GPU",
     FLUX, 24, flux_work(2048), {"transformer": "visit", "text_encoder": "gpu", "text_encoder_2": "visit",
                                 "vae": "visit"}, False),
    ("flux at 2048x2048 on 16: the decode beside the 8-bit transformer is tiled", FLUX, 16, flux_work(2048),
     {"transformer": "quantized", "text_encoder": "gpu", "text_encoder_2": "stream", "vae": "gpu"}, True),
    ("qwen-image on 24: 8-bit transformer, the encoder streamed, tiled decode", QWEN_IMAGE, 24, flux_work(1328),
     {"transformer": "quantized", "text_encoder": "stream", "vae": "gpu"}, True),
    ("wan 2.2 14B on 48: the two experts take turns", WAN22_14B, 48, Workload(gib(2.4), gib(3.6), gib(1.4)),
     {"transformer": "visit", "transformer_2": "visit", "text_encoder": "gpu", "vae": "gpu"}, False),
    ("wan 2.2 14B on 24 at 832x480x81: the experts take turns in 8 bits (neither fits in bf16, both do not fit "
     "in 8 bits)", WAN22_14B, 24, Workload(gib(4.2), gib(4.9), gib(1.2)),
     {"transformer": "quantized_visit", "transformer_2": "quantized_visit", "text_encoder": "visit", "vae": "gpu"},
     False),
]


@pytest.mark.parametrize("name,parts,card,work,expected,tiling", CASES, ids=[c[0] for c in CASES])
def test_the_plan_for_a_card(name, parts, card, work, expected, tiling):
    plan = plan_memory("x", parts, gib(card), work, PLENTY_OF_RAM, qtype="float8")
    assert (plan.placements, plan.vae_tiling) == (expected, tiling)
    assert plan.peak <= gib(card) and plan.peak == peak_bytes(tuple(parts), plan.placements, work, tiling)


def test_every_cheaper_plan_would_not_fit():
    """The chosen plan is the cheapest that fits: each cheaper assignment peaks above the card."""
    from toolkit.memory_plan import candidates, plan_cost

    work = flux_work()
    plan = plan_memory("flux", FLUX, gib(24), work, PLENTY_OF_RAM, qtype="float8")
    for placements, tiling in candidates(tuple(FLUX), True, True):
        if plan_cost(tuple(FLUX), placements, tiling) < plan.cost:
            assert peak_bytes(tuple(FLUX), placements, work, tiling) > gib(24), placements


def test_without_torchao_the_plan_streams_instead_of_quantizing():
    plan = plan_memory("flux", FLUX, gib(16), flux_work(), PLENTY_OF_RAM, qtype=None)
    assert plan.placements["transformer"] == "stream" and "quantized" not in plan.placements.values()
    assert plan.qtype is None


def test_host_ram_limits_what_may_visit():
    """24 GiB card, 4 GiB of free RAM: neither the transformer nor T5 can wait in host memory, so the
    transformer is quantized to make room for T5 on the GPU."""
    plan = plan_memory("flux", FLUX, gib(24), flux_work(), gib(4), qtype="float8")
    assert plan.placements["transformer"] == "quantized" and plan.placements["text_encoder_2"] == "gpu"
    assert sum(p.bytes for p in FLUX if plan.placements[p.role] in ("visit", "stream")) <= gib(4)


def test_a_model_that_cannot_fit_names_the_budget_and_the_smallest_plan():
    with pytest.raises(PlanDoesNotFit) as err:
        plan_memory("qwen_image", QWEN_IMAGE, gib(1.5), flux_work(1328), PLENTY_OF_RAM, budget=gib(2), qtype="float8")
    message = str(err.value)
    assert "qwen_image does not fit a 2.0 GiB budget (engine.vram_budget_gb)" in message
    assert "1.5 GiB is free" in message and "smallest plan" in message and "stream" in message
    smallest = err.value.smallest
    assert smallest.peak > gib(1.5) and smallest.placements["transformer"] == "quantized_stream"


def test_a_video_too_large_at_this_size_says_a_smaller_request_needs_less():
    """HunyuanVideo at 1280x720x129 needs ~14 GiB beside its streamed weights to sample: on a 16 GiB card the
    message says the size is the problem, so a user tries fewer frames instead of giving up on the model."""
    from toolkit.models.archs.hunyuan_video import HunyuanVideoModel

    parts = [Part("transformer", "denoiser", gib(23.9), gib(0.3)), Part("text_encoder", "encoder", gib(14.0)),
             Part("text_encoder_2", "encoder", gib(0.23)), Part("vae", "decoder", gib(0.46))]
    model = HunyuanVideoModel("cuda", ModelConfig(name_or_path="x", arch="hunyuan_video"))
    big = model.workload(GenerateImageConfig(prompt="p", width=1280, height=720, num_frames=129))
    with pytest.raises(PlanDoesNotFit, match=r"GiB of it for this request's size: fewer pixels or frames need less"):
        plan_memory("hunyuan_video", parts, gib(15.4), big, PLENTY_OF_RAM, budget=gib(16), qtype="float8dq")
    small = model.workload(GenerateImageConfig(prompt="p", width=848, height=480, num_frames=61))
    plan = plan_memory("hunyuan_video", parts, gib(15.4), small, PLENTY_OF_RAM, budget=gib(16), qtype="float8dq")
    assert plan.placements["transformer"] in ("stream", "quantized")


def test_the_smallest_plan_also_says_when_host_ram_is_short():
    with pytest.raises(PlanDoesNotFit, match="GiB of host RAM"):
        plan_memory("flux", FLUX, gib(2), flux_work(), gib(1), qtype=None)


# ------------------------------------------------------------------ explicit options win
@pytest.mark.parametrize("options,expected", [
    ({"low_vram": True}, {"transformer": "visit", "text_encoder": "visit", "text_encoder_2": "visit", "vae": "visit"}),
    ({"quantize": True, "quantize_te": False}, {"transformer": "quantized", "text_encoder": "gpu",
                                                "text_encoder_2": "gpu", "vae": "gpu"}),
    ({"low_vram": True, "quantize": True}, {"transformer": "quantized", "text_encoder": "quantized",
                                            "text_encoder_2": "quantized", "vae": "visit"}),
    ({"layer_offloading": True, "layer_offloading_text_encoder_percent": 0},
     {"transformer": "stream", "text_encoder": "gpu", "text_encoder_2": "gpu", "vae": "gpu"}),
])
def test_explicit_options_are_the_placements_and_the_planner_stays_out(options, expected, tmp_path):
    from extensions_built_in.inference_engine.memory_planner import MemoryPlanner
    from toolkit.models.v2.pool import ComponentPool

    cfg = ModelConfig(name_or_path="tiny:flux", arch="flux", **options)
    assert FluxModel("cuda", cfg).options_plan().placements == expected
    planner = MemoryPlanner("cpu", "auto", ComponentPool(), None)
    planner.active = True  # as on a GPU
    assert planner.source(cfg) == "options"
    assert planner.plan(FluxModel, cfg, GenerateImageConfig(prompt="p")) is None
    assert planner.predict(FluxModel, cfg, GenerateImageConfig(prompt="p"))["predicted"] is None


def test_the_planner_reads_component_sizes_from_the_checkpoint_headers(tiny_cache):
    import torch

    from toolkit.models.v2.loading import load_component

    model = SD1Model("cuda", ModelConfig(name_or_path="tiny:sd1", dtype="bf16"))
    sizes = {p.role: (p.kind, p.bytes) for p in model.memory_parts()}
    unet = load_component("diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bf16")
    assert sizes["unet"] == ("denoiser", sum(p.numel() * 2 for p in unet.parameters()) +
                             sum(b.numel() * b.element_size() for b in unet.buffers()))
    assert sizes["vae"][0] == "decoder" and sizes["text_encoder"][0] == "encoder"
    assert unet.dtype == torch.bfloat16


# ------------------------------------------------------------------ the engine
@pytest.fixture()
def planned(tmp_path, tiny_cache, monkeypatch):
    """An engine whose planner is on as on a GPU (placements off the GPU are no-ops on this CPU; 8-bit is int8,
    which runs here), with the free memory a test sets."""
    from extensions_built_in.inference_engine import memory_planner

    free = {"bytes": 64 * GIB}
    monkeypatch.setattr(memory_planner, "plannable_bytes", lambda device, own: free["bytes"])
    h = EngineHarness(tmp_path)
    h.engine.memory.active, h.engine.memory.qtype = True, "int8"
    h.free = free
    yield h
    h.close()


def frames_of(h, body) -> list:
    return [f.header for f in h.client.generate(body)]


def sd1_peak_on_gpu() -> int:
    """What tiny SD1 needs with every component resident, by the planner's own accounting."""
    model = SD1Model("cuda", ModelConfig(name_or_path="tiny:sd1", dtype="float32"))
    parts = tuple(model.memory_parts())
    work = model.workload(GenerateImageConfig(prompt="p", width=64, height=64))
    return peak_bytes(parts, {p.role: "gpu" for p in parts}, work, False), parts


def test_the_plan_is_in_the_start_frame_a_status_frame_and_health(planned):
    run(planned, sd1())  # a first request, so the engine has a snapshot to predict from
    headers = frames_of(planned, sd1(seed=8))
    start = headers[0]
    assert start["memory"]["source"] == "auto" and start["memory"]["predicted"]["components"]["unet"]["placement"] == "gpu"
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
    assert planned.client.health()["memory"]["reserve_scale"] == {"sd1": 2.0}


def test_the_start_frame_prediction_imports_neither_torch_nor_diffusers(tiny_cache):
    """It runs on the server thread. An import there raced the main thread's on the H200 and left transformers
    half-initialised ("cannot import name 'AutoModel'"): every engine of the first family sweep died of it."""
    import subprocess
    import sys

    from testing.test_bench_scripts import ROOT
    from toolkit.models.tiny import tiny_checkpoint

    tiny_checkpoint("sd1")
    code = """
import sys
from extensions_built_in.inference_engine.memory_planner import MemoryPlanner
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models.registry import get_model_class
from toolkit.models.v2.pool import ComponentPool
planner = MemoryPlanner("cpu", "auto", ComponentPool(), None)
planner.active, planner.snapshot = True, (64 * 1024**3, 64 * 1024**3)
out = planner.predict(get_model_class("sd1"), ModelConfig(name_or_path="tiny:sd1", arch="sd1"),
                      GenerateImageConfig(prompt="p", width=64, height=64))
assert out["predicted"]["components"]["unet"]["placement"] == "gpu", out
print(sorted(m for m in ("torch", "diffusers", "transformers") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_a_quantized_module_counts_its_8_bit_storage_not_its_logical_dtype(tiny_cache):
    """torchao tensors report bf16 (2 bytes an element) while storing int8 or float8 and scales: counted as bf16,
    a quantized Qwen-Image transformer was 40 GB in the pool, and a plan counted that as reclaimable memory."""
    from toolkit.models.v2.loading import load_component
    from toolkit.models.v2.pool import module_bytes, tensor_bytes

    plain = load_component("diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bfloat16", device="cpu")
    quantized = load_component("diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bfloat16", device="cpu",
                               qtype="int8")
    weight = quantized.time_embedding.linear_1.weight
    assert type(weight).__name__ != "Parameter" and weight.element_size() == 2  # it says bf16...
    assert weight.numel() <= tensor_bytes(weight) < weight.numel() * 1.5  # ...and stores a byte an element (+ scales)
    assert module_bytes(quantized) < 0.9 * module_bytes(plain)  # this UNet is mostly convolutions, kept bf16


def test_the_plannable_memory_never_exceeds_the_budget(monkeypatch):
    import torch

    from toolkit import device as device_mod
    from toolkit.models.v2 import pool

    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda d=None: 20 * GIB)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda d=None: 2 * GIB)
    monkeypatch.setattr(pool, "free_device_bytes", lambda d: 4 * GIB)
    monkeypatch.setattr(device_mod, "vram_budget", lambda d: 24 * GIB)
    assert pool.plannable_bytes("cuda", own_bytes=40 * GIB) == int(24 * GIB * 0.98) - 256 * 1024**2
    monkeypatch.setattr(device_mod, "vram_budget", lambda d: None)
    assert pool.plannable_bytes("cuda", own_bytes=0) == int(22 * GIB * 0.98) - 256 * 1024**2


def test_a_streamed_encoder_goes_leaf_by_leaf_and_a_denoiser_block_by_block(monkeypatch, tiny_cache):
    """Block-level group offloading looks for block lists at a module's top; a Qwen2.5-VL encoder has none, so
    it became one 15 GiB group, onloaded at once (the 24 GiB Qwen-Image run on the H200: `oom` before step 1)."""
    from toolkit.models import base_model
    from toolkit.models.archs.qwen_image import QwenImageModel
    from toolkit.models.v2.loading import load_component

    seen = {}
    monkeypatch.setattr(base_model, "load_component", lambda cls, src, sub, **kw: seen.setdefault(sub, kw))
    model = QwenImageModel("cuda", ModelConfig(name_or_path="tiny:qwen_image", arch="qwen_image"))
    model.plan = plan_memory("qwen_image", QWEN_IMAGE, gib(8), flux_work(1328), PLENTY_OF_RAM, qtype=None)
    assert model.plan.placements["transformer"] == model.plan.placements["text_encoder"] == "stream"
    for role in ("transformer", "text_encoder"):
        model.load_component(role, model.components[role])
    assert (seen["transformer"]["offload"], seen["text_encoder"]["offload"]) == ("group:block", "group:leaf")
    assert seen["transformer"]["device"] == seen["text_encoder"]["device"] == "cpu"  # they wait on the host

    def groups(offload):
        te = load_component("transformers.Qwen2_5_VLForConditionalGeneration", "tiny:qwen_image", "text_encoder",
                            dtype="float32", device="cpu", offload=offload, onload_device="cpu")
        return [n for n, m in te.named_modules() if getattr(m, "_diffusers_hook", None) and m._diffusers_hook.hooks]

    assert groups("group:block") == [""]  # the whole encoder, one group
    assert len(groups("group:leaf")) > 20


def test_streaming_holds_at_least_two_of_the_largest_tensor():
    """An encoder's embedding table is streamed as one leaf: the window is never less than two of them."""
    from toolkit.memory_plan import running_bytes

    te = Part("text_encoder", "encoder", gib(15.45), largest=gib(1.09))
    assert running_bytes(te, "stream") == 2 * gib(1.09)
    assert running_bytes(Part("transformer", "denoiser", gib(38), largest=gib(0.07)), "stream") == int(gib(38) * 0.1)


def test_a_default_model_loaded_at_start_is_planned_and_reused(planned):
    """``engine.default_model`` is planned for the family's native size; a request the same plan fits reuses it."""
    model = {"arch": "sd1", "name_or_path": "tiny:sd1", "dtype": "float32"}
    planned.engine.run_on_main(lambda: planned.engine.load_default(model))
    assert planned.client.health()["memory"]["plan"]["source"] == "auto"
    run(planned, sd1())
    assert planned.client.health()["counters"]["holder_reuses"] == 1


def test_each_stage_peak_is_in_the_result_timings(planned, monkeypatch):
    """What the plan's working-set estimates are checked against on the GPU (docs/BENCHMARKS.md)."""
    from extensions_built_in.inference_engine import engine as engine_module

    monkeypatch.setattr(engine_module, "take_stage_peak", lambda: 3 * GIB)
    out = run(planned, sd1())
    assert out["result"]["timings"]["peak_gib"] == {"loading": 3.0, "encoding": 3.0, "sampling": 3.0, "decoding": 3.0}


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
    from toolkit.models import base_model

    calls = []
    original = base_model.weight_bytes
    monkeypatch.setattr(base_model, "weight_bytes", lambda *a, **kw: calls.append(a) or original(*a, **kw))
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
    planned.engine.memory.reserve_scale["sd1"] = 8.0  # no re-plan: the request fails with `oom`
    gc.disable()
    try:
        headers = frames_of(planned, sd1())
        assert headers[-1]["ok"] is False and any(h.get("code") == "oom" for h in headers)
        assert alive and alive[0]() is None
    finally:
        gc.enable()


def test_an_out_of_memory_error_says_where_it_struck_and_what_sat_on_the_gpu(planned, monkeypatch):
    """The 24 GiB sweep's final `oom` errors carried torch's line alone; which stage and which components were
    resident is what tells a user (and the next benchmark run) what to change."""
    import torch

    from toolkit.models.base_model import BaseModel

    original = BaseModel.sample_media

    def oom(self, pipeline, gen, generator):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.96 GiB (injected)")

    monkeypatch.setattr(BaseModel, "sample_media", oom)
    planned.engine.memory.reserve_scale["sd1"] = 8.0  # no re-plan: the request fails with `oom`
    [error] = [h for h in frames_of(planned, sd1()) if h["type"] == "error"]
    assert error["code"] == "oom" and error["message"].startswith("Out of memory while encoding (")
    assert "unet" in error["message"] and error["message"].endswith("Tried to allocate 1.96 GiB (injected)")
    monkeypatch.setattr(BaseModel, "sample_media", original)
    run(planned, sd1(seed=2))  # the engine serves on


@pytest.mark.parametrize("setting,arch,expected", [
    ("auto", "hidream", "float8"),  # its MoE step is faster with float8 weights only (H200, 2026-12-01)
    ("auto", "flux", "float8dq"),
    ("float8dq", "hidream", "float8dq"),  # the user's explicit choice wins
])
def test_an_automatic_8_bit_type_follows_the_family_and_an_explicit_one_wins(setting, arch, expected):
    from extensions_built_in.inference_engine.memory_planner import MemoryPlanner
    from toolkit.models.registry import get_model_class
    from toolkit.models.v2.pool import ComponentPool

    planner = MemoryPlanner("cpu", "auto", ComponentPool(), None)
    planner.qtype, planner.qtype_setting = "float8dq", setting  # as the planner sets them on an H100/H200
    assert planner.qtype_for(get_model_class(arch)) == expected
