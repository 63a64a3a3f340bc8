"""``sample.speed``: the opt-in fast tiers (toolkit/models/speed.py). What they buy and cost is the GPU bench's
question (testing/bench/compile_bench.py --stages fast); here: refusals that name the field, the step cache's
effect and its removal after the request, and the fp8 tier reaching the plan or the model options."""

import numpy as np
import pytest
import torch
from PIL import Image

from extensions_built_in.inference_engine.request_memory import RequestMemory
from testing.stream_contract import body_for
from testing.test_memory_plan import FLUX, PLENTY_OF_RAM, flux_work, gib
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.memory_plan import QUANTIZED, plan_memory
from toolkit.models.components.pool import ComponentPool


def refused(h, body) -> dict:
    out = h.client.generate_wait(body)
    assert out["http_status"] == 422, out
    return out


@pytest.mark.parametrize(
    "arch,speed,words",
    [
        ("flux", "turbo", "lossless"),  # not a tier: the schema's own 422
        ("flux", "fp8", "CUDA"),  # float8 tensor cores only
        ("flux", "fast", "CUDA"),
        ("sdxl", "cache", "no step cache"),  # a UNet family has none
    ],
)
def test_a_tier_that_cannot_run_is_a_422_naming_sample_speed(harness, arch, speed, words):
    out = refused(harness, body_for(arch, steps=2, speed=speed))
    assert "speed" in str(out["detail"]) and words in str(out["detail"])
    assert harness.client.generate_wait(body_for(arch, steps=2))["http_status"] == 200  # the next one works


def run(h, body) -> tuple[np.ndarray, int, dict]:
    """The image, how many attention calls made it, and the start frame's sample config."""
    calls = []
    original = torch.nn.functional.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    torch.nn.functional.scaled_dot_product_attention = counting
    try:
        frames = [f.header for f in h.client.generate(body)]
    finally:
        torch.nn.functional.scaled_dot_product_attention = original
    result = next((f for f in frames if f.get("type") == "result"), None)
    assert result is not None, [(f.get("code"), f.get("message")) for f in frames if f.get("type") == "error"]
    start = next(f for f in frames if f.get("type") == "start")
    return np.asarray(Image.open(result["path"]), dtype=np.int16), len(calls), start["config"]["sample"]


@pytest.mark.parametrize("arch,steps", [("flux", 20), ("wan21", 12)])  # MagCache; FirstBlockCache
def test_the_cache_tier_skips_steps_and_comes_off_after_the_request(harness, arch, steps):
    """Fewer attention calls and a close but different image (a video's first frame); the next lossless request
    on the same pooled denoiser is the first lossless one byte for byte."""
    run(
        harness, body_for(arch, steps=steps, seed=5)
    )  # the prompt cache now holds the prompt: only denoiser calls count
    lossless, lossless_calls, sample = run(harness, body_for(arch, steps=steps, seed=5))
    cached, cached_calls, cached_sample = run(harness, body_for(arch, steps=steps, seed=5, speed="cache"))
    again, again_calls, _ = run(harness, body_for(arch, steps=steps, seed=5))
    assert sample["speed"] == "lossless" and cached_sample["speed"] == "cache"
    assert cached_calls < lossless_calls  # steps whose blocks were skipped
    assert not np.array_equal(cached, lossless)
    assert np.abs(cached - lossless).mean() < 8  # an approximation of the same image, not another image
    assert again_calls == lossless_calls and np.array_equal(again, lossless)


def test_the_fp8_tier_makes_the_plan_quantize_the_denoiser_even_when_bf16_fits():
    roomy = plan_memory("flux", FLUX, gib(80), flux_work(), PLENTY_OF_RAM, qtype="float8dq")
    assert roomy.placements["transformer"] == "gpu"
    fp8 = plan_memory("flux", FLUX, gib(80), flux_work(), PLENTY_OF_RAM, qtype="float8dq", quantize_denoiser=True)
    assert fp8.placements["transformer"] in QUANTIZED and fp8.qtype == "float8dq"
    assert fp8.placements["text_encoder_2"] == "gpu"  # the rest is planned as before


def test_without_a_plan_the_fp8_tier_is_the_quantize_option_on_the_denoiser_only():
    planner = RequestMemory("cuda", "off", ComponentPool(), None)  # engine.memory: off (nothing touches a GPU)
    cfg = ModelConfig(name_or_path="x", arch="flux")
    fp8 = planner.config_for(cfg, GenerateImageConfig(prompt="p", speed="fp8"))
    assert (fp8.quantize, fp8.qtype, fp8.quantize_te) == (True, "float8dq", False)
    assert planner.config_for(cfg, GenerateImageConfig(prompt="p", speed="cache")) is cfg


def test_models_lists_the_tiers_each_family_offers_here(harness):
    """The Generate page offers only these: the family's tiers, less the fp8 ones on an engine without float8."""
    from toolkit.models.registry import describe_all

    families = {m["arch"]: m["speeds"] for m in describe_all()}
    assert families["flux"] == ["lossless", "fp8", "cache", "fast"]
    assert families["sdxl"] == ["lossless"]  # a UNet: no step cache; float8 activations measured broken
    speeds = {m["arch"]: m["speeds"] for m in harness.client.http.get("/models").json()}
    assert speeds["flux"] == ["lossless", "cache"] and speeds["sdxl"] == ["lossless"]  # this CPU engine
    assert speeds["wan21"] == ["lossless", "cache"]  # float8 activations off for video; FirstBlockCache
    assert families["zimage"] == ["lossless"] and speeds["zimage"] == ["lossless"]  # no step cache, float8 weights only
    assert all(s[0] == "lossless" for s in speeds.values())
