"""Upscaler models for ``sample.upscale.model``: the ESRGAN family's RRDB network, in model code of the engine's own.

The upscalers people run before a refine pass (Real-ESRGAN x4plus and x2plus, 4x-UltraSharp, the other ESRGAN
fine-tunes A1111 lists) are one architecture, RRDBNet (ESRGAN, Wang et al. 2018; Real-ESRGAN 2021), published
in two layouts of parameter names: BasicSR's (``conv_first``, ``body.N.rdbK.convJ``, ``conv_up1``…, often under
``params_ema``) and the original ESRGAN repository's (``model.0``, ``model.1.sub.N.RDBK.convJ.0``…). The classes
below carry BasicSR's names and shapes, so its files load unchanged, and the original layout is renamed to them.
Everything else (width, depth, growth channels, scale) is read from the shapes in the file. spandrel, which loads
these and many more, imports torchvision, whose CPU and CUDA builds are separate wheels the engine cannot pick
between offline; this one architecture covers the files users name for an upscale and refine.

A file is a safetensors file, or a ``.pth``/``.pt`` read with ``torch.load(weights_only=True)`` (a pickle must
never run code). The loaded network is a component of the engine's pool (``load``), keyed by the file's content.
Large inputs run in tiles with an overlap (``upscaled``), so the working set stays that of one tile.
"""

from __future__ import annotations

import os
import re
from typing import Optional

EXTENSIONS = (".safetensors", ".pth", ".pt", ".bin")
TILE = 512  # input pixels a tile covers by default (each side); 0: the whole image at once
OVERLAP = 16  # input pixels each tile reads past its edge, so seams see the same context as the middle


class UpscalerMismatch(ValueError):
    """The file is not an RRDBNet the engine can build."""


def _network_classes():
    import torch
    from torch import nn

    class ResidualDenseBlock(nn.Module):
        def __init__(self, feat: int, grow: int):
            super().__init__()
            self.conv1 = nn.Conv2d(feat, grow, 3, 1, 1)
            self.conv2 = nn.Conv2d(feat + grow, grow, 3, 1, 1)
            self.conv3 = nn.Conv2d(feat + 2 * grow, grow, 3, 1, 1)
            self.conv4 = nn.Conv2d(feat + 3 * grow, grow, 3, 1, 1)
            self.conv5 = nn.Conv2d(feat + 4 * grow, feat, 3, 1, 1)
            self.lrelu = nn.LeakyReLU(0.2, inplace=True)

        def forward(self, x):
            outs = [x]
            for conv in (self.conv1, self.conv2, self.conv3, self.conv4):
                outs.append(self.lrelu(conv(torch.cat(outs, 1))))
            return self.conv5(torch.cat(outs, 1)) * 0.2 + x

    class RRDB(nn.Module):
        def __init__(self, feat: int, grow: int):
            super().__init__()
            self.rdb1, self.rdb2, self.rdb3 = (ResidualDenseBlock(feat, grow) for _ in range(3))

        def forward(self, x):
            return self.rdb3(self.rdb2(self.rdb1(x))) * 0.2 + x

    class RRDBNet(nn.Module):
        """``scale`` 2 and 1 fold the input into channels first (pixel unshuffle), then upsample by 4 as the x4
        network does: the x2plus file's first layer takes 12 channels."""

        def __init__(self, in_ch: int, out_ch: int, scale: int, feat: int, blocks: int, grow: int):
            super().__init__()
            self.scale = scale
            self.conv_first = nn.Conv2d(in_ch * {4: 1, 2: 4, 1: 16}[scale], feat, 3, 1, 1)
            self.body = nn.Sequential(*(RRDB(feat, grow) for _ in range(blocks)))
            self.conv_body = nn.Conv2d(feat, feat, 3, 1, 1)
            self.conv_up1 = nn.Conv2d(feat, feat, 3, 1, 1)
            self.conv_up2 = nn.Conv2d(feat, feat, 3, 1, 1)
            self.conv_hr = nn.Conv2d(feat, feat, 3, 1, 1)
            self.conv_last = nn.Conv2d(feat, out_ch, 3, 1, 1)
            self.lrelu = nn.LeakyReLU(0.2, inplace=True)

        def forward(self, x):
            if self.scale < 4:
                x = nn.functional.pixel_unshuffle(x, 4 // self.scale)
            feat = self.conv_first(x)
            feat = feat + self.conv_body(self.body(feat))
            for conv in (self.conv_up1, self.conv_up2):
                feat = self.lrelu(conv(nn.functional.interpolate(feat, scale_factor=2, mode="nearest")))
            return self.conv_last(self.lrelu(self.conv_hr(feat)))

    return RRDBNet


# ---------------------------------------------------------------------------------------------- the file
def read_state_dict(path: str) -> dict:
    import torch

    try:
        if path.endswith(".safetensors"):
            from safetensors.torch import load_file

            state = load_file(path)
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a pickle that wants more than tensors, a truncated file: refused, never run
        raise UpscalerMismatch(f"{os.path.basename(path)}: not a weights file ({type(e).__name__})") from None
    for wrapper in ("params_ema", "params", "state_dict"):
        if isinstance(state, dict) and isinstance(state.get(wrapper), dict):
            state = state[wrapper]
    if not isinstance(state, dict) or not state:
        raise UpscalerMismatch(f"{os.path.basename(path)}: no weights in it")
    return {k.removeprefix("module."): v for k, v in state.items()}


# The original ESRGAN repository's x4 layout: model.0 first conv, model.1 the trunk (its last conv the body's),
# then the two upsampling convs, the high-resolution conv and the last one.
_OLD_TOP = {"model.0": "conv_first", "model.3": "conv_up1", "model.6": "conv_up2", "model.8": "conv_hr"}
_OLD_TOP["model.10"] = "conv_last"


def renamed(state: dict) -> dict:
    """BasicSR's names for a file in the original layout; a BasicSR file as it is."""
    if "conv_first.weight" in state:
        return state
    blocks = {int(m[1]) for k in state if (m := re.match(r"model\.1\.sub\.(\d+)\.RDB", k))}
    out = {}
    for key, value in state.items():
        head, _, tail = key.rpartition(".")
        if head in _OLD_TOP:
            out[f"{_OLD_TOP[head]}.{tail}"] = value
        elif m := re.match(r"model\.1\.sub\.(\d+)\.RDB(\d)\.conv(\d)\.0\.(weight|bias)$", key):
            out[f"body.{m[1]}.rdb{m[2]}.conv{m[3]}.{m[4]}"] = value
        elif blocks and re.match(rf"model\.1\.sub\.{max(blocks) + 1}\.(weight|bias)$", key):
            out[f"conv_body.{tail}"] = value
        else:
            raise UpscalerMismatch(f"not an RRDBNet (ESRGAN) upscaler: its key {key!r} is in neither layout")
    return out


def build(state: dict):
    """The network the shapes in ``state`` describe, with ``state`` loaded into it (every key, strictly)."""
    state = renamed(state)
    try:
        first, last = state["conv_first.weight"], state["conv_last.weight"]
        grow = state["body.0.rdb1.conv1.weight"].shape[0]
    except KeyError as e:
        raise UpscalerMismatch(f"not an RRDBNet (ESRGAN) upscaler: no {e.args[0]}") from None
    out_ch = last.shape[0]
    scale = {out_ch: 4, 4 * out_ch: 2, 16 * out_ch: 1}.get(first.shape[1])
    if scale is None:
        raise UpscalerMismatch(f"an RRDBNet whose first layer takes {first.shape[1]} channels: no known scale")
    blocks = 1 + max(int(k.split(".")[1]) for k in state if k.startswith("body."))
    net = _network_classes()(out_ch, out_ch, scale, first.shape[0], blocks, grow)
    try:
        net.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise UpscalerMismatch(f"the file's weights do not fit an RRDBNet: {str(e).splitlines()[0]}") from None
    return net.eval()


def load(path: str, device: str, dtype: str = "float32"):
    """The network in ``path`` on ``device``, through the engine's component pool when one is active."""
    import torch

    from toolkit.models.components.loading import file_digest
    from toolkit.models.components.pool import ComponentKey, current_pool

    def loaded():
        return build(read_state_dict(path)).to(device=device, dtype=getattr(torch, dtype))

    pool = current_pool()
    if pool is None:
        return loaded()
    key = ComponentKey("upscaler.RRDBNet", file_digest(path), dtype, device=str(device), source=path)
    return pool.get_or_load(key, loaded)


# ---------------------------------------------------------------------------------------------- running it
def upscaled(net, image, size: tuple, tile: int = TILE):
    """``image`` (PIL RGB) through the network, then resized (Lanczos) to ``size`` when the network's scale
    gives another (a x4 network for a x2 upscale, as A1111 runs it)."""
    import numpy as np
    import torch
    from PIL import Image

    param = next(net.parameters())
    x = torch.from_numpy(np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0).permute(2, 0, 1)[None]
    with torch.inference_mode():
        y = _tiled(net, x.to(param.device, param.dtype), net.scale, tile)
    pixels = (y[0].float().clamp(0, 1).permute(1, 2, 0).cpu().numpy() * 255.0).round().astype(np.uint8)
    out = Image.fromarray(pixels)
    return out if out.size == tuple(size) else out.resize(tuple(size), Image.LANCZOS)


def _tiled(net, x, scale: int, tile: int):
    """The network over ``tile``-pixel tiles of ``x``, each reading ``OVERLAP`` pixels past its edges and giving
    back only its own part: a tile's output is the whole image's there, up to what lies past the overlap."""
    import torch

    _, _, h, w = x.shape
    if not tile or (h <= tile and w <= tile):
        return net(x)
    out = torch.zeros((1, 3, h * scale, w * scale), device=x.device, dtype=x.dtype)
    for top in range(0, h, tile):
        for left in range(0, w, tile):
            bottom, right = min(top + tile, h), min(left + tile, w)
            t0, l0 = max(top - OVERLAP, 0), max(left - OVERLAP, 0)
            b0, r0 = min(bottom + OVERLAP, h), min(right + OVERLAP, w)
            y = net(x[:, :, t0:b0, l0:r0])
            dt, dl = (top - t0) * scale, (left - l0) * scale
            part = y[:, :, dt : dt + (bottom - top) * scale, dl : dl + (right - left) * scale]
            out[:, :, top * scale : bottom * scale, left * scale : right * scale] = part
    return out


def prepare_start(gen, device: str, folder: str) -> Optional[str]:
    """For a request whose upscale names a model: its start image through the network at the request's size,
    saved in ``folder`` (the engine's scratch), and set as what sampling starts from (``gen.upscaled_input``);
    the file's settings still name the image the user gave. Returns the saved path (None: nothing to do)."""
    from PIL import Image

    if not (gen.upscaler and gen.init_image):
        return None
    net = load(gen.upscaler, device)
    with Image.open(gen.init_image) as img:
        image = img.convert("RGB")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"upscaled_{os.getpid()}_{id(gen):x}.png")
    upscaled(net, image, (gen.width, gen.height), gen.upscale_tile).save(path)
    gen.upscaled_input = path
    return path
