"""A memory plan on the card as it is: its stream copies priced by this machine's bandwidth and by the streamed
steps it measured (extensions_built_in/inference_engine/stream_speed.py), and whether it may take 8-bit weights
(``engine.memory_quality``, toolkit/memory_quality.py). Plain numbers: Flux.1-dev's real component sizes
(testing/test_memory_plan.py) on the memory a 24 GiB card left free on an H100 (22.5 GiB plannable, where the
plan streamed the transformer keeping ~18 GiB of it and predicted ~1.15x its resident step)."""

import pytest

from extensions_built_in.inference_engine.request_memory import RequestMemory
from extensions_built_in.inference_engine.stream_speed import StreamSpeed
from testing.test_memory_plan import FLUX, PLENTY_OF_RAM, flux_work, gib
from testing.test_memory_plan_engine import planned  # noqa: F401  (a fixture)
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.memory_plan import STREAM_COPY_GBPS, plan_memory, stream_slowdown
from toolkit.memory_quality import MIN_DB, brief, file_note
from toolkit.models.archs.flux import FluxModel
from toolkit.models.components.pool import ComponentPool

FREE = gib(22.5)
SLOW = STREAM_COPY_GBPS / 12  # a link at 12 GB/s: a card in a narrow slot, or behind a shared switch


def flux_plan(quality="fast", db=None, scale=1.0, host=PLENTY_OF_RAM, free=FREE):
    return plan_memory(
        "flux", FLUX, free, flux_work(), host, qtype="float8dq", quality=quality, quality_db=db, copy_scale=scale
    )


def planner_for(tmp_path, quality="balanced", db=None, monkeypatch=None) -> tuple:
    """The engine's planner as on an H100 (float8dq), Flux's real sizes, with FREE GPU bytes and plenty of RAM."""
    planner = RequestMemory("cpu", "auto", ComponentPool(), None, quality=quality)
    planner.active, planner.qtype = True, "float8dq"
    config = ModelConfig(name_or_path=str(tmp_path), arch="flux")
    key = ("flux", str(tmp_path), config.extras_name_or_path, FluxModel("cpu", config).dtype)
    planner._sizes[key] = FLUX
    planner.snapshot = (FREE, PLENTY_OF_RAM)
    planner.refresh = lambda: planner.snapshot
    if monkeypatch is not None:
        monkeypatch.setattr(FluxModel, "quality_8bit_db", {} if db is None else {"float8dq": db})
    return planner, config


GEN = GenerateImageConfig(prompt="p", width=1024, height=1024)


# ---------------------------------------------------------------------------------------------- the link's speed
def test_the_same_request_gets_another_plan_on_a_slower_link(tmp_path, monkeypatch):
    """The planner with two measured bandwidths: at the fit machine's, the transformer streams keeping most of
    itself; on a link a fifth as fast each step would wait on its copies, so under ``fast`` the float8
    transformer stays resident, and under ``balanced`` (Flux's 8-bit quality not measured) it still streams
    lossless but keeps more of itself, the VAE and CLIP visiting to make room."""
    placements = {}
    for quality in ("fast", "balanced"):
        for gbps in (STREAM_COPY_GBPS, 12.0):
            planner, config = planner_for(tmp_path, quality, monkeypatch=monkeypatch)
            planner.streams.h2d_gbps = gbps
            plan = planner.plan(FluxModel, config, GEN)
            placements[quality, gbps] = (plan.placements, round(plan.kept.get("transformer", 0) / 2**30, 1))
    streamed = {"transformer": "stream", "text_encoder": "gpu", "text_encoder_2": "stream", "vae": "gpu"}
    assert placements["fast", STREAM_COPY_GBPS] == placements["balanced", STREAM_COPY_GBPS] == (streamed, 18.1)
    assert placements["fast", 12.0] == (
        {"transformer": "quantized", "text_encoder": "gpu", "text_encoder_2": "gpu", "vae": "gpu"},
        0,
    )
    more_kept = {"transformer": "stream", "text_encoder": "visit", "text_encoder_2": "stream", "vae": "visit"}
    assert placements["balanced", 12.0] == (more_kept, 18.6)


def test_the_copy_term_scales_with_the_fit_machines_bandwidth_over_this_ones():
    speed = StreamSpeed()
    assert speed.copy_scale == 1.0  # not measured: the fit's own
    speed.h2d_gbps = STREAM_COPY_GBPS / 2
    assert speed.copy_scale == 2.0
    plan = flux_plan("lossless", scale=speed.copy_scale)
    part, kept = FLUX[0], plan.kept["transformer"]
    assert plan.stream_slowdowns()["transformer"] == round(stream_slowdown(part, "stream", kept, 4096, 2.0), 2)
    assert stream_slowdown(part, "stream", kept, 4096, 2.0) > stream_slowdown(part, "stream", kept, 4096, 1.0)


def test_the_probe_is_cuda_only():
    from toolkit.h2d_probe import pinned_h2d_gbps

    assert pinned_h2d_gbps("cpu") is None
    speed = StreamSpeed()
    assert speed.measure_link("cpu") is None and not speed.probed


# ---------------------------------------------------------------------------------- steps measured against plans
def timings_for(measured: float, step: float = 0.146) -> dict:
    """A step of ``step`` seconds whose compute waited for copies long enough to be ``measured`` x resident."""
    return {"step_s": step, "stream_wait_ms": 1000 * (step - step / measured)}


def test_a_step_measured_much_slower_than_predicted_corrects_the_copy_cost_and_changes_the_plan():
    """Predicted 1.15x, measured 1.46x (what the H100 ran): the copy term takes the factor that predicts 1.46x for
    the same placements, and the next plan, priced with it, differs: ``fast`` takes the float8 transformer."""
    speed = StreamSpeed()
    plan = flux_plan(scale=speed.copy_scale)
    assert plan.stream_slowdowns() == {"transformer": 1.15}
    reason = speed.observe(plan, timings_for(1.46))
    assert reason == "re-planned: the streamed transformer's step measured 1.46x resident, predicted 1.15x"
    assert 1.5 < speed.correction < 2.5 and speed.pending == reason
    assert speed.last == {"role": "transformer", "measured": 1.46, "predicted": 1.15}
    again = plan_memory(
        "flux", FLUX, FREE, flux_work(), PLENTY_OF_RAM, qtype="float8dq", only=plan.placements,
        copy_scale=speed.copy_scale,
    )  # fmt: skip
    assert abs(again.stream_slowdowns()["transformer"] - 1.46) <= 0.02  # the correction predicts what ran
    assert flux_plan(scale=speed.copy_scale).placements["transformer"] == "quantized"
    assert speed.take_pending() == reason and speed.take_pending() is None  # said once


@pytest.mark.parametrize("measured", [1.20, 1.10, 1.15])
def test_a_step_within_15_percent_of_the_prediction_changes_nothing(measured):
    speed = StreamSpeed()
    plan = flux_plan()
    assert speed.observe(plan, timings_for(measured)) is None
    assert (speed.correction, speed.pending, speed.copy_scale) == (1.0, None, 1.0)
    assert speed.last["measured"] == measured


def test_nothing_is_corrected_without_a_streamed_denoiser_or_a_measured_wait():
    speed = StreamSpeed()
    resident = flux_plan(free=gib(48))
    assert resident.stream_slowdowns() == {}
    assert speed.observe(resident, timings_for(3.0)) is None
    assert speed.observe(flux_plan(), {"step_s": 0.15, "stream_wait_ms": None}) is None  # no CUDA events
    assert speed.observe(None, timings_for(3.0)) is None and speed.correction == 1.0


def test_the_re_plan_sets_the_loaded_placements_aside_and_says_why(tmp_path, monkeypatch):
    """After a correction the planner does not keep the loaded placements (they were chosen with the cost that
    proved wrong); its plan carries the reason, for the next request's status frame, once."""
    planner, config = planner_for(tmp_path, "fast", monkeypatch=monkeypatch)
    loaded = planner.plan(FluxModel, config, GEN)
    assert loaded.placements["transformer"] == "stream" and loaded.replanned is None
    planner.observe(loaded, timings_for(1.46))
    replanned = planner.plan(FluxModel, config, GEN, resident=loaded)
    assert replanned.placements["transformer"] == "quantized"
    assert replanned.replanned.startswith("re-planned: the streamed transformer's step measured 1.46x")
    assert "re-planned" in replanned.message() and replanned.describe()["replanned"] == replanned.replanned
    health = planner.describe(replanned)
    assert health["copy_correction"] == planner.streams.correction > 1 and health["reference_h2d_gbps"] == 55.2
    assert planner.plan(FluxModel, config, GEN, resident=replanned).replanned is None


# ---------------------------------------------------------------------------------------- engine.memory_quality
def test_each_quality_setting_chooses_its_plan():
    """On a slow link (12 GB/s) 8 bits are 1.57x faster than the best lossless plan: ``fast`` and a ``balanced``
    family measured at 41.2 dB take them, ``lossless`` does not, nor ``balanced`` for a family not measured or
    under 35 dB. On a 25 GB/s link they are 1.15x faster: ``balanced`` keeps 16 bits, ``fast`` still takes 8."""
    settings = [("fast", None), ("lossless", 41.2), ("balanced", 41.2), ("balanced", None), ("balanced", 30)]
    slow = {(quality, db): flux_plan(quality, db, SLOW) for quality, db in settings}
    eight_bit = [key for key, plan in slow.items() if plan.placements["transformer"] == "quantized"]
    assert eight_bit == [("fast", None), ("balanced", 41.2)]
    assert all(plan.placements["transformer"] == "stream" for key, plan in slow.items() if key not in eight_bit)
    assert slow["balanced", 41.2].why == (
        "balanced: float8dq transformer resident, 1.57x faster than the best lossless plan (transformer streamed "
        "with 18.6 GiB kept; text_encoder visiting; text_encoder_2 streamed; vae visiting), 8-bit quality 41.2 dB "
        "≥ 35"
    )
    assert slow["balanced", None].why.endswith("would be 1.57x faster, but flux's 8-bit quality is not measured")
    assert slow["balanced", 30].why.endswith("but flux's 8-bit quality is 30 dB < 35")
    assert slow["lossless", 41.2].why.startswith("lossless: 16-bit weights; 8 bits (float8dq transformer resident)")
    mid = STREAM_COPY_GBPS / 25
    assert flux_plan("balanced", 41.2, mid).placements["transformer"] == "stream"
    assert "only above 1.2x" in flux_plan("balanced", 41.2, mid).why
    assert flux_plan("fast", None, mid).placements["transformer"] == "quantized"


def test_where_nothing_lossless_fits_every_setting_takes_8_bits():
    """16 GiB of host RAM cannot hold the bf16 transformer's copies for a visit or a stream, nor does it fit the
    GPU: 8 bits however the quality is set, and the plan says why."""
    for quality in ("lossless", "balanced", "fast"):
        plan = flux_plan(quality, None, host=gib(16), free=gib(16))
        assert plan.placements["transformer"] in ("quantized", "quantized_visit", "quantized_stream")
        assert plan.why == f"{quality}: 8 bits, since no lossless plan fits"


def test_a_lossless_cheapest_plan_needs_no_reason():
    plan = flux_plan("balanced", 41.2, free=gib(48))
    assert set(plan.placements.values()) == {"gpu"} and plan.why is None and plan.describe()["quality"] is None


def test_balanced_takes_8_bits_only_from_the_family_s_measured_quality(tmp_path, monkeypatch):
    """The family's arch file says its 8-bit PSNR (``quality_8bit_db``); the planner passes it through."""
    for db, expected in ((None, "stream"), (MIN_DB - 0.1, "stream"), (MIN_DB, "quantized")):
        planner, config = planner_for(tmp_path, "balanced", db, monkeypatch)
        planner.streams.h2d_gbps = 12.0
        assert planner.plan(FluxModel, config, GEN).placements["transformer"] == expected, db


def test_an_unknown_quality_setting_is_refused():
    with pytest.raises(ValueError, match="engine.memory_quality must be one of lossless, balanced, fast"):
        RequestMemory("cpu", "auto", ComponentPool(), None, quality="best")


def test_the_start_frame_s_prediction_and_health_say_why(tmp_path, monkeypatch):
    planner, config = planner_for(tmp_path, "balanced", 41.2, monkeypatch)
    planner.streams.h2d_gbps = 12.0
    predicted = planner.predict(FluxModel, config, GEN)["predicted"]
    assert predicted["quality"].startswith("balanced: float8dq transformer resident, 1.57x faster")
    health = planner.describe(planner.plan(FluxModel, config, GEN))
    assert health["quality"] == "balanced" and health["h2d_gbps"] == 12.0
    assert health["plan"]["quality"] == predicted["quality"]


def test_a_result_file_names_an_8_bit_or_streamed_placement_only():
    assert brief(flux_plan(free=gib(48))) == "everything resident" and file_note(flux_plan(free=gib(48))) is None
    assert file_note(flux_plan(free=gib(32))) is None  # T5 visits: the same arithmetic, the same speed
    assert file_note(flux_plan("fast", None, SLOW)) == "float8dq transformer resident"
    assert file_note(flux_plan()) == "transformer streamed with 18.1 GiB kept; text_encoder_2 streamed"
    assert file_note(None) is None


# ---------------------------------------------------------------------------------------------- inside the engine
@pytest.fixture()
def unet_streams(request, monkeypatch):
    """The planned engine (testing/test_memory_plan_engine.py) with tiny SD1's UNet always streamed (a real plan,
    its other placements chosen as ever), and steps the clock reports as ``measured["x"]`` times resident."""
    from extensions_built_in.inference_engine import request_memory
    from toolkit import step_clock

    h, plans, measured, real = request.getfixturevalue("planned"), [], {}, request_memory.plan_memory

    def streamed(*args, **kwargs):
        plans.append(real(*args, **{**kwargs, "only": {"unet": "stream"}}))
        return plans[-1]

    def timings(clock):
        wait = 1.0 - 1.0 / measured["x"] if "x" in measured else None
        return {"step_s": 1.0, "hook_ms": None, "stream_ms": None, "stream_wait_ms": wait and wait * 1000}

    monkeypatch.setattr(request_memory, "plan_memory", streamed)
    monkeypatch.setattr(step_clock.StepClock, "timings", timings)
    h.plans, h.measured = plans, measured
    return h


def test_a_slow_streamed_step_re_plans_the_next_request_and_its_status_frame_says_why(unet_streams):
    from testing.test_memory_plan_engine import frames_of
    from testing.test_pool import run, sd1
    from toolkit.media_info import PARAMETERS, read_info

    h = unet_streams
    h.measured["x"] = 1.0  # the first request's step is measured, as fast as resident: nothing to correct
    out = run(h, sd1())
    predicted = h.plans[-1].stream_slowdowns()["unet"]
    assert h.client.health()["memory"]["last_streamed_step"]["measured"] == 1.0
    assert "Memory: unet streamed" in read_info(out["result"]["path"])[PARAMETERS]  # the file says how it ran
    h.measured["x"] = round(predicted * 1.3, 2)
    run(h, sd1(seed=8))
    memory = h.client.health()["memory"]
    assert memory["copy_correction"] > 1 and memory["last_streamed_step"]["measured"] == h.measured["x"]
    headers = frames_of(h, sd1(seed=9))
    [status] = [f for f in headers if f["type"] == "status" and f["message"].startswith("Memory plan")]
    x = h.measured["x"]
    reason = f"re-planned: the streamed unet's step measured {x:.2f}x resident, predicted {predicted:.2f}x"
    assert reason in status["message"] and status["memory"]["replanned"] == reason
    assert abs(status["memory"]["components"]["unet"]["step_slowdown"] - h.measured["x"]) <= 0.05
    headers = frames_of(h, sd1(seed=10))  # the corrected cost predicts what runs: no further re-plan
    assert not any("re-planned" in f.get("message", "") for f in headers)


def test_memory_quality_reaches_the_planner_and_health(tmp_path, tiny_cache, monkeypatch):
    from extensions_built_in.inference_engine import request_memory
    from testing.engine_harness import EngineHarness
    from testing.test_pool import run, sd1
    from toolkit.models.archs.sd1 import SD1Model

    seen, real = [], request_memory.plan_memory
    monkeypatch.setattr(request_memory, "plannable_bytes", lambda device, own: 64 * 2**30)
    monkeypatch.setattr(request_memory, "plan_memory", lambda *a, **kw: seen.append(kw) or real(*a, **kw))
    monkeypatch.setattr(SD1Model, "quality_8bit_db", {"float8dq": 37.5, "float8": 20.0})
    h = EngineHarness(tmp_path, memory_quality="lossless")
    h.engine.memory.active, h.engine.memory.qtype = True, "float8dq"  # as on an H100: the dB of that qtype passes
    try:
        run(h, sd1())
        assert h.client.health()["memory"]["quality"] == "lossless"
    finally:
        h.close()
    assert seen and all((kw["quality"], kw["quality_db"]) == ("lossless", 37.5) for kw in seen)
    with pytest.raises(ValueError, match="engine.memory_quality"):
        EngineHarness(tmp_path / "other", memory_quality="lossy")


# ------------------------------------------------------------------------------------- a stream's measured waits
class FakeEvent:
    """A CUDA timing event on the CPU's clock: what ``BlockStream`` records around the compute stream's stalls."""

    made: list = []

    def __init__(self):
        self.t, self.synced = None, False
        FakeEvent.made.append(self)

    def record(self, stream=None):
        import time

        self.t = time.perf_counter()

    def synchronize(self):
        self.synced = True

    def elapsed_time(self, end) -> float:
        return (end.t - self.t) * 1000.0


def test_a_streamed_denoiser_times_its_stalls_and_the_clock_reports_them_per_step(monkeypatch):
    """Each call's first streamed block is copied on the compute stream itself, the others arrive on a side
    stream and are waited for (CUDA only: on the CPU every later block is there already). Each stall lies
    between two events, read once after the request: the clock reports their sum per step, for the streamed
    denoisers only (``rest_stays``), and then stops timing."""
    import weakref

    import torch

    from testing.test_offload import Blocks, Counter
    from toolkit.models import streaming
    from toolkit.models.streaming import BlockStream
    from toolkit.step_clock import StepClock

    monkeypatch.setattr(streaming, "_live", weakref.WeakSet())
    model, encoder = Blocks(), Blocks()
    denoiser = BlockStream(model, "cpu", allocate=Counter(), rest_stays=True)
    other = BlockStream(encoder, "cpu", allocate=Counter())
    assert denoiser.new_event is None and StepClock("cpu").timings()["stream_wait_ms"] is None  # no events here
    denoiser.new_event = other.new_event = FakeEvent
    FakeEvent.made = []
    clock = StepClock("cpu")
    assert denoiser.waits == [] and other.waits is None  # an encoder's waits are no step's
    x = torch.randn(3, 32)
    with torch.inference_mode():
        for _ in range(3):
            model(x)
            encoder(x)
            clock.hooks.append(0.0)
    pairs = list(zip(FakeEvent.made[::2], FakeEvent.made[1::2]))
    assert len(pairs) == 3  # one stall per call: its first streamed block, copied where it computes
    expected = sum(a.elapsed_time(b) for a, b in pairs) / 3
    assert clock.timings()["stream_wait_ms"] == round(expected, 3) > 0
    assert pairs[-1][1].synced  # read once the last has completed
    assert denoiser.waits is None and denoiser.wait_seconds() is None  # timing ends with the reading
    denoiser.remove()
    other.remove()


# ---------------------------------------------------------------------------------------------- the machine's RAM
@pytest.fixture
def a_128_gib_machine(monkeypatch):
    """psutil as on a 128 GiB machine with 100 GiB available and this process resident at 2 GiB; the budget is
    reset after the test (it is process-wide, like the VRAM budget)."""
    import psutil

    from extensions_built_in.inference_engine import request_memory
    from toolkit.models.components import pool

    machine = type("VM", (), {"total": gib(128), "available": gib(100)})()
    monkeypatch.setattr(psutil, "virtual_memory", lambda: machine)
    monkeypatch.setattr(psutil.Process, "memory_info", lambda self: type("MI", (), {"rss": gib(2)})())
    monkeypatch.setattr(request_memory, "plannable_bytes", lambda device, own: FREE)
    yield pool
    pool.set_host_ram_budget(0)


def test_a_host_ram_budget_plans_as_on_a_machine_with_that_much_ram(tmp_path, a_128_gib_machine):
    """``engine.host_ram_budget_gb``: Flux.1-dev at 24 GiB on the 128 GiB machine streams its transformer keeping
    18 GiB of it and streams T5 from pinned RAM; as a 30 GiB machine (26 GiB less the 4 GiB reserve and the
    process's own 2 GiB: 24 GiB for offloaded weights) T5 stays on the GPU and the transformer keeps less of
    itself, so fewer of its bytes wait in RAM."""
    pool = a_128_gib_machine
    plans = {}
    for budget in (0, 30):
        assert pool.set_host_ram_budget(budget) == (gib(budget) if budget else None)
        planner, config = planner_for(tmp_path)
        del planner.refresh  # the engine's own: free GPU memory as stubbed, host RAM through the budget
        plan = planner.plan(FluxModel, config, GEN)
        plans[budget] = (planner.snapshot[1], plan.placements["text_encoder_2"], plan.kept["transformer"])
    assert plans[0] == (gib(100) - int(gib(128) * 0.10), "stream", plans[0][2])
    assert plans[30][:2] == (gib(30) - gib(4) - gib(2), "gpu")
    assert plans[30][2] < plans[0][2]


def test_without_a_host_ram_budget_the_machine_s_ram_counts(a_128_gib_machine):
    pool = a_128_gib_machine
    assert pool.set_host_ram_budget(0) is None
    assert pool.host_available_bytes(gib(3)) == gib(100) - int(gib(128) * 0.10) + gib(3)
    pool.set_host_ram_budget(200)  # a budget over the machine's RAM: the machine's still counts
    assert pool.host_available_bytes(gib(3)) == gib(100) - int(gib(128) * 0.10) + gib(3)
    pool.set_host_ram_budget(5)  # under its reserve and the process's own memory: its own pinned copies only
    assert pool.host_available_bytes(gib(3)) == gib(3)
