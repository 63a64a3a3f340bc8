"""Latent frames for previews: shrinking them for the wire, and the reference projection to RGB.

The server sends raw latents in the family's declared layout (BCHW, BCFHW or BLC) and the client projects them
with the start frame's factors. ``stream.max_frames`` and ``stream.downsample`` keep video frames small (a
30-step Wan run at full latent size is hundreds of MB). ``project_rgb`` is the projection clients implement;
the UI's TypeScript projector is tested against it.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence


def preview_shape(shape: Sequence[int], layout: str, max_frames: int = 0, downsample: int = 1) -> tuple:
    """The shape a latent frame will have on the wire, known before sampling starts (for the start frame)."""
    shape = list(shape)
    if layout == "BCFHW" and max_frames and shape[2] > max_frames:
        shape[2] = max_frames
    if downsample > 1:
        if layout in ("BCHW", "BCFHW"):
            shape[-2:] = [math.ceil(s / downsample) for s in shape[-2:]]
        else:  # BLC: along time
            shape[1] = math.ceil(shape[1] / downsample)
    return tuple(shape)


def shrink(tensor, layout: str, max_frames: int = 0, downsample: int = 1):
    """:func:`shrink_tensor`, brought to the host as a float16 numpy array (this waits for the device)."""
    return shrink_tensor(tensor, layout, max_frames, downsample).cpu().numpy()


def shrink_tensor(tensor, layout: str, max_frames: int = 0, downsample: int = 1):
    """Subsample video frames evenly and average-pool space (or audio time), on the tensor's own device.
    Returns a new contiguous float16 tensor (never a view the sampler could still write into)."""
    import torch
    import torch.nn.functional as F

    t = tensor.detach().float()
    if layout == "BCFHW" and max_frames and t.shape[2] > max_frames:
        index = torch.linspace(0, t.shape[2] - 1, max_frames, device=t.device).round().long()
        t = t.index_select(2, index)
    if downsample > 1:
        if layout == "BCHW":
            t = F.avg_pool2d(t, downsample, ceil_mode=True)
        elif layout == "BCFHW":
            b, c, f, h, w = t.shape
            t = F.avg_pool2d(t.permute(0, 2, 1, 3, 4).reshape(b * f, c, h, w), downsample, ceil_mode=True)
            t = t.reshape(b, f, c, *t.shape[-2:]).permute(0, 2, 1, 3, 4)
        else:
            t = F.avg_pool1d(t.transpose(1, 2), downsample, ceil_mode=True).transpose(1, 2)
    return t.to(torch.float16, copy=True).contiguous()


def project_rgb(array, factors: Optional[Sequence[Sequence[float]]], bias: Optional[Sequence[float]] = None):
    """BCHW (batch 0) or one BCFHW frame -> H x W x 3 uint8, ComfyUI's way: ((x . F + bias) + 1) / 2.

    Without factors (no fitted table for the family) the first three channels are min-max scaled, which is
    what clients fall back to as well."""
    import numpy as np

    x = np.asarray(array, dtype=np.float32)
    if x.ndim == 5:
        x = x[:, :, 0]
    x = x[0]  # C x H x W
    if factors is None:
        rgb = np.stack([x[i % x.shape[0]] for i in range(3)], axis=-1)
        lo, hi = rgb.min(), rgb.max()
        rgb = (rgb - lo) / (hi - lo if hi > lo else 1.0)
    else:
        rgb = np.einsum("chw,ck->hwk", x, np.asarray(factors, dtype=np.float32))
        if bias is not None:
            rgb = rgb + np.asarray(bias, dtype=np.float32)
        rgb = (rgb + 1.0) / 2.0
    return (np.clip(rgb, 0.0, 1.0) * 255.0).round().astype(np.uint8)
