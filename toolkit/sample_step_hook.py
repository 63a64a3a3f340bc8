"""One per-step hook for every family: a wrap of ``pipe.scheduler.step``.

Every diffusers denoising loop calls ``self.scheduler.step`` exactly once per step, while
``callback_on_step_end`` is missing from several pipelines (Stable Audio, PixArt, HunyuanVideo 1.5), so the
scheduler is the one place that sees every family. Two traps shape this file:

* the wrapper keeps ``step``'s signature (``functools.wraps``): pipelines inspect it to decide whether to pass
  ``generator``/``eta``, and a hidden signature silently unseeds SDE samplers;
* it is installed as a bound method on the instance (``types.MethodType``): LTX-2 and SkyReels deep-copy the
  scheduler, and a deep copy rebinds bound methods to the copy instead of stepping the original twice.

Without a hook nothing is installed, so plain generation pays nothing; with one, nothing here reads a GPU value
back (no ``float(tensor)``), so the CPU keeps queueing kernels ahead of the GPU.
"""

from __future__ import annotations

import contextlib
import functools
import types
from dataclasses import dataclass
from typing import Any, Callable, Optional


class GenerationCancelled(Exception):
    """Raised from a hook to stop sampling; the pipeline unwinds and the holder stays usable."""


@dataclass
class SchedulerStep:
    """What one ``scheduler.step`` call saw. ``x0()`` is computed only when asked for."""

    index: int
    num_steps: int
    timestep_value: Any  # as the pipeline passed it (often a GPU tensor): read it only when needed
    sample: Any  # x_t after the step (what the scheduler returns)
    model_output: Any
    input_sample: Any
    sigma: Any  # tensor element or None
    pred_original_sample: Any = None
    alphas_cumprod: Any = None  # DDPM-family schedulers without sigmas (PNDM): x0 from the noise prediction
    prediction_type: Optional[str] = None

    @property
    def timestep(self) -> float:
        """A float, at the cost of a device sync when the pipeline keeps timesteps on the GPU."""
        try:
            return float(self.timestep_value)
        except (TypeError, ValueError):
            return 0.0

    def x0(self):
        """The denoised estimate: the scheduler's own where it gives one, else x_t - sigma * v (flow matching;
        for v-prediction samplers such as Stable Audio's this is only an approximation)."""
        if self.pred_original_sample is not None:
            return self.pred_original_sample
        if self.sigma is not None:
            return self.input_sample - self.sigma.to(self.model_output.device) * self.model_output
        if self.alphas_cumprod is not None and self.prediction_type in ("epsilon", "v_prediction"):
            return self._x0_from_alphas()
        return self.sample

    def _x0_from_alphas(self):
        """x0 on a variance-preserving schedule: (x_t - sqrt(1 - a) * eps) / sqrt(a), or sqrt(a) * x_t -
        sqrt(1 - a) * v. The timestep indexes ``alphas_cumprod`` on the sample's device (no read-back)."""
        import torch

        x, out, t = self.input_sample, self.model_output, self.timestep_value
        if out.shape != x.shape:  # a learned-variance output carries more channels than the sample
            return self.sample
        index = t.to(x.device).long() if torch.is_tensor(t) else int(t)
        a = self.alphas_cumprod.to(device=x.device, dtype=torch.float32)[index]
        x32, out32 = x.float(), out.float()
        if self.prediction_type == "epsilon":
            x0 = (x32 - (1 - a).sqrt() * out32) / a.sqrt()
        else:
            x0 = a.sqrt() * x32 - (1 - a).sqrt() * out32
        return x0.to(x.dtype)


def _sigma_of_step(scheduler):
    """Sigma at the step that just ran (``step_index`` has already advanced) for sigma-indexed schedulers.
    Kept as a tensor: converting to float here would sync the GPU on every step."""
    sigmas = getattr(scheduler, "sigmas", None)
    index = getattr(scheduler, "step_index", None)
    if sigmas is None or index is None or not 0 < index <= len(sigmas):
        return None
    return sigmas[index - 1]


# Schedulers whose tuple's second item is not the x0 estimate (TCD's: the re-noised sample; score SDE's: the mean).
SECOND_IS_NOT_X0 = {"TCDScheduler", "ScoreSdeVeScheduler"}


def _unpack_output(out, scheduler=None):
    """(x_t after the step, the scheduler's own x0 estimate or None). Pipelines call ``step(..., return_dict=False)``:
    DDIM, DDPM, Euler, Heun, LMS and KDPM2 return ``(prev_sample, pred_original_sample)`` (LCM: ``denoised``), so
    the x0 preview is the scheduler's estimate rather than x_t (a DDIM preview showed only noise)."""
    if isinstance(out, tuple):
        second = out[1] if len(out) > 1 and type(scheduler).__name__ not in SECOND_IS_NOT_X0 else None
        return out[0], second if hasattr(second, "shape") else None
    return out.prev_sample, getattr(out, "pred_original_sample", getattr(out, "denoised", None))


def _multistep_x0(scheduler, sample):
    """Multistep solvers in data-prediction form (DPM-Solver++, UniPC with ``predict_x0``: PixArt, Wan, Stable
    Audio) convert each model output to an x0 estimate and keep it in ``model_outputs``: the exact estimate, for
    free. The fallback ``x_t - sigma * model_output`` is only right for flow matching; for PixArt's epsilon
    prediction in a variance-preserving schedule it was further from the result than x_t itself."""
    config = getattr(scheduler, "config", None)
    outputs = getattr(scheduler, "model_outputs", None)
    # EDM-style solvers (Stable Audio's cosine DPM-Solver) always convert through ``precondition_outputs`` to x0.
    data_prediction = (
        getattr(config, "predict_x0", False) is True
        or str(getattr(config, "algorithm_type", "")).endswith("dpmsolver++")
        or hasattr(scheduler, "precondition_outputs")
    )
    if not data_prediction or not outputs or not hasattr(outputs[-1], "shape"):
        return None
    return outputs[-1] if outputs[-1].shape == sample.shape else None


def _skipped_steps(scheduler, first_timestep) -> int:
    """Steps of the schedule an image-to-image pipeline skips (those its strength leaves out). It says so through
    ``set_begin_index`` where the scheduler has one; DDIM and PNDM have none, and the pipeline only slices its own
    copy of the timesteps, so the first step's timestep is looked up there (one read-back, on that step only)."""
    if hasattr(scheduler, "set_begin_index"):
        return getattr(scheduler, "begin_index", None) or 0
    import torch

    timesteps = getattr(scheduler, "timesteps", None)
    if timesteps is None or not torch.is_tensor(timesteps):
        return 0
    found = (timesteps == torch.as_tensor(first_timestep, device=timesteps.device)).nonzero()
    return int(found[0, 0]) if len(found) else 0


@contextlib.contextmanager
def step_hook(pipe, on_step: Optional[Callable[[SchedulerStep], None]], only_primary: bool = True):
    """Call ``on_step`` after each step of ``pipe.scheduler`` inside the ``with`` block.

    ``only_primary`` ignores deep copies of the scheduler (LTX-2's audio scheduler), so one call is one step.
    """
    if on_step is None:
        yield None
        return
    sched = pipe.scheduler
    cls_step = type(sched).step
    state = {"i": 0}

    @functools.wraps(cls_step)
    def hooked(self, model_output, timestep, sample, *args, **kwargs):
        out = cls_step(self, model_output, timestep, sample, *args, **kwargs)
        if only_primary and self is not sched:
            return out
        prev, pred_x0 = _unpack_output(out, self)
        if pred_x0 is None:
            pred_x0 = _multistep_x0(self, prev)
        timesteps = getattr(self, "timesteps", None)
        if "skipped" not in state:
            state["skipped"] = _skipped_steps(self, timestep)
        info = SchedulerStep(
            index=state["i"],
            num_steps=len(timesteps) - state["skipped"] if timesteps is not None else 0,
            timestep_value=timestep,
            sample=prev,
            model_output=model_output,
            input_sample=sample,
            sigma=_sigma_of_step(self),
            pred_original_sample=pred_x0,
            alphas_cumprod=getattr(self, "alphas_cumprod", None),
            prediction_type=getattr(getattr(self, "config", None), "prediction_type", None),
        )
        state["i"] += 1
        on_step(info)
        return out

    sched.step = types.MethodType(hooked, sched)
    try:
        yield state
    finally:
        sched.__dict__.pop("step", None)
