"""A family's checkpoint through its bare diffusers pipeline, in this process: the reference the engine's step
time is compared with (testing/bench/gpu_suite.py, testing/bench/family_sweep.py)."""

from __future__ import annotations

import contextlib
import time
import types
from typing import Optional

from toolkit.step_clock import StepClock


class BarePipeline:
    """One family's checkpoint through the bare diffusers pipeline in this process: no hook, no server, the
    same CUDA-event step clock the engine uses, marked at each ``scheduler.step`` (every pipeline steps its
    scheduler once per step; not every one has ``callback_on_step_end``: HunyuanVideo 1.5's has none, and
    PixArt-Σ's old-style callback left the clock without marks on the H200)."""

    def __init__(self, arch, folder, device, dtype, settings, out, attention: Optional[str] = None):
        from toolkit.config_modules import ModelConfig
        from toolkit.models.registry import get_model_class

        self.arch, self.device, self.settings, self.out = arch, device, settings, out
        self.attention = attention  # the SDPA kernel tried first, as ``engine.attention`` makes the engine do
        self.plans = True  # a compiled Flux.1 plans its modulations per request (off: per step, to compare)
        self.model = get_model_class(arch)(device, ModelConfig(name_or_path=folder, arch=arch, dtype=dtype))
        t0 = time.monotonic()
        self.model.load_model()
        sync()
        self.load_s = round(time.monotonic() - t0, 3)

    @classmethod
    def compiled(cls, mode: str, *args) -> Optional["BarePipeline"]:
        """With ``--compile`` on, a second bare pipeline compiled the engine's way: the engine is compared with
        bare diffusers eager and with bare diffusers under the same compile, in the same run."""
        if mode == "off":
            return None
        bare = cls(*args)
        bare.compiled = bare.compile(mode)
        return bare

    def compile(self, mode: str) -> dict:
        """The denoisers compiled as the engine compiles them (``engine.compile``), for the issue's second
        reference: bare diffusers with the same compile. Returns role -> how."""
        from toolkit.models.compile import compile_denoiser

        done = {}
        for role, comp in self.model.components.items():
            module = self.model.pipeline.components.get(role) if comp.source == "main" else None
            how = module is not None and compile_denoiser(module, mode, "gpu")
            if how:
                done[role] = how
        return done

    def call(self, steps: int, image: bool = False) -> tuple:
        """(wall seconds of the whole call, median step from CUDA events), and the image (a video's frames) as an
        array if asked."""
        import torch

        from toolkit.config_modules import GenerateImageConfig
        from toolkit.models.attention import attention_kernels
        from toolkit.models.modulation import follow_schedule

        gen = GenerateImageConfig(
            prompt="a red fox in the snow",
            num_inference_steps=steps,
            seed=1,
            output_folder=str(self.out),
            **self.settings,
        )
        self.model.prepare_gen_config(gen)
        clock = StepClock(self.device)
        scheduler = self.model.pipeline.scheduler
        cls_step = type(scheduler).step

        def timed_step(self, *args, **kwargs):
            if self is scheduler:  # not LTX-2's audio scheduler, a deep copy
                clock.mark()
            return cls_step(self, *args, **kwargs)

        # Bound, so a deep copy of the scheduler gets a step bound to itself: a plain closure kept calling this
        # scheduler's step from the copy (LTX-2 on the H200: "index 3 is out of bounds" after two steps).
        scheduler.step = types.MethodType(timed_step, scheduler)
        sync()
        t0 = time.monotonic()
        try:
            # follow_schedule: a compiled resident Flux.1 plans its modulations from the request's schedule
            # (toolkit/models/modulation.py), as the engine's requests do: the same compile
            plan = follow_schedule(self.model.pipeline) if self.plans else contextlib.nullcontext()
            with torch.inference_mode(), attention_kernels(self.attention), plan:
                out = self.model.pipeline(
                    **self.model.pipeline_kwargs(gen), generator=torch.Generator("cpu").manual_seed(1), output_type="np"
                )
        finally:
            del scheduler.step  # the class's own again
        sync()
        timed = (time.monotonic() - t0, clock.median())
        return (*timed, _first_output(out)) if image else timed


def _first_output(out):
    """The call's first image, or its first video's frames (F, H, W, 3)."""
    return out.images[0] if hasattr(out, "images") else out.frames[0]


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def free() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
