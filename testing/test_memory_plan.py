"""The automatic memory plan (toolkit/memory_plan.py, extensions_built_in/inference_engine/request_memory.py).

Decision tables use the real models' component sizes (bf16 bytes of the released checkpoints, as measured on the
H200: docs/BENCHMARKS.md) and the memory a card leaves free; each row says what a 48, 32, 24 or 16 GiB card
gets. Then explicit options winning over the plan, and component sizes read from checkpoint headers. The plan
inside the engine is testing/test_memory_plan_engine.py.
"""

import re
from dataclasses import replace

import pytest

from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.memory_plan import GIB, Part, Plan, PlanDoesNotFit, Workload, peak_bytes, plan_memory
from toolkit.models.archs.flux import FluxModel
from toolkit.models.archs.sd1 import SD1Model
from toolkit.models.registry import get_model_class


def gib(x: float) -> int:
    return int(x * GIB)


FLUX = [
    Part("transformer", "denoiser", gib(22.17)),
    Part("text_encoder", "encoder", gib(0.23)),
    Part("text_encoder_2", "encoder", gib(8.87)),
    Part("vae", "decoder", gib(0.16)),
]
QWEN_IMAGE = [
    Part("transformer", "denoiser", gib(38.1)),
    Part("text_encoder", "encoder", gib(15.4)),
    Part("vae", "decoder", gib(0.24)),
]
SDXL = [
    Part("unet", "denoiser", gib(4.78)),
    Part("text_encoder", "encoder", gib(0.23)),
    Part("text_encoder_2", "encoder", gib(1.29)),
    Part("vae", "decoder", gib(0.16)),
]
WAN22_14B = [
    Part("transformer", "denoiser", gib(26.6)),
    Part("transformer_2", "denoiser", gib(26.6)),
    Part("text_encoder", "encoder", gib(10.6)),
    Part("vae", "decoder", gib(0.24)),
]


def flux_work(size=1024) -> Workload:
    return FluxModel("cuda", ModelConfig(name_or_path="x", arch="flux")).workload(
        GenerateImageConfig(prompt="p", width=size, height=size)
    )


PLENTY_OF_RAM = gib(256)

CASES = [
    # name, parts, card GiB, workload, expected placements (role -> placement), vae tiling
    (
        "sdxl fits a 16 GiB card whole",
        SDXL,
        16,
        flux_work(),
        {"unet": "gpu", "text_encoder": "gpu", "text_encoder_2": "gpu", "vae": "gpu"},
        False,
    ),
    (
        "flux on 48: everything resident",
        FLUX,
        48,
        flux_work(),
        {"transformer": "gpu", "text_encoder": "gpu", "text_encoder_2": "gpu", "vae": "gpu"},
        False,
    ),
    (
        "flux on 32: T5 visits for the prompt, the transformer stays",
        FLUX,
        32,
        flux_work(),
        {"transformer": "gpu", "text_encoder": "gpu", "text_encoder_2": "visit", "vae": "gpu"},
        False,
    ),
    (
        "flux on 24: the transformer and T5 take turns (measured: 2.57 s vs 1.86 s full card)",
        FLUX,
        24,
        flux_work(),
        {"transformer": "visit", "text_encoder": "gpu", "text_encoder_2": "visit", "vae": "gpu"},
        False,
    ),
    (
        "flux on 16: 8-bit transformer resident, T5 streamed for the prompt",
        FLUX,
        16,
        flux_work(),
        {"transformer": "quantized", "text_encoder": "gpu", "text_encoder_2": "stream", "vae": "gpu"},
        False,
    ),
    (
        "flux at 2048x2048 on 24: the decode fits beside nothing else, untiled; even the VAE waits off the GPU",
        FLUX,
        24,
        flux_work(2048),
        {"transformer": "visit", "text_encoder": "gpu", "text_encoder_2": "visit", "vae": "visit"},
        False,
    ),
    (
        "flux at 2048x2048 on 16: four times the tokens hide most of a stream, so the bf16 transformer streams "
        "(keeping what fits) rather than going 8-bit; the decode beside it is tiled",
        FLUX,
        16,
        flux_work(2048),
        {"transformer": "stream", "text_encoder": "gpu", "text_encoder_2": "stream", "vae": "gpu"},
        True,
    ),
    (
        "qwen-image on 24: 8-bit transformer, the encoder streamed, tiled decode",
        QWEN_IMAGE,
        24,
        flux_work(1328),
        {"transformer": "quantized", "text_encoder": "stream", "vae": "gpu"},
        True,
    ),
    (
        "wan 2.2 14B on 48: the two experts take turns",
        WAN22_14B,
        48,
        Workload(gib(2.4), gib(3.6), gib(1.4)),
        {"transformer": "visit", "transformer_2": "visit", "text_encoder": "gpu", "vae": "gpu"},
        False,
    ),
    (
        "wan 2.2 14B on 24 at 832x480x81: the experts stream in bf16, their copies hidden by 32k tokens a step",
        WAN22_14B,
        24,
        Workload(gib(4.2), gib(4.9), gib(1.2), tokens=31590),
        {"transformer": "stream", "transformer_2": "stream", "text_encoder": "visit", "vae": "gpu"},
        False,
    ),
]


@pytest.mark.parametrize("name,parts,card,work,expected,tiling", CASES, ids=[c[0] for c in CASES])
def test_the_plan_for_a_card(name, parts, card, work, expected, tiling):
    plan = plan_memory("x", parts, gib(card), work, PLENTY_OF_RAM, qtype="float8")
    assert (plan.placements, plan.vae_tiling) == (expected, tiling)
    assert plan.peak <= gib(card) and plan.peak == peak_bytes(tuple(parts), plan.placements, work, tiling, plan.kept)


def test_every_cheaper_plan_would_not_fit():
    """The chosen plan is the cheapest that fits: each cheaper assignment peaks above the card."""
    import itertools

    from toolkit.memory_plan import candidates, kept_shares, plan_cost

    work = flux_work()
    plan = plan_memory("flux", FLUX, gib(24), work, PLENTY_OF_RAM, qtype="float8")
    for combo, tiling in itertools.product(itertools.product(*candidates(tuple(FLUX), True, True)), (False, True)):
        placements = dict(zip((p.role for p in FLUX), combo))
        peak = peak_bytes(tuple(FLUX), placements, work, tiling)
        kept = kept_shares(tuple(FLUX), placements, peak, gib(24))
        if plan_cost(tuple(FLUX), placements, tiling, kept, work.tokens) < plan.cost:
            assert peak > gib(24), placements


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

    parts = [
        Part("transformer", "denoiser", gib(23.9), gib(0.3)),
        Part("text_encoder", "encoder", gib(14.0)),
        Part("text_encoder_2", "encoder", gib(0.23)),
        Part("vae", "decoder", gib(0.46)),
    ]
    model = HunyuanVideoModel("cuda", ModelConfig(name_or_path="x", arch="hunyuan_video"))
    big = model.workload(GenerateImageConfig(prompt="p", width=1280, height=720, num_frames=129))
    with pytest.raises(PlanDoesNotFit, match=r"GiB of it for this request's size: fewer pixels or frames need less"):
        plan_memory("hunyuan_video", parts, gib(15.4), big, PLENTY_OF_RAM, budget=gib(16), qtype="float8dq")
    small = model.workload(GenerateImageConfig(prompt="p", width=848, height=480, num_frames=61))
    plan = plan_memory("hunyuan_video", parts, gib(15.4), small, PLENTY_OF_RAM, budget=gib(16), qtype="float8dq")
    assert plan.placements["transformer"] in ("stream", "quantized")

    # The engine names what does fit: the most frames at this size, and the largest size at these frames.
    from extensions_built_in.inference_engine.request_memory import what_fits

    asked = []

    def plan_for(request):
        asked.append((request.width, request.height, request.num_frames))
        work = model.workload(request)
        return plan_memory("hunyuan_video", parts, gib(15.4), work, PLENTY_OF_RAM, budget=gib(16), qtype="float8dq")

    gen = GenerateImageConfig(prompt="p", width=1280, height=720, num_frames=129)
    with pytest.raises(PlanDoesNotFit) as err:
        plan_for(gen)
    err.value.suggest(what_fits(model, gen, plan_for))
    match = re.search(r"at 1280×720, up to (\d+) frames fit; (\d+)×(\d+) fits at 129 frames\)", str(err.value))
    assert match, str(err.value)
    frames, width, height = (int(g) for g in match.groups())
    assert (frames - 1) % 4 == 0 and width % 16 == 0 and height % 16 == 0 and width * 9 // 16 - height < 16
    plan_for(GenerateImageConfig(prompt="p", width=1280, height=720, num_frames=frames))  # fits
    with pytest.raises(PlanDoesNotFit):  # and the next count up does not: the largest
        plan_for(GenerateImageConfig(prompt="p", width=1280, height=720, num_frames=frames + 4))
    plan_for(GenerateImageConfig(prompt="p", width=width, height=height, num_frames=129))
    assert len(asked) < 20  # a binary search over frame counts, not one plan per count


def test_an_8_bit_plan_counts_its_16_bit_transients():
    """Wan 2.2 14B I2V at 1280x720x81 on the H200 at 24 GiB: the plan let its experts visit in float8 (predicted
    peak 23.3 GiB) and sampling needed 23.54 GiB, though the working set measured on the full card was covered.
    An 8-bit layer dequantizes its weight (or quantizes its input) per call; counted as two of the part's
    largest tensor (the experts' 5120x30720 time projection), that plan no longer fits and the experts stream
    (1.03x the full card's step there, measured)."""
    from toolkit.models.archs.wan22_14b_i2v import Wan2214bI2VModel
    from toolkit.models.components.pool import plannable_share

    parts = [  # sizes from the real configs (bf16), as the engine reads them from the files
        Part("transformer", "denoiser", gib(26.62), 314_572_800),
        Part("transformer_2", "denoiser", gib(26.62), 314_572_800),
        Part("text_encoder", "encoder", gib(10.58), 2_100_297_728),
        Part("vae", "decoder", gib(0.24), 7_962_624),
    ]
    model = Wan2214bI2VModel("cuda", ModelConfig(name_or_path="x", arch="wan22_14b_i2v"))
    work = model.workload(GenerateImageConfig(prompt="p", width=1280, height=720, num_frames=81))
    visiting = {"transformer": "quantized_visit", "transformer_2": "quantized_visit", "text_encoder": "visit"}
    assert peak_bytes(tuple(parts), visiting | {"vae": "visit"}, work, False) >= gib(23.54)
    plan = plan_memory("wan22_14b_i2v", parts, plannable_share(gib(24)), work, PLENTY_OF_RAM, qtype="float8")
    assert plan.placements["transformer"] == plan.placements["transformer_2"] == "stream"


def test_a_streamed_8_bit_encoder_counts_its_head_dequantized_through_float32():
    """FLUX.2-dev at 24 GiB on the H200 (23.24 GiB plannable, docs/BENCHMARKS.md): with both its float8
    transformer and its float8 Mistral encoder streamed, the encoding stage needed 6.48 GiB beside the
    transformer's kept blocks (21.33 GiB peak with 14.85 kept); the first plan had left 4.66 and ran out of
    memory dequantizing the encoder's 1.25 GiB LM head. On a 64 GiB host (no room for the encoder's bf16
    copies) the plan must leave the measured room."""
    parts = (  # the engine's reading of the real-size build's files; largest: the transformer's and the head
        Part("transformer", "denoiser", gib(60.02), 679_477_248),
        Part("text_encoder", "encoder", gib(44.72), 1_342_177_280),
        Part("vae", "decoder", gib(0.16), 4_718_592),
    )
    model = get_model_class("flux2")("cuda", ModelConfig(name_or_path="x", arch="flux2"))
    work = model.workload(GenerateImageConfig(prompt="p", width=1024, height=1024))
    plan = plan_memory("flux2", parts, gib(23.24), work, gib(64), qtype="float8dq")
    assert plan.placements["text_encoder"] == plan.placements["transformer"] == "quantized_stream"
    assert plan.peak_of("encoding") - plan.kept["transformer"] >= gib(6.48)


def test_the_smallest_plan_also_says_when_host_ram_is_short():
    with pytest.raises(PlanDoesNotFit, match="GiB of host RAM"):
        plan_memory("flux", FLUX, gib(2), flux_work(), gib(1), qtype=None)


# ------------------------------------------------------------------ explicit options win
@pytest.mark.parametrize(
    "options,expected",
    [
        (
            {"low_vram": True},
            {"transformer": "visit", "text_encoder": "visit", "text_encoder_2": "visit", "vae": "visit"},
        ),
        (
            {"quantize": True, "quantize_te": False},
            {"transformer": "quantized", "text_encoder": "gpu", "text_encoder_2": "gpu", "vae": "gpu"},
        ),
        (
            {"low_vram": True, "quantize": True},
            {"transformer": "quantized", "text_encoder": "quantized", "text_encoder_2": "quantized", "vae": "visit"},
        ),
        (
            {"layer_offloading": True, "layer_offloading_text_encoder_percent": 0},
            {"transformer": "stream", "text_encoder": "gpu", "text_encoder_2": "gpu", "vae": "gpu"},
        ),
    ],
)
def test_explicit_options_are_the_placements_and_the_planner_stays_out(options, expected, tmp_path):
    from extensions_built_in.inference_engine.request_memory import RequestMemory
    from toolkit.models.components.pool import ComponentPool

    cfg = ModelConfig(name_or_path="tiny:flux", arch="flux", **options)
    assert FluxModel("cuda", cfg).options_plan().placements == expected
    planner = RequestMemory("cpu", "auto", ComponentPool(), None)
    planner.active = True  # as on a GPU
    assert planner.source(cfg) == "options"
    assert planner.plan(FluxModel, cfg, GenerateImageConfig(prompt="p")) is None
    assert planner.predict(FluxModel, cfg, GenerateImageConfig(prompt="p"))["predicted"] is None


def test_the_planner_reads_component_sizes_from_the_checkpoint_headers(tiny_cache):
    import torch

    from toolkit.models.components.loading import load_component

    model = SD1Model("cuda", ModelConfig(name_or_path="tiny:sd1", dtype="bf16"))
    sizes = {p.role: (p.kind, p.bytes) for p in model.memory_parts()}
    unet = load_component("diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bf16")
    assert sizes["unet"] == (
        "denoiser",
        sum(p.numel() * 2 for p in unet.parameters()) + sum(b.numel() * b.element_size() for b in unet.buffers()),
    )
    assert sizes["vae"][0] == "decoder" and sizes["text_encoder"][0] == "encoder"
    assert unet.dtype == torch.bfloat16


def test_a_stage_s_predicted_peak_is_what_stays_resident_plus_its_largest_phase():
    """The re-plan after an out-of-memory compares what a stage needed with what was predicted for that stage,
    not with the plan's overall peak (LTX-2 at 24 GiB: the decode's estimate hid a 3 GiB short sampling one)."""
    parts = [
        Part("transformer", "denoiser", 10 * GIB),
        Part("text_encoder", "encoder", 8 * GIB),
        Part("vae", "decoder", 1 * GIB),
    ]
    work = Workload(denoise=2 * GIB, decode=6 * GIB, decode_tiled=GIB, encode=GIB)
    placements = {"transformer": "visit", "text_encoder": "visit", "vae": "gpu"}
    plan = Plan(placements, False, peak_bytes(tuple(parts), placements, work, False), 0, tuple(parts), work=work)
    assert plan.peak_of("sampling") == 1 * GIB + 10 * GIB + 2 * GIB
    assert plan.peak_of("decoding") == 1 * GIB + 6 * GIB
    assert plan.peak_of("encoding") == plan.peak_of("sampling")  # the first step runs inside it
    assert plan.peak == plan.peak_of("sampling") and plan.work_of("decoding") == 6 * GIB


def test_a_streamed_denoiser_keeps_on_the_gpu_what_the_plan_leaves_room_for():
    """Without torchao, Flux on a 16 GiB card streams its transformer: every step would move all 22 GiB through
    PCIe. The room the plan leaves, less a margin, stays on the GPU (ComfyUI's partial loading); which
    placements win does not change. Two streamed experts (Wan 2.2 14B) share the room equally."""
    from toolkit.memory_plan import KEEP_MARGIN, STREAMED

    plan = plan_memory("flux", FLUX, gib(16), flux_work(), PLENTY_OF_RAM, qtype=None)
    assert plan.placements["transformer"] == "stream" and set(plan.kept) == {"transformer"}
    margin = max(GIB, int(gib(16) * KEEP_MARGIN))
    assert plan.peak == gib(16) - margin  # all the room, less the margin
    assert plan.peak == peak_bytes(tuple(FLUX), plan.placements, flux_work(), plan.vae_tiling, plan.kept)
    assert plan.peak - plan.kept["transformer"] == peak_bytes(tuple(FLUX), plan.placements, flux_work(), False)
    assert f"{round(plan.kept['transformer'] / GIB, 2)} GiB of transformer kept on the GPU" in plan.summary()
    assert plan.describe()["components"]["transformer"]["kept_gib"] == round(plan.kept["transformer"] / GIB, 2)
    # what the plan predicts for the step, there for a user (and a GPU run) to check against /health's timings
    slowdown = plan.describe()["components"]["transformer"]["step_slowdown"]
    assert 1.0 < slowdown < 2.66 and f"transformer's step ~{slowdown:.2f}x resident" in plan.summary()
    assert "step_slowdown" not in plan.describe()["components"]["text_encoder_2"]  # streamed, but an encoder
    tight = plan_memory("flux", FLUX, gib(12.5), flux_work(), PLENTY_OF_RAM, qtype=None)
    assert tight.placements["transformer"] in STREAMED  # the same kind of plan with less room keeps less
    assert tight.kept.get("transformer", 0) < plan.kept["transformer"]
    resident = plan_memory("flux", FLUX, gib(48), flux_work(), PLENTY_OF_RAM, qtype=None)
    assert resident.kept == {}  # nothing streams, nothing to keep

    wan = plan_memory("wan", WAN22_14B, gib(24), Workload(gib(4.2), gib(4.9), gib(1.2)), PLENTY_OF_RAM, qtype=None)
    assert wan.placements["transformer"] == wan.placements["transformer_2"] == "stream"
    assert wan.kept["transformer"] == wan.kept["transformer_2"] > 0


def test_a_streamed_step_costs_what_the_h200_measured():
    """The stream cost's fit against docs/BENCHMARKS.md: Flux's transformer at 1024² streamed whole ran at 2.66x
    its resident step, half kept 1.67x, three quarters kept 1.30x; HunyuanVideo at 1280x720x129 streamed whole
    at 1.00x. Each within 0.07 of a step."""
    from toolkit.memory_plan import stream_slowdown

    flux = Part("transformer", "denoiser", gib(22.17))

    def slowdown(streamed: float, tokens: int) -> float:
        return stream_slowdown(flux, "stream", int(flux.bytes * (1 - streamed)), tokens)

    for streamed, measured in ((1.0, 2.66), (0.5, 1.67), (0.25, 1.30)):
        assert abs(slowdown(streamed, 4096) - measured) < 0.07, (streamed, slowdown(streamed, 4096))
    assert slowdown(1.0, 116100) == 1.0
    assert slowdown(1.0, 8192) < slowdown(1.0, 4096)  # more tokens a step hide more of the same copies


def test_the_room_an_encoder_would_take_is_worth_more_kept_by_the_denoiser():
    """Qwen-Image on a 16 GiB card: a plan that keeps its 8-bit encoder resident leaves the streamed transformer
    under 1 GiB to keep, and every step copies the rest; streaming the encoder once per request instead lets
    the transformer keep ~12 GiB of itself. Before kept shares had a price, the planner chose the first."""
    plan = plan_memory("qwen_image", QWEN_IMAGE, gib(16), flux_work(1328), PLENTY_OF_RAM, qtype="float8dq")
    assert plan.placements["text_encoder"] == "stream", plan.summary()
    assert plan.kept["transformer"] > gib(9), plan.summary()


def test_long_videos_stream_in_bf16_and_short_requests_go_8_bit():
    """Wan 2.2 14B's experts on 24 GiB: at 1280x720x81 (73k tokens a step) streaming is hidden by the compute
    (measured 1.03x the full card), so they stream lossless; the same experts at 4096 tokens a step would wait
    on their copies, and stream in 8 bits, half the bytes."""
    work = Workload(gib(8.2), gib(4.9), gib(1.2), tokens=72900)
    video = plan_memory("wan22_14b", WAN22_14B, gib(24), work, PLENTY_OF_RAM, qtype="float8")
    assert video.placements["transformer"] == video.placements["transformer_2"] == "stream"
    short = plan_memory("wan22_14b", WAN22_14B, gib(24), replace(work, tokens=4096), PLENTY_OF_RAM, qtype="float8")
    assert short.placements["transformer"] == short.placements["transformer_2"] == "quantized_stream"


@pytest.mark.parametrize("seed", range(12))
def test_the_search_finds_the_plan_trying_every_placement_would(seed):
    """The search sums each part's numbers once per plan instead of per combination (HiDream's 31k combinations
    took 1.1 s per request on the H200 machine, twice). Against the plain definition, on random models and
    cards: the cheapest assignment whose peak and host bytes fit, its kept share counted, or else the smallest."""
    import itertools
    import random

    from toolkit.memory_plan import COST, host_bytes, kept_shares, plan_cost

    rng = random.Random(seed)
    kinds = ["denoiser"] + ["encoder"] * rng.randint(1, 3) + ["decoder"]
    parts = [
        Part(f"{kind}_{i}", kind, gib(rng.uniform(0.1, 30)), gib(rng.uniform(0.01, 1.2)))
        for i, kind in enumerate(kinds)
    ]
    work = Workload(gib(rng.uniform(0.3, 8)), gib(rng.uniform(1, 10)), gib(0.5), tokens=rng.choice([0, 4096, 60000]))
    available, host = gib(rng.uniform(4, 48)), gib(rng.uniform(16, 96))
    tried = []
    for combo in itertools.product(*(list(COST[p.kind]) for p in parts)):
        placements = dict(zip((p.role for p in parts), combo))
        for tiling in (False, True):
            peak = peak_bytes(tuple(parts), placements, work, tiling)
            kept = kept_shares(tuple(parts), placements, peak, available)
            cost = plan_cost(tuple(parts), placements, tiling, kept, work.tokens)
            fits = peak <= available and host_bytes(tuple(parts), placements) <= host
            tried.append((not fits, cost if fits else peak, peak if fits else cost, peak + sum(kept.values())))
    want = min(tried)
    try:
        plan = plan_memory("random", parts, available, work, host)
    except PlanDoesNotFit as e:
        assert want[0] and (e.smallest.peak, e.smallest.cost) == pytest.approx((want[1], want[2]))
    else:
        assert not want[0] and (plan.cost, plan.peak) == pytest.approx((want[1], want[3]))


def test_an_8_bit_encoder_counts_the_bytes_measured_for_one():
    """LTX-2's Gemma 3 encoder in float8 held 12.31 GiB of its 22.70 on the H200 (the pool's entry): an encoder
    keeps its embedding table in 16 bits. Counted at a denoiser's share, its plans were 0.3 GiB short of it."""
    from toolkit.memory_plan import host_bytes, resident_bytes

    gemma = Part("text_encoder", "encoder", gib(22.70))
    assert resident_bytes(gemma, "quantized") >= gib(12.31)
    assert host_bytes((gemma,), {"text_encoder": "quantized_visit"}) >= gib(12.31)


def test_an_audio_decode_counts_the_seconds_its_vae_decodes(tiny_cache):
    """Audio families were planned by pixels they do not have: Stable Audio peaked at 5.44 GiB on the H200 against
    a predicted 3.5, ACE-Step at 7.97 against 6.9, both in the decode. ACE-Step's decode grows with the duration
    asked; Stable Audio's is its whole window whatever the duration; each full-card prediction at the published
    sizes now covers what was measured (testing/bench/plan_table.py)."""
    from testing.bench.plan_table import predicted
    from toolkit.config_modules import GenerateImageConfig, ModelConfig
    from toolkit.models.registry import get_model_class

    def decode(arch, seconds):
        model = get_model_class(arch)("cuda", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
        return model.workload(GenerateImageConfig(prompt="p", duration_s=seconds)).decode

    ace_step = get_model_class("ace_step_15").working_set
    assert decode("ace_step_15", 60) - decode("ace_step_15", 30) == pytest.approx(30 * ace_step.per_second, abs=2)
    assert decode("stable_audio", 5) == decode("stable_audio", 40)
    assert (
        predicted("stable_audio", 141, 256)["peak_gib"] >= 5.44
        and predicted("ace_step_15", 141, 256)["peak_gib"] >= 7.97
    )


def test_a_decode_that_ran_out_widens_the_decode_s_reserve_alone():
    """HunyuanVideo 1.5 at 848x480x121 on 24 GiB (H200, 2026-12-03, docs/BENCHMARKS.md fourteenth run): its
    decode ran out in 256 px tiles, and the re-plan doubled every working set: sampling's 12.5 GiB became 25 and
    the request was refused, though the same decode in 192 px tiles had run on 16 GiB. Only the decode's reserve
    widens now; the re-plan decodes in smaller tiles and samples as before."""
    from extensions_built_in.inference_engine.request_memory import RequestMemory
    from testing.bench.plan_table import real_parts
    from toolkit.models.components.pool import ComponentPool, plannable_share

    model_class, cfg = get_model_class("hunyuan_video15"), ModelConfig(name_or_path="unused", arch="hunyuan_video15")
    gen = GenerateImageConfig(prompt="p", width=848, height=480, num_frames=121)
    planner = RequestMemory("cpu", "auto", ComponentPool(), 24 * GIB)
    planner.qtype = "float8"
    planner._sizes[("hunyuan_video15", "unused", cfg.extras_name_or_path, model_class("cpu", cfg).dtype)] = real_parts(
        "hunyuan_video15"
    )

    def plan():
        return planner._plan(model_class, cfg, gen, plannable_share(24 * GIB), 64 * GIB)

    first = plan()
    assert first.vae_tiling and first.vae_tile is None  # the family's own 256 px tile
    # What the H200 run saw: the decode asked for 3.78 GiB with the stage's peak at the plan's prediction.
    assert planner.widen_after_oom(
        "hunyuan_video15", first, {"stage": "decoding", "needed_bytes": first.peak_of("decoding") + gib(3.78)}
    )
    assert planner.reserve_scale == {"hunyuan_video15": {"decoder": 2.0}}
    second = plan()
    assert second.vae_tile is not None and second.vae_tile < 256
    assert second.work_of("sampling") == first.work_of("sampling")
    assert second.peak_of("decoding") <= plannable_share(24 * GIB)
