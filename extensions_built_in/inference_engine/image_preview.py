"""Partial images for the OpenAI stream: a latent frame made into a small picture of the output's size.

The engine already streams each step's latents (the denoised estimate, ``stream.latents: "x0"``) with the
family's latent->RGB factors in the start frame; the UI paints its live preview from exactly these. A partial
image is the same projection (``latent_preview.project_rgb``), scaled up to the requested size and encoded in
the requested format, so it costs no VAE decode on the GPU. numpy and Pillow only, never torch.
"""

from __future__ import annotations

import io
import math
from typing import Optional

from extensions_built_in.inference_engine.latent_preview import project_rgb

PIL_FORMAT = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP"}


def partial_steps(total: int, count: int) -> list[int]:
    """The steps after which partial images go out: ``count`` of them spread evenly, the last before the end
    where there are enough steps (OpenAI's partials are previews, the completed image comes on its own)."""
    if count <= 0 or total <= 0:
        return []
    return [max(1, min(total, math.ceil(total * (i + 1) / (count + 1)))) for i in range(count)]


def preview_image(latent, spec: dict, width: int, height: int, fmt: str, quality: Optional[int] = None) -> bytes:
    """One BCHW latent (float16) -> an encoded ``width`` x ``height`` picture."""
    from PIL import Image

    rgb = project_rgb(latent, spec.get("rgb_factors"), spec.get("rgb_bias"))
    picture = Image.fromarray(rgb, "RGB").resize((width, height), Image.BILINEAR)
    return encode(picture, fmt, quality)


def encode(picture, fmt: str, quality: Optional[int] = None) -> bytes:
    out = io.BytesIO()
    kwargs = {} if fmt == "png" else {"quality": 95 if quality is None else quality}
    picture.save(out, format=PIL_FORMAT[fmt], **kwargs)
    return out.getvalue()
