"""Latent frames for previews: shrinking them for the wire, sending them off the GPU without stalling it, the
preview factors a checkpoint may ship, and the reference projection to RGB.

The server sends raw latents in the family's declared layout (BCHW, BCFHW or BLC) and the client projects them
with the start frame's factors. ``stream.max_frames`` and ``stream.downsample`` keep video frames small (a
30-step Wan run at full latent size is hundreds of MB). ``project_rgb`` is the projection clients implement;
the UI's TypeScript projector is tested against it.
"""

from __future__ import annotations

import math
import os
from collections import deque
from typing import TYPE_CHECKING, Optional, Sequence

from extensions_built_in.inference_engine.outputs import read_json

if TYPE_CHECKING:
    from extensions_built_in.inference_engine.stream import FrameStream


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


class LatentSender:
    """Latent frames leave the GPU without stopping it.

    Reading a CUDA tensor on the generating thread (``.cpu()``) waits for the step's kernels, and the CPU then
    cannot queue the next step ahead of the GPU. So each frame is copied into a pinned host buffer
    asynchronously with an event; the next step's hook emits the copies whose events have completed (a
    non-blocking query), and ``flush`` emits the rest at the end. Buffers are reused: pinning is slow. All on
    the generating thread: a waiting thread would compete with kernel launches for the GIL."""

    def __init__(self):
        self._pending: deque = deque()  # (stream, step, host tensor, event, layout)
        self._free: dict = {}  # (shape, dtype) -> pinned buffers ready for reuse

    def send(self, stream: FrameStream, step: int, tensor, layout: str) -> None:
        if not tensor.is_cuda:
            self._emit(stream, step, tensor, layout)
            return
        import torch

        free = self._free.setdefault((tuple(tensor.shape), tensor.dtype), [])
        host = free.pop() if free else torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
        host.copy_(tensor, non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        self._pending.append((stream, step, host, event, layout))

    def pump(self) -> None:
        while self._pending and self._pending[0][3].query():
            self._finish(*self._pending.popleft())

    def flush(self) -> None:
        while self._pending:
            item = self._pending.popleft()
            item[3].synchronize()
            self._finish(*item)

    def discard(self) -> None:
        """Drop the copies still in flight without waiting for them. Their buffers can be reused at once: a
        later copy into one is queued behind the pending one on the same stream."""
        while self._pending:
            _, _, host, _, _ = self._pending.popleft()
            self._free.setdefault((tuple(host.shape), host.dtype), []).append(host)

    def _finish(self, stream, step, host, event, layout) -> None:
        self._emit(stream, step, host, layout)
        self._free.setdefault((tuple(host.shape), host.dtype), []).append(host)  # the frame holds a copy

    @staticmethod
    def _emit(stream, step, tensor, layout) -> None:
        try:
            stream.emit_latent(step, tensor.numpy(), layout)
        except Exception as e:  # a frame lost is a preview lost, never a failed generation
            print(f"[engine] latent frame dropped: {e}", flush=True)


def checkpoint_preview_factors(name_or_path: str, channels: int) -> dict:
    """A checkpoint may ship its own latent->RGB fit (``latent_preview.json``), e.g. one trained here whose VAE
    is not the family's; it replaces the family's table in the start frame. Local folders only: nothing is
    fetched or built for this."""
    from toolkit.models.components.loading import builtin_checkpoint

    try:
        folder = builtin_checkpoint(name_or_path[8:]) if name_or_path.startswith("builtin:") else name_or_path
    except FileNotFoundError:
        return {}
    data = read_json(os.path.join(folder, "latent_preview.json")) if os.path.isdir(folder) else None
    factors = (data or {}).get("rgb_factors")
    if not factors or len(factors) != channels or any(len(row) != 3 for row in factors):
        return {}
    return {
        "rgb_factors": factors,
        "rgb_bias": data.get("rgb_bias"),
        "factors_source": "checkpoint latent_preview.json",
    }
