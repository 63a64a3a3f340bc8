"""Starting from an image: image-to-image at a strength, and inpainting a masked region.

A family that has diffusers' task pipelines names them (``BaseModel.img2img_pipeline``, ``inpaint_pipeline``);
they are built with ``from_pipe`` from the resident components, so no weight is loaded twice, and each request runs
the one its settings ask for (``task_of``). Where the result leaves the request no choice, no sampling runs at all:
strength 0 is the input through the VAE and back, strength 1 without a mask is text-to-image (nothing of the input
is left to start from, and the seed then gives the same picture as text-to-image does).

Outpainting is inpainting on a grown canvas (the new margins are the mask); an upscale is image-to-image at a
larger size: the input resized (Lanczos) and refined at a low strength, A1111's "hires fix" on any image.

Inpainting composites the result over the input through the blurred mask, as A1111 does ("apply overlay"): the
pixels outside the mask are the input's own, not a VAE round trip of them. With ``inpaint_area: only_masked`` the
sampler sees only the region around the mask, at the request's size (toolkit/models/masked_area.py): the input
and mask stay at the input's own size, and ``sampled_images`` is what the pipeline is given.
"""

from __future__ import annotations

import inspect
from typing import Optional

import numpy as np

from toolkit.models import masked_area

TXT2IMG, IMG2IMG, INPAINT, ROUND_TRIP = "txt2img", "img2img", "inpaint", "round_trip"
VID2VID = "vid2vid"  # toolkit/models/from_video.py


def task_of(gen) -> str:
    """What a request asks for, from its settings (``GenerateImageConfig``)."""
    if getattr(gen, "init_video", None):
        return TXT2IMG if strength_of(gen) >= 1 else VID2VID  # strength 1: nothing of the video is left
    if not gen.init_image:
        return TXT2IMG
    if gen.mask or gen.outpaint:
        return INPAINT
    strength = strength_of(gen)
    if strength <= 0:
        return ROUND_TRIP
    return TXT2IMG if strength >= 1 else IMG2IMG


def tasks_of(model_class) -> tuple:
    """The tasks a family can run: what ``GET /models`` lists and requests are checked against."""
    tasks = [TXT2IMG]
    if model_class.img2img_pipeline or model_class.starts_from_latents:
        tasks.append(IMG2IMG)
    if model_class.inpaint_pipeline or model_class.starts_from_latents:
        tasks.append(INPAINT)
    if model_class.vid2vid_pipeline or model_class.vid2vid_own:
        tasks.append(VID2VID)
    return tuple(tasks)


def why_not(model_class, task: str) -> str:
    """Why a family cannot run ``task`` (img2img; inpaint for a mask or outpaint; vid2vid), for the 422 that
    refuses it."""
    reason = model_class.cannot_start
    if not reason and model_class.modality != "image":
        reason = f"a {model_class.modality} family starts from no still image"
        reason += " (video-to-video is sample.init_video)" if VID2VID in tasks_of(model_class) else ""
    if task == VID2VID:
        reason = model_class.cannot_start_video or (
            "diffusers has no video-to-video pipeline for it"
            if model_class.modality == "video"
            else f"an {model_class.modality} family makes no video"
        )
    verb = {INPAINT: "inpaint (or outpaint)", VID2VID: "start from a video (video-to-video)"}.get(
        task, "start from an image (image-to-image)"
    )
    return f"{model_class.arch} cannot {verb}" + (f": {reason}" if reason else "")


def own_loop(model_class, task: str) -> bool:
    """Whether the family runs ``task`` on its own text-to-image pipeline (toolkit/models/latent_start.py) rather
    than diffusers' class for it."""
    named = {IMG2IMG: model_class.img2img_pipeline, INPAINT: model_class.inpaint_pipeline}.get(task)
    return task in (IMG2IMG, INPAINT) and not named and model_class.starts_from_latents


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


def start_images(gen, whole: bool = False) -> tuple:
    """(input, mask or None) at the request's size: the input resized to it (an upscale's first half), or for
    an outpaint the input on its grown canvas with the new margins as the mask (with any mask drawn too).
    ``whole``: an inpaint with no input or no mask (an inpainting checkpoint's text- or image-to-image) repaints
    a mid-gray canvas, or the whole input."""
    from PIL import Image

    size = (gen.width, gen.height)
    if only_masked(gen):  # the result has the input's size; the region around the mask is sampled at gen's
        with Image.open(gen.init_image) as img:
            own = img.size
        mask = masked_area.mark(mask_image(gen.mask, own, gen.mask_blur), gen.inpaint_padding, size)
        return rgb_image(gen.init_image, own), mask
    if whole and not gen.init_image:
        return Image.new("RGB", size, (127, 127, 127)), Image.new("L", size, 255)
    if whole and not (gen.mask or gen.outpaint):
        return rgb_image(start_path(gen), size), Image.new("L", size, 255)
    if gen.outpaint:
        init, mask = outpainted(gen.init_image, gen.outpaint, size, gen.mask_blur)
        if gen.mask:
            from PIL import ImageChops

            mask = ImageChops.lighter(mask, mask_image(gen.mask, size, gen.mask_blur))
        return init, mask
    return rgb_image(start_path(gen), size), (mask_image(gen.mask, size, gen.mask_blur) if gen.mask else None)


def start_path(gen) -> str:
    """The image sampling starts from: an upscaler model's output at the request's size where the request names
    one (toolkit/models/upscalers.py ``prepare_start``), else the user's image (resized with Lanczos)."""
    return gen.upscaled_input or gen.init_image


def only_masked(gen) -> bool:
    """Whether the request repaints only the region around its mask (an outpaint always takes the whole canvas)."""
    return bool(gen.init_image and gen.mask and not gen.outpaint and gen.inpaint_area == masked_area.ONLY_MASKED)


def sampled_images(gen, whole: bool = False) -> tuple:
    """(input, mask or None) as the pipeline is given them: ``start_images``, or for ``only_masked`` the crop
    around the mask scaled to the request's size."""
    init, mask = start_images(gen, whole)
    return masked_area.cropped(init, mask, (gen.width, gen.height)) if only_masked(gen) else (init, mask)


def outpainted(path: str, margins: dict, size: tuple, blur: int) -> tuple:
    """The input with ``margins`` (left, right, top, bottom pixels) added around it, filled by extending its edge
    pixels (a start the sampler repaints), scaled to ``size``; the mask is white over the margins and reaches
    ``blur`` pixels into the input, so the seam is repainted too."""
    from PIL import Image, ImageFilter

    with Image.open(path) as img:
        pixels = np.asarray(img.convert("RGB"))
    left, right, top, bottom = (int(margins.get(k, 0)) for k in ("left", "right", "top", "bottom"))
    canvas = np.pad(pixels, ((top, bottom), (left, right), (0, 0)), mode="edge")
    mask = np.full(canvas.shape[:2], 255, np.uint8)
    h, w = pixels.shape[:2]
    inner = blur if blur > 0 else 0
    mask[
        top + inner * (top > 0) : top + h - inner * (bottom > 0),
        left + inner * (left > 0) : left + w - inner * (right > 0),
    ] = 0
    init, mask_img = Image.fromarray(canvas), Image.fromarray(mask)
    if init.size != size:  # the engine snapped the canvas to the family's divisibility
        init, mask_img = init.resize(size, Image.LANCZOS), mask_img.resize(size, Image.LANCZOS)
    return init, mask_img.filter(ImageFilter.GaussianBlur(blur)) if blur > 0 else mask_img


def canvas_size(path: str, outpaint: Optional[dict], upscale: Optional[float]) -> tuple:
    """The result's size an outpaint or an upscale asks for, from the input's (its header only)."""
    from PIL import Image

    with Image.open(path) as img:
        width, height = img.size
    if upscale:
        width, height = round(width * upscale), round(height * upscale)
    if outpaint:
        width += int(outpaint.get("left", 0)) + int(outpaint.get("right", 0))
        height += int(outpaint.get("top", 0)) + int(outpaint.get("bottom", 0))
    return width, height


def alpha_mask_png(data: bytes, size: Optional[tuple]) -> bytes:
    """OpenAI's edit mask (a PNG whose transparent pixels are to be repainted, the image's size) as this engine's
    (white repaints), PNG bytes. ``ValueError`` says why one cannot be used."""
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            if "A" not in img.getbands():
                raise ValueError("it has no alpha channel (transparent pixels mark what to repaint)")
            if size and img.size != tuple(size):
                raise ValueError(f"it is {img.size[0]}x{img.size[1]}, the image {size[0]}x{size[1]}")
            alpha = img.getchannel("A")
    except (UnidentifiedImageError, OSError) as e:
        raise ValueError(f"not a PNG: {e}") from None
    out = io.BytesIO()
    Image.eval(alpha, lambda a: 255 - a).save(out, format="PNG")
    return out.getvalue()


def composite(result: np.ndarray, init, mask) -> np.ndarray:
    """The generated pixels where the mask is white, the input's where it is black, blended in between. A result
    sampled from a crop (``only_masked``: its box in the mask's info) is first put back at the box's place."""
    if masked_area.CROP in getattr(mask, "info", {}):
        result = masked_area.pasted(result, init, mask)
    weight = np.asarray(mask, dtype=np.float32)[..., None] / 255.0
    blended = np.asarray(init, dtype=np.float32) * (1 - weight) + result.astype(np.float32) * weight
    return np.clip(np.rint(blended), 0, 255).astype(np.uint8)


def task_kwargs(pipeline, gen, kwargs: dict, init, mask=None) -> dict:
    """The family's text-to-image arguments with the task's added, kept to what the task pipeline's ``__call__``
    takes (SD's img2img has no width or height: the image's size is the result's)."""
    added = {"image": init, "strength": 1.0 if strength_of(gen) is None else strength_of(gen)}
    if mask is not None:
        added["mask_image"] = mask
    takes = set(inspect.signature(type(pipeline).__call__).parameters)
    merged = {**kwargs, **added}
    return {k: v for k, v in merged.items() if k in takes}


def vae_input(vae, image):
    """(the image as the VAE takes it: -1..1, channels first, one frame for a video VAE, on the VAE's device and
    dtype; whether the VAE is a video one, whose latents carry a frame axis)."""
    import torch

    first = next(vae.parameters())
    pixels = torch.from_numpy(np.asarray(image, dtype=np.float32) / 127.5 - 1.0).permute(2, 0, 1)[None]
    pixels = pixels.to(device=first.device, dtype=first.dtype)
    video = any(isinstance(m, torch.nn.Conv3d) for m in vae.modules())  # Qwen-Image's and Wan's: 5-D
    return (pixels[:, :, None] if video else pixels), video


def round_trip(vae, image) -> np.ndarray:
    """The input through the VAE's encoder and decoder (its distribution's mode): what strength 0 returns."""
    import torch

    pixels, video_vae = vae_input(vae, image)
    with torch.inference_mode():
        decoded = vae.decode(vae.encode(pixels).latent_dist.mode()).sample
    decoded = decoded[:, :, 0] if video_vae else decoded
    out = ((decoded[0].float().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    return out.permute(1, 2, 0).cpu().numpy()


def strength_of(gen) -> Optional[float]:
    """The strength a file records: the request's, or the default its task runs with (an upscale refines at
    A1111's hires-fix-like 0.35, an inpaint repaints fully, a video varies at 0.75 as an image does)."""
    if getattr(gen, "init_video", None):
        return 0.75 if gen.strength is None else gen.strength
    if not gen.init_image:
        return None
    if gen.strength is not None:
        return gen.strength
    if gen.mask or gen.outpaint:
        return 1.0
    return 0.35 if gen.upscale else 0.75
