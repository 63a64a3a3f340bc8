"""Opt-in fast tiers per request (``sample.speed``), each trading a measured amount of fidelity for time.

- ``lossless`` (the default): the model as it is; ``engine.compile`` changes how fast, not what comes out.
- ``fp8``: the denoiser's weights *and* activations in float8 (torchao's per-row dynamic float8, ``float8dq``): the
  matmuls run on float8 tensor cores. The memory plan keeps choosing everything else; without a plan (``engine.memory:
  off`` or the user's own memory options) it is the model option ``quantize`` with ``qtype: float8dq`` for the
  denoiser only. The quantized denoiser is a component of its own in the pool, so switching tiers is a pool swap,
  not a re-quantization per request.
- ``cache``: a per-step cache on the denoiser that reuses earlier steps' block outputs where they change little:
  diffusers' MagCache for Flux.1 (its calibrated magnitude ratios decide the skips, so the speed-up does not
  depend on the prompt), FirstBlockCache (diffusers' default threshold) for the families whose arch file says
  ``step_cache = "first_block"``: the Wan ones. Tried on every DiT family's tiny checkpoint, FirstBlockCache
  raised inside diffusers for Qwen-Image, CogView4, LTX, LTX-2, HunyuanVideo 1.5, Chroma and FLUX.2 (blocks it
  has no registration or cache context for), and ran without skipping a step on Z-Image, SD3, AuraFlow,
  PixArt-Σ, HiDream and HunyuanVideo: none of those is offered a cache until one is measured to help.
  Hooks go on for the request and come off after it.
- ``fast``: both.

Measured with Flux.1-dev at 1024², 28 steps, end to end, compiled (docs/BENCHMARKS.md "Fast tiers"): ``lossless``
4.15 s, ``cache`` 2.35 s, ``fp8`` 3.32 s, ``fast`` 1.82 s; quality numbers there.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Optional

SPEEDS = ("lossless", "fp8", "cache", "fast")
STEP_CACHES = ("magcache_flux", "first_block")


def wants_fp8(speed: str) -> bool:
    return speed in ("fp8", "fast")


def wants_cache(speed: str) -> bool:
    return speed in ("cache", "fast")


def fp8_problem(device: str) -> Optional[str]:
    """Why float8 weights and activations cannot run on ``device``, or None. Asked once, at engine start (it
    reads the GPU's capability through torch, which the server thread does not touch)."""
    from toolkit.models.components.loading import best_qtype, check_qtype

    if not str(device).startswith("cuda"):
        return f"float8 needs a CUDA GPU with float8 tensor cores; this engine runs on {device}"
    problem = check_qtype("float8dq", device)
    if problem is None and best_qtype(device) != "float8dq":
        problem = "float8dq needs float8 tensor cores (compute capability 8.9+: Ada, Hopper or later)"
    return problem


def speed_problem(speed: str, model_class, no_fp8: Optional[str]) -> Optional[str]:
    """Why ``speed`` cannot run for this family, or None (``no_fp8``: ``fp8_problem`` of the engine's device):
    a request error naming ``sample.speed``."""
    if wants_fp8(speed):
        if no_fp8:
            return f"speed {speed!r}: {no_fp8}"
        if not model_class.float8_activations:
            return (
                f"speed {speed!r} is not offered for {model_class.arch}: float8 activations slowed or broke its "
                "step (float8_activations in its arch file); engine.compile is its faster lossless setting"
            )
    if wants_cache(speed) and model_class.step_cache is None:
        return f"speed {speed!r} is not available for {model_class.arch}: it has no step cache (a DiT family's feature)"
    return None


def speeds_of(model_class) -> list[str]:
    """The tiers a family offers (a GPU without float8 tensor cores refuses ``fp8`` and ``fast`` on top)."""
    fp8, cache = model_class.float8_activations, model_class.step_cache is not None
    return ["lossless"] + (["fp8"] if fp8 else []) + (["cache"] if cache else []) + (["fast"] if fp8 and cache else [])


def fp8_options(model_config):
    """The ``fp8`` tier as the user's own memory options, where no plan decides: the denoiser quantized to
    ``float8dq``, text encoders as the config has them."""
    return replace(model_config, quantize=True, qtype="float8dq")


@contextlib.contextmanager
def step_cache(model, gen):
    """The request's step cache on each of the family's denoisers, removed afterwards (even on a cancel), so the
    next request on the same pooled denoiser runs uncached."""
    if not wants_cache(gen.speed) or model.step_cache is None:
        yield
        return
    denoisers = [
        model.parts[role]
        for role, comp in model.components.items()
        if comp.source == "main" and hasattr(model.parts.get(role), "enable_cache")
    ]
    for module in denoisers:
        module.enable_cache(_config(model.step_cache, gen.num_inference_steps))
    try:
        yield
    finally:
        for module in denoisers:
            module.disable_cache()


def _config(kind: str, steps: int):
    if kind == "magcache_flux":
        from diffusers.hooks import MagCacheConfig
        from diffusers.hooks.mag_cache import FLUX_MAG_RATIOS

        return MagCacheConfig(mag_ratios=FLUX_MAG_RATIOS, num_inference_steps=steps)
    from diffusers.hooks import FirstBlockCacheConfig

    return FirstBlockCacheConfig()
