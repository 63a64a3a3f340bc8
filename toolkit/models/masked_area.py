"""A1111's "only masked" inpainting (``inpaint_full_res``): the masked region is repainted at the model's own size.

A small mask on a large picture would otherwise be repainted at the picture's scale, with a few latent cells for
the whole region. Here the region is cut out instead: the box around the (blurred) mask, ``padding`` pixels wider
on every side for context, grown to the request's aspect ratio so nothing is stretched, and scaled to the
request's width and height (the size the family samples best at). The inpaint runs on that crop; its result is
scaled back to the box and pasted over the input, through the blurred mask, so the output has the input's size
and every pixel away from the mask is the input's own.

The box travels with the full-size mask (PIL's ``info``, key ``CROP``): ``from_image.composite`` pastes a result
sampled at the crop's size back through it.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

WHOLE, ONLY_MASKED = "whole", "only_masked"
AREAS = (WHOLE, ONLY_MASKED)
CROP = "inpaint_crop"  # the full-size mask's info key holding the crop box (left, top, right, bottom)


def crop_box(mask, padding: int, aspect: float) -> Optional[tuple]:
    """The region to repaint: the mask's bounding box widened by ``padding`` within the image, then grown to
    ``aspect`` (width / height) about its centre, shifted back inside where it would cross an edge and clipped
    only where the image itself is too small. None when the mask marks nothing."""
    box = mask.getbbox()
    if box is None:
        return None
    width, height = mask.size
    left, top, right, bottom = box
    left, top = max(0, left - padding), max(0, top - padding)
    right, bottom = min(width, right + padding), min(height, bottom + padding)
    if (right - left) / (bottom - top) > aspect:
        top, bottom = _grown(top, bottom, round((right - left) / aspect), height)
    else:
        left, right = _grown(left, right, round((bottom - top) * aspect), width)
    return left, top, right, bottom


def _grown(start: int, end: int, length: int, limit: int) -> tuple:
    """[start, end) grown to ``length`` about its middle, kept inside [0, limit)."""
    extra = length - (end - start)
    start, end = start - extra // 2, end + extra - extra // 2
    if end > limit:
        start, end = start - (end - limit), limit
    if start < 0:
        start, end = 0, min(limit, end - start)
    return start, end


def mark(mask, padding: int, size: tuple):
    """The full-size mask with its crop box in ``info`` (for a request of ``size``, width x height)."""
    box = crop_box(mask, padding, size[0] / size[1])
    if box is not None:
        mask.info[CROP] = box
    return mask


def cropped(init, mask, size: tuple) -> tuple:
    """(input, mask) as the sampler sees them: the box cut out of both and scaled to ``size``; the images as
    they are where the mask holds no box."""
    from PIL import Image

    box = mask.info.get(CROP)
    if box is None:
        return init, mask
    return init.crop(box).resize(size, Image.LANCZOS), mask.crop(box).resize(size, Image.LANCZOS)


def pasted(result: np.ndarray, init, mask) -> np.ndarray:
    """A result sampled at the crop's size, scaled back to its box and put into the input at its place (the
    composite through the mask blends it in next)."""
    from PIL import Image

    left, top, right, bottom = mask.info[CROP]
    canvas = np.array(init.convert("RGB"))
    patch = Image.fromarray(result).resize((right - left, bottom - top), Image.LANCZOS)
    canvas[top:bottom, left:right] = np.asarray(patch)
    return canvas
