"""Starting from an image: image-to-image at a strength, and inpainting a masked region.

A family that has diffusers' task pipelines names them (``BaseModel.img2img_pipeline``, ``inpaint_pipeline``);
they are built with ``from_pipe`` from the resident components, so no weight is loaded twice, and each request runs
the one its settings ask for (``task_of``). Where the result leaves the request no choice, no sampling runs at all:
strength 0 is the input through the VAE and back, strength 1 without a mask is text-to-image (nothing of the input
is left to start from, and the seed then gives the same picture as text-to-image does).

Inpainting composites the result over the input through the blurred mask, as A1111 does ("apply overlay"): the
pixels outside the mask are the input's own, not a VAE round trip of them.
"""

from __future__ import annotations

import inspect
from typing import Optional

import numpy as np

TXT2IMG, IMG2IMG, INPAINT, ROUND_TRIP = "txt2img", "img2img", "inpaint", "round_trip"


def task_of(gen) -> str:
    """What a request asks for, from its settings (``GenerateImageConfig``)."""
    if not gen.init_image:
        return TXT2IMG
    if gen.mask:
        return INPAINT
    strength = 0.75 if gen.strength is None else gen.strength
    if strength <= 0:
        return ROUND_TRIP
    return TXT2IMG if strength >= 1 else IMG2IMG


def tasks_of(model_class) -> tuple:
    """The tasks a family can run: what ``GET /models`` lists and requests are checked against."""
    tasks = [TXT2IMG]
    if model_class.img2img_pipeline:
        tasks.append(IMG2IMG)
    if model_class.inpaint_pipeline:
        tasks.append(INPAINT)
    return tuple(tasks)


def rgb_image(path: str, size: tuple):
    """The input as RGB at the request's size (width, height): the size the result will have."""
    from PIL import Image

    with Image.open(path) as img:
        img = img.convert("RGB")
    return img if img.size == size else img.resize(size, Image.LANCZOS)


def mask_image(path: str, size: tuple, blur: int):
    """The mask as L at ``size``, white where the request repaints, blurred by ``blur`` pixels (A1111's mask
    blur: a Gaussian of that radius, so the repainted region fades into the kept one). A mask with an alpha
    channel and no drawing in its colours takes the alpha (an eraser's cut-out, as image editors save one)."""
    from PIL import Image, ImageFilter

    with Image.open(path) as img:
        img.load()
        if img.mode in ("RGBA", "LA") and img.convert("L").getextrema()[0] == img.convert("L").getextrema()[1]:
            img = Image.eval(img.getchannel("A"), lambda a: 255 - a)
        mask = img.convert("L")
    if mask.size != size:
        mask = mask.resize(size, Image.LANCZOS)
    return mask.filter(ImageFilter.GaussianBlur(blur)) if blur > 0 else mask


def composite(result: np.ndarray, init, mask) -> np.ndarray:
    """The generated pixels where the mask is white, the input's where it is black, blended in between."""
    weight = np.asarray(mask, dtype=np.float32)[..., None] / 255.0
    blended = np.asarray(init, dtype=np.float32) * (1 - weight) + result.astype(np.float32) * weight
    return np.clip(np.rint(blended), 0, 255).astype(np.uint8)


def task_kwargs(pipeline, gen, kwargs: dict, init, mask=None) -> dict:
    """The family's text-to-image arguments with the task's added, kept to what the task pipeline's ``__call__``
    takes (SD's img2img has no width or height: the image's size is the result's)."""
    added = {"image": init, "strength": 1.0 if gen.strength is None and mask is not None else gen.strength}
    if added["strength"] is None:
        added["strength"] = 0.75
    if mask is not None:
        added["mask_image"] = mask
    takes = set(inspect.signature(type(pipeline).__call__).parameters)
    merged = {**kwargs, **added}
    return {k: v for k, v in merged.items() if k in takes}


def round_trip(vae, image, device, dtype) -> np.ndarray:
    """The input through the VAE's encoder and decoder (its distribution's mode): what strength 0 returns."""
    import torch

    pixels = torch.from_numpy(np.asarray(image, dtype=np.float32) / 127.5 - 1.0).permute(2, 0, 1)[None]
    pixels = pixels.to(device=device, dtype=dtype)
    video_vae = any(isinstance(m, torch.nn.Conv3d) for m in vae.modules())  # Qwen-Image's: one frame, 5-D
    with torch.inference_mode():
        latents = vae.encode(pixels[:, :, None] if video_vae else pixels).latent_dist.mode()
        decoded = vae.decode(latents).sample
    decoded = decoded[:, :, 0] if video_vae else decoded
    out = ((decoded[0].float().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    return out.permute(1, 2, 0).cpu().numpy()


def strength_of(gen) -> Optional[float]:
    """The strength a file records: the request's, or the default its task ran with."""
    task = task_of(gen)
    if task == TXT2IMG:
        return None
    if gen.strength is not None:
        return gen.strength
    return 1.0 if task == INPAINT else 0.75
