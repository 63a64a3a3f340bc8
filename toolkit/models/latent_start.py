"""Image-to-image on a family's own text-to-image pipeline, where diffusers has no image-to-image class for it.

The pipeline runs as for text-to-image with two things changed for the one call:

* its schedule is shorter: after ``set_timesteps`` the steps the strength skips are cut off the front of the
  timesteps and the sigmas, so the scheduler runs the rest as a schedule of its own;
* its starting latents are the input's: the noise ``prepare_latents`` returns is mixed, in place, with the encoded
  input at the first kept step's noise level, ``(1 - sigma) x0 + sigma noise`` for flow matching, the scheduler's
  ``add_noise`` otherwise. The pipeline keeps the very tensor it was handed, so nothing of its loop changes.
  Whichever of the two calls comes second (pipelines prepare latents before or after the schedule) does the mix.

The input reaches the pipeline's latent layout through the family's own ``unpack_latents`` (what the previews use)
run backwards: probed with zeros, ones and an index ramp it shows itself to be a permutation (2x2 packing) with,
for the families that normalise with a batch norm, a per-element scale and offset, which are inverted.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Callable

import numpy as np


class CannotStart(ValueError):
    """The family's latents cannot be reached from an image this way (its unpacking is not a permutation)."""


def encoded(vae, image, raw: bool):
    """The input in the VAE's latent space (its distribution's mode), normalised as the pipeline's denoiser sees
    it unless ``raw`` (families whose ``unpack_latents`` undoes their normalisation): ``(z - mean) / std`` for
    VAEs that publish per-channel statistics, ``(z - shift) * scale`` for the others."""
    import torch

    from toolkit.models.from_image import vae_input

    pixels, video_vae = vae_input(vae, image)
    z = vae.encode(pixels).latent_dist.mode()
    z = (z[:, :, 0] if video_vae else z).float()
    if raw:
        return z
    config = vae.config
    if config.get("latents_mean") is not None and config.get("latents_std") is not None:
        mean = torch.tensor(config.latents_mean, device=z.device).view(1, -1, 1, 1)
        std = torch.tensor(config.latents_std, device=z.device).view(1, -1, 1, 1)
        return (z - mean) / std
    return (z - (config.get("shift_factor") or 0.0)) * (config.get("scaling_factor") or 1.0)


def pixels(image):
    """A pixel-space family's start: the image itself as its pipeline samples it, -1..1, B x 3 x H x W."""
    import torch

    return torch.from_numpy(np.asarray(image, dtype=np.float32) / 127.5 - 1.0).permute(2, 0, 1)[None]


def packing(unpack: Callable, packed_like) -> tuple:
    """(pack, raw, place): ``pack`` maps a latent in ``unpack``'s layout to the pipeline's; ``raw`` whether
    ``unpack`` scales and offsets too (then its layout is the VAE's own, not normalised); ``place`` moves values
    (a mask) to the pipeline's layout without scaling them."""
    import torch

    shape, numel = packed_like.shape, packed_like.numel()
    probe = torch.zeros(shape, dtype=torch.float32, device=packed_like.device)
    offset = unpack(probe).float()
    scale = unpack(probe + 1).float() - offset
    ramp = torch.arange(numel, dtype=torch.float64, device=packed_like.device).reshape(shape).float()
    index = ((unpack(ramp).float() - offset) / scale).round().long()
    if index.numel() != numel or not torch.equal(
        torch.sort(index.flatten()).values, torch.arange(numel, device=index.device)
    ):
        raise CannotStart("the family's latent unpacking is not a permutation")
    raw = not (torch.allclose(offset, torch.zeros_like(offset)) and torch.allclose(scale, torch.ones_like(scale)))

    def place(values):
        flat = torch.empty(numel, dtype=torch.float32, device=values.device)
        flat[index.flatten().to(values.device)] = values.float().flatten()
        return flat.reshape(shape)

    def pack(unpacked):
        return place((unpacked.float() - offset.to(unpacked.device)) / scale.to(unpacked.device))

    return pack, raw, place


def steps_skipped(total: int, strength: float) -> int:
    """Steps the strength leaves out, as diffusers' image-to-image pipelines count them."""
    return total - min(int(total * strength), total)


@contextlib.contextmanager
def started_from(pipeline, unpack: Callable, start: Callable, strength: float, flow: bool, mask=None):
    """For one call of ``pipeline``: the schedule cut at ``strength`` and the prepared noise mixed with the
    input; ``start(raw)`` encodes the input (see ``encoded``), in the layout ``unpack`` produces. With ``mask``
    (``mask(shape)``: 1 where the request repaints, in that layout) it inpaints: after every step the kept region
    is put back as the input noised to the step's level, so only the masked region is the sampler's."""
    scheduler = pipeline.scheduler
    own_prepare, own_set = pipeline.prepare_latents, scheduler.set_timesteps
    state: dict = {}

    def mix() -> None:
        if "noise" not in state or "skipped" not in state or state.get("mixed"):
            return
        noise = state["noise"]
        pack, raw, place = packing(unpack, noise)
        unpacked = start(raw)
        x0 = pack(unpacked).to(noise.device, noise.dtype)
        if mask is not None:
            keep = 1 - place(mask(tuple(unpacked.shape)).to(unpacked.device).expand_as(unpacked))
            blend_after_steps(scheduler, x0, noise.clone(), keep.to(noise.device, noise.dtype), flow, state)
        if flow:
            sigma = float(scheduler.sigmas[0])
            noise.mul_(sigma).add_(x0, alpha=1.0 - sigma)
        else:
            first = scheduler.timesteps[:1]
            noise.copy_(scheduler.add_noise(x0, noise / scheduler.init_noise_sigma, first))
        state["mixed"] = True

    def prepare_latents(*args, **kwargs):
        out = own_prepare(*args, **kwargs)
        state["noise"] = out[0] if isinstance(out, tuple) else out
        mix()
        return out

    @functools.wraps(own_set)
    def set_timesteps(*args, **kwargs):
        own_set(*args, **kwargs)
        order = getattr(scheduler, "order", 1)
        k = steps_skipped(len(scheduler.timesteps) // order, strength) * order
        state["skipped"] = k
        # A shorter schedule, not a later start in a full one: timesteps and sigmas both begin at the first kept
        # step, so every step indexes them from 0 (and progress counts the steps that run).
        scheduler.timesteps = scheduler.timesteps[k:]
        if getattr(scheduler, "sigmas", None) is not None and len(scheduler.sigmas) > k:
            scheduler.sigmas = scheduler.sigmas[k:]
        mix()

    set_timesteps.__signature__ = inspect.signature(own_set)
    saved = [
        (obj, name, obj.__dict__.get(name))
        for obj, name in ((pipeline, "prepare_latents"), (scheduler, "set_timesteps"), (scheduler, "step"))
    ]
    pipeline.prepare_latents, scheduler.set_timesteps = prepare_latents, set_timesteps
    try:
        yield state
    finally:
        for obj, name, previous in saved:  # an instance's own (a sampler's adapter, the step hook) back
            if previous is not None:
                setattr(obj, name, previous)
            else:
                obj.__dict__.pop(name, None)


def blend_after_steps(scheduler, x0, noise, keep, flow: bool, state: dict) -> None:
    """Wrap the scheduler's ``step`` (the step hook's, when one is installed) so each step's result takes the
    kept region from the input noised to the level the step reached: ``(1 - sigma) x0 + sigma noise`` for flow
    matching, ``add_noise`` at the next timestep otherwise, the input itself after the last step."""
    own_step = scheduler.step

    @functools.wraps(own_step)
    def step(model_output, timestep, sample, *args, **kwargs):
        out = own_step(model_output, timestep, sample, *args, **kwargs)
        latents = out[0] if isinstance(out, tuple) else out.prev_sample
        state["blended"] = done = state.get("blended", 0) + 1
        if flow:
            index = min(int(scheduler.step_index), len(scheduler.sigmas) - 1)
            sigma = float(scheduler.sigmas[index])
            known = x0 * (1 - sigma) + noise * sigma
        elif done < len(scheduler.timesteps):
            known = scheduler.add_noise(x0, noise / scheduler.init_noise_sigma, scheduler.timesteps[done : done + 1])
        else:
            known = x0
        latents.copy_(keep * known.to(latents.dtype) + (1 - keep) * latents)
        return out

    scheduler.step = step


def latent_mask(mask, shape: tuple):
    """The pixel mask (PIL, white repaints) at the latent's height and width, 0..1, shaped to broadcast over its
    channels: what ``started_from`` blends with. Area-averaged, so a latent cell the mask half covers half blends."""
    import torch
    from PIL import Image

    height, width = shape[-2], shape[-1]
    small = np.asarray(mask.convert("L").resize((width, height), Image.BOX), dtype=np.float32) / 255.0
    return torch.from_numpy(small).view(*([1] * (len(shape) - 2)), height, width)
