"""Samplers and sigma schedules by A1111's names, as diffusers scheduler swaps on the resident pipeline.

A sampler is a scheduler class (and a few config keys) built with ``from_config`` from the checkpoint's own
scheduler, so its training schedule (betas, prediction type, flow shift) carries over and nothing is reloaded:
a scheduler holds no weights. Which samplers fit depends on how the family was trained:

* ``discrete``: epsilon or v-prediction over a 1000-step noise table (SD 1.x/2.x, SDXL and its distillations,
  PixArt). The k-diffusion set A1111 offers, mapped as diffusers' scheduler docs map them.
* ``flow``: rectified flow (Flux, SD3, Qwen-Image, Wan, ...). Euler and Heun in their flow forms, and the
  multistep solvers (DPM++ 2M, UniPC) with ``use_flow_sigmas``.
* ``own``: a scheduler no other class stands in for (Stable Audio's EDM cosine solver, MiniMax H3's, modular
  pipelines whose blocks hold their scheduler): only the checkpoint's own.

A schedule type (A1111's "Schedule type") changes where the steps fall, not the solver: Karras, exponential and
beta sigmas (the ``use_*_sigmas`` flags) and ComfyUI's "simple", which takes evenly spaced steps from the end of
the noise table (``timestep_spacing="trailing"``). Each sampler lists the schedule types its class supports;
flow multistep solvers take none, since their ``use_karras_sigmas`` reads the discrete noise table instead of the
flow sigmas.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import types
from dataclasses import dataclass
from typing import Optional

DEFAULT_SCHEDULE = "default"
# Schedule type -> the config keys that select it (the others of the family set back to False).
SCHEDULES = {
    "default": {},
    "karras": {"use_karras_sigmas": True},
    "exponential": {"use_exponential_sigmas": True},
    "beta": {"use_beta_sigmas": True},
    "simple": {"timestep_spacing": "trailing"},
}
SIGMA_FLAGS = ("use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas")
# What A1111 writes as "Schedule type" (its "Automatic" is the checkpoint's own), and other names users type.
SCHEDULE_LABELS = {"default": "Automatic", "karras": "Karras", "exponential": "Exponential", "beta": "Beta"}
SCHEDULE_LABELS["simple"] = "Simple"
SCHEDULE_ALIASES = {"automatic": "default", "normal": "default", "sgm_uniform": "simple", "sgm uniform": "simple"}

ALL = ("default", "karras", "exponential", "beta", "simple")
SPACING = ("default", "simple")


class SamplerError(ValueError):
    """A sampler or schedule type the family cannot run; the message lists what it can."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Sampler:
    name: str  # A1111's
    cls: Optional[str]  # diffusers class; None: the checkpoint's own scheduler
    config: tuple = ()  # (key, value) pairs set over the checkpoint's config
    schedules: tuple = ("default",)
    comfy: str = ""  # ComfyUI's name for it, accepted too

    def describe(self) -> dict:
        return {"name": self.name, "schedules": list(self.schedules)}


DISCRETE = (
    Sampler("Euler", "EulerDiscreteScheduler", schedules=ALL, comfy="euler"),
    Sampler("Euler a", "EulerAncestralDiscreteScheduler", schedules=SPACING, comfy="euler_ancestral"),
    Sampler("DPM++ 2M", "DPMSolverMultistepScheduler", (("algorithm_type", "dpmsolver++"),), ALL, "dpmpp_2m"),
    Sampler(
        "DPM++ 2M SDE", "DPMSolverMultistepScheduler", (("algorithm_type", "sde-dpmsolver++"),), ALL, "dpmpp_2m_sde"
    ),
    Sampler("DPM++ SDE", "DPMSolverSDEScheduler", schedules=ALL, comfy="dpmpp_sde"),
    Sampler("UniPC", "UniPCMultistepScheduler", schedules=ALL, comfy="uni_pc"),
    Sampler("DDIM", "DDIMScheduler", schedules=SPACING, comfy="ddim"),
    Sampler("Heun", "HeunDiscreteScheduler", schedules=ALL, comfy="heun"),
    Sampler("LMS", "LMSDiscreteScheduler", schedules=ALL, comfy="lms"),
    # For LCM-distilled checkpoints and LCM LoRAs (A1111 lists it for every model; on others it is a blur).
    Sampler("LCM", "LCMScheduler", schedules=SPACING, comfy="lcm"),
    Sampler("PLMS", "PNDMScheduler", (("skip_prk_steps", True),), SPACING),  # what SD 1.x ships
)
FLOW_SOLVER = (("use_flow_sigmas", True), ("prediction_type", "flow_prediction"))
FLOW = (
    Sampler("Euler", "FlowMatchEulerDiscreteScheduler", schedules=ALL[:4], comfy="euler"),
    Sampler("Heun", "FlowMatchHeunDiscreteScheduler", comfy="heun"),
    Sampler("DPM++ 2M", "DPMSolverMultistepScheduler", FLOW_SOLVER + (("algorithm_type", "dpmsolver++"),)),
    Sampler("UniPC", "UniPCMultistepScheduler", FLOW_SOLVER, comfy="uni_pc"),
)
KINDS = {"discrete": DISCRETE, "flow": FLOW}
OWN_NAMES = {s.cls: s.name for s in DISCRETE + FLOW if s.name != "DPM++ 2M SDE"}


def samplers_for(model_class) -> list[Sampler]:
    """The family's samplers, the one its reference checkpoint ships first."""
    kind, default = model_class.sampler_kind, model_class.default_sampler
    if kind == "own":
        return [Sampler(default, None)]
    listed = [s for s in KINDS[kind] if model_class.sampler_names is None or s.name in model_class.sampler_names]
    own = next((s for s in listed if s.name == default), None)
    if own is None:
        raise ValueError(f"{model_class.arch}: default_sampler {default!r} is not a {kind} sampler")
    return [own] + [s for s in listed if s is not own]


def describe(model_class) -> dict:
    """What ``GET /models`` lists: the samplers (the first is the default) and each one's schedule types."""
    return {
        "samplers": [s.describe() for s in samplers_for(model_class)],
        "default_sampler": model_class.default_sampler,
    }


def resolve(model_class, sampler: Optional[str], schedule: Optional[str]) -> tuple[Optional[str], str]:
    """(sampler name as listed, or None for the checkpoint's own; schedule type). ``SamplerError`` names the field
    at fault and lists what the family takes."""
    listed = samplers_for(model_class)
    chosen = _find(listed, sampler) if sampler else None
    if sampler and chosen is None:
        names = ", ".join(s.name for s in listed)
        raise SamplerError("sampler", f"{model_class.arch} samples with {names}; not {sampler!r}")
    key = (schedule or DEFAULT_SCHEDULE).strip().lower()
    key = SCHEDULE_ALIASES.get(key, key)
    takes = (chosen or listed[0]).schedules
    if key not in takes:
        name = (chosen or listed[0]).name
        raise SamplerError(
            "scheduler", f"{name} on {model_class.arch} takes schedule {', '.join(takes)}; not {schedule!r}"
        )
    return (chosen.name if chosen else None), key


def _find(listed: list, wanted: str) -> Optional[Sampler]:
    folded = wanted.strip().lower()
    return next((s for s in listed if folded in (s.name.lower(), s.comfy)), None)


def name_of(scheduler, model_class) -> str:
    """The A1111 name of a scheduler as loaded (the checkpoint's own: SD 1.5 ships PNDM, which A1111 calls PLMS)."""
    if model_class.sampler_kind == "own":
        return model_class.default_sampler
    cls = type(scheduler).__name__
    if cls == "DPMSolverMultistepScheduler" and "sde" in str(scheduler.config.get("algorithm_type", "")):
        return "DPM++ 2M SDE"
    return OWN_NAMES.get(cls, cls.removesuffix("Scheduler"))


def build(model_class, own, sampler: Optional[str], schedule: str):
    """The scheduler for ``sampler`` with ``schedule``, made from ``own`` (the checkpoint's), or None where the
    request runs ``own`` as it is: no sampler asked for on its own schedule, or a family with only its own."""
    if sampler is None and schedule == DEFAULT_SCHEDULE:
        return None
    listed = samplers_for(model_class)
    chosen = next(s for s in listed if s.name == sampler) if sampler else listed[0]
    if chosen.cls is None:
        return None
    import diffusers

    cls = getattr(diffusers, chosen.cls)
    config = dict(own.config)
    if "shift" in config and "flow_shift" not in config:  # FlowMatch calls the flow solvers' ``flow_shift`` so
        config["flow_shift"] = config["shift"]
    elif "flow_shift" in config and "shift" not in config:
        config["shift"] = config["flow_shift"]
    config.update(chosen.config)
    if schedule != DEFAULT_SCHEDULE:
        config.update({flag: False for flag in SIGMA_FLAGS})
        config.update(SCHEDULES[schedule])
    accepted = set(inspect.signature(cls.__init__).parameters)
    scheduler = cls.from_config({k: v for k, v in config.items() if k in accepted})
    # Keys the new class does not take stay readable: pipelines read ``scheduler.config.get("max_shift")`` etc.
    scheduler.register_to_config(**{k: v for k, v in own.config.items() if k not in scheduler.config})
    return taking_pipeline_schedule(scheduler)


def taking_pipeline_schedule(scheduler):
    """Pipelines call ``set_timesteps`` the way their own scheduler takes it: flow pipelines hand over ``sigmas``
    (a list, an array or a tensor) and the resolution's ``mu`` even where the shift is static, CogView4 adds
    ``timesteps``, and diffusers' ``retrieve_timesteps`` refuses a scheduler whose signature lacks what it is
    given. The call reaches the class with what it takes: sigmas as an array (or, where the class makes its own
    flow schedule, their count), ``mu`` only where the shift is dynamic (DPM-Solver asserts otherwise)."""
    own = type(scheduler).set_timesteps
    takes = set(inspect.signature(own).parameters)
    dynamic = bool(scheduler.config.get("use_dynamic_shifting"))

    @functools.wraps(own)
    def set_timesteps(self, num_inference_steps=None, device=None, sigmas=None, mu=None, timesteps=None, **kw):
        if sigmas is not None:
            import numpy as np

            sigmas = np.asarray(sigmas.cpu() if hasattr(sigmas, "cpu") else sigmas, dtype=np.float64)
            if "sigmas" not in takes:
                num_inference_steps, sigmas = num_inference_steps or len(sigmas), None
        if timesteps is not None and "timesteps" not in takes:
            num_inference_steps, timesteps = num_inference_steps or len(timesteps), None
        passed = {"sigmas": sigmas, "mu": mu if dynamic else None, "timesteps": timesteps, **kw}
        passed = {k: v for k, v in passed.items() if k in takes and v is not None}
        if "sigmas" in passed or "timesteps" in passed:
            num_inference_steps = None  # diffusers' schedulers take one or the other
        return own(self, num_inference_steps, device, **passed)

    set_timesteps.__signature__ = inspect.signature(_pipeline_facing)
    scheduler.set_timesteps = types.MethodType(set_timesteps, scheduler)
    return scheduler


def _pipeline_facing(num_inference_steps=None, device=None, sigmas=None, mu=None, timesteps=None):
    """The signature ``retrieve_timesteps`` inspects on an adapted scheduler."""


@contextlib.contextmanager
def sampling_with(pipeline, scheduler):
    """``scheduler`` on the pipeline for one request; the checkpoint's own back after it, even on a cancel."""
    if scheduler is None:
        yield
        return
    own = pipeline.scheduler
    pipeline.scheduler = scheduler
    try:
        yield
    finally:
        pipeline.scheduler = own


def parameters_pairs(sample: dict) -> list[tuple]:
    """A1111's ``Sampler`` and ``Schedule type`` as it writes them (the type only where it is not Automatic)."""
    schedule = sample.get("scheduler") or DEFAULT_SCHEDULE
    return [
        ("Sampler", sample.get("sampler")),
        ("Schedule type", SCHEDULE_LABELS.get(schedule) if schedule != DEFAULT_SCHEDULE else None),
    ]
