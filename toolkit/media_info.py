"""Generation settings inside the files themselves, where other tools look for them.

Every peer embeds its parameters, so a file dropped into A1111/Forge, InvokeAI or an image browser says how it was
made. The de-facto standard is A1111's ``parameters`` text: the prompt, a ``Negative prompt:`` line, then
``Key: value`` pairs. It goes in a PNG text chunk of that name, and in EXIF ``UserComment`` (UTF-16, A1111's
encoding) for JPEG and WebP. PNGs also carry ``aitk``: the engine's full resolved request as JSON, which restores
every setting. Video and audio carry the same text as container ``comment`` metadata (mp4/mp3 via PyAV, wav/flac
via libsndfile). ``read_info`` reads any of them back.
"""

from __future__ import annotations

import json
import os
from typing import Optional

from toolkit.samplers import parameters_pairs

PARAMETERS, FULL = "parameters", "aitk"
USER_COMMENT, EXIF_IFD = 0x9286, 0x8769
UNICODE_PREFIX = b"UNICODE\0"


def info_for(config: dict) -> dict:
    """Both texts for a resolved request (``Request.resolved_config``: model, sample, stream)."""
    return {PARAMETERS: parameters_text(config), FULL: json.dumps(config, sort_keys=True, default=str)}


def parameters_text(config: dict) -> str:
    model, sample = config.get("model", {}), config.get("sample", {})
    pairs = [
        ("Steps", sample.get("num_inference_steps")),
        *parameters_pairs(sample),  # Sampler, Schedule type
        ("CFG scale", sample.get("guidance_scale")),
        ("Seed", sample.get("seed")),
        ("Size", f"{sample.get('width')}x{sample.get('height')}" if sample.get("width") else None),
        ("Frames", sample.get("num_frames") if sample.get("num_frames", 1) > 1 else None),
        (
            "Denoising strength",
            sample.get("strength") if sample.get("init_image") or sample.get("init_video") else None,
        ),
        ("Mask blur", sample.get("mask_blur") if sample.get("mask") else None),
        ("Hires upscale", sample.get("upscale")),
        ("Hires upscaler", os.path.basename(sample["upscaler"]) if sample.get("upscaler") else None),
        *_inpaint_area(sample),
        ("Init image", _quoted(image_note(sample.get("init_image")))),
        ("Init video", _quoted(image_note(sample.get("init_video")))),
        ("Mask image", _quoted(image_note(sample.get("mask")))),
        ("Model", model.get("name_or_path")),
        ("Arch", model.get("arch")),
        ("LoRA", model.get("lora_path")),
        ("Lora hashes", _quoted(lora_hashes(config.get("loras")))),
        ("Memory", _quoted(config.get("memory"))),  # the memory plan's 8-bit or streamed placement
        ("Version", "ai-toolkit inference engine"),
    ]
    lines = [prompt_with_loras(sample.get("prompt") or "", config.get("loras"))]
    if sample.get("negative_prompt"):
        lines.append(f"Negative prompt: {sample['negative_prompt']}")
    lines.append(", ".join(f"{key}: {value}" for key, value in pairs if value not in (None, "")))
    return "\n".join(lines)


def _starts_from(sample: dict) -> bool:
    """Whether the request started from an image or a video (its strength means something)."""
    return bool(sample.get("init_image") or sample.get("init_video"))


def _inpaint_area(sample: dict) -> list:
    """A1111's pairs for "only masked" inpainting (its ``inpaint_full_res``); none for the whole picture."""
    if not sample.get("mask") or sample.get("inpaint_area") != "only_masked":
        return []
    return [("Inpaint area", "Only masked"), ("Masked area padding", sample.get("inpaint_padding"))]


def image_note(path: Optional[str]) -> Optional[str]:
    """An input image as a file records it: its name and the first 10 hex of its sha256, so the file it started
    from can be told apart from another of the same name."""
    if not path:
        return None
    import hashlib

    try:
        with open(path, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()[:10]
    except OSError:
        return os.path.basename(path)
    return f"{os.path.basename(path)} {digest}"


def prompt_with_loras(prompt: str, loras: Optional[list]) -> str:
    """The prompt as A1111 writes it: the encoded text followed by a ``<lora:name:multiplier>`` per LoRA applied
    (the engine takes them out of the prompt, or from ``model.loras``, before encoding), so pasting it into
    A1111, Forge or this engine applies them again."""
    tags = " ".join(f"<lora:{e['name']}:{float(e['multiplier']):g}>" for e in loras or [] if e.get("name"))
    return f"{prompt} {tags}".strip() if tags else prompt


def lora_hashes(loras: Optional[list]) -> Optional[str]:
    """Forge's ``Lora hashes`` value: ``name: hash`` per LoRA, the name without ``:`` or ``,`` (its infotext's
    separators), the hash the first 12 hex digits of A1111's LoRA hash (lora_library.py ``addnet_hash``)."""
    pairs = [
        f"{str(e['name']).replace(':', '').replace(',', '')}: {e['hash']}"
        for e in loras or []
        if e.get("name") and e.get("hash")
    ]
    return ", ".join(pairs) or None


def _quoted(value: Optional[str]) -> Optional[str]:
    """A value with a comma or colon quoted, as A1111 quotes them (its parser splits pairs at commas)."""
    return json.dumps(value) if value and any(c in value for c in ",:\n") else value


def pil_save_kwargs(ext: str, info: Optional[dict]) -> dict:
    """What Pillow's ``save`` needs to write ``info`` into a png, jpg or webp (stills and animated WebP)."""
    if not info:
        return {}
    from PIL import Image, PngImagePlugin

    if ext == "png":
        chunks = PngImagePlugin.PngInfo()
        for key, text in info.items():
            chunks.add_itxt(key, text)
        return {"pnginfo": chunks}
    exif = Image.Exif()
    exif.get_ifd(EXIF_IFD)[USER_COMMENT] = UNICODE_PREFIX + info[PARAMETERS].encode("utf-16-be")
    return {"exif": exif.tobytes()}


def container_comment(info: Optional[dict]) -> dict:
    """Container metadata (PyAV ``container.metadata``) for mp4 and mp3."""
    return {"comment": info[PARAMETERS]} if info else {}


def read_info(path: str) -> dict:
    """The embedded texts of a written file ({} when it has none)."""
    ext = os.path.splitext(str(path))[1].lower().lstrip(".")
    if ext in ("png", "jpg", "jpeg", "webp"):
        return _read_pil(path)
    if ext in ("mp4", "mp3"):
        import av

        with av.open(str(path)) as container:
            comment = container.metadata.get("comment")
        return {PARAMETERS: comment} if comment else {}
    import soundfile as sf

    with sf.SoundFile(str(path)) as f:
        return {PARAMETERS: f.comment} if f.comment else {}


def _read_pil(path: str) -> dict:
    from PIL import Image

    with Image.open(path) as img:
        texts = {k: v for k, v in getattr(img, "text", {}).items() if k in (PARAMETERS, FULL)}
        raw = img.getexif().get_ifd(EXIF_IFD).get(USER_COMMENT)
    if raw and not texts:
        raw = raw if isinstance(raw, bytes) else str(raw).encode("latin-1")
        if raw.startswith(UNICODE_PREFIX):
            texts[PARAMETERS] = raw[len(UNICODE_PREFIX) :].decode("utf-16-be")
    return texts
