"""OpenAI's Images API parameters and what they become in engine requests (docs/PROTOCOL.md, "OpenAI Images API").

An OpenAI request names a model, a size, a quality and a format; the engine wants a model config and a
``GenerateImageConfig``. This module is that translation, and the errors in OpenAI's own shape
(``{"error": {message, type, param, code}}``) that a client written for OpenAI knows how to read. No HTTP
objects and no torch: the routes in ``openai_api.py`` call it.
"""

from __future__ import annotations

import math
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from extensions_built_in.inference_engine.model_aliases import ModelChoice
from extensions_built_in.inference_engine.protocol import ERROR_HTTP_STATUS
from toolkit.models import from_image

MAX_SEED = 2**32 - 1
MIN_START_SIDE = 16  # an edit's input smaller than this (the smallest size a request may ask) takes the family's size
MAX_STEPS = 500
# quality -> share of the base step count (the alias's num_inference_steps, else the family's default).
# "standard" and "hd" are DALL-E's names; "xhigh" and "max" spend more steps than the family's default.
QUALITY_STEPS = {
    "low": 0.25,
    "medium": 0.5,
    "high": 1.0,
    "auto": 1.0,
    "standard": 1.0,
    "hd": 1.0,
    "xhigh": 1.5,
    "max": 2.0,
}
OUTPUT_EXT = {"png": "png", "jpeg": "jpg", "webp": "webp"}
SIZE = re.compile(r"^(\d{1,5})x(\d{1,5})$")
Quality = Literal["auto", "low", "medium", "high", "standard", "hd", "xhigh", "max"]
# OpenAI parameters for outputs this engine does not make (animated GIF, SVG): named in a clear refusal.
UNSUPPORTED = ("complexity", "frame_count", "frame_duration_ms", "svg")


class OpenAIError(Exception):
    """An error as OpenAI sends it; ``status`` is the HTTP status, ``headers`` extra response headers."""

    def __init__(self, status: int, message: str, param: Optional[str] = None, code: Optional[str] = None, **kw):
        super().__init__(message)
        self.status, self.param, self.code = status, param, code
        self.type = kw.get("type") or ("server_error" if status >= 500 else "invalid_request_error")
        self.headers = kw.get("headers") or {}

    def body(self) -> dict:
        return {"error": {"message": str(self), "type": self.type, "param": self.param, "code": self.code}}


class ImageOptions(BaseModel):
    """What generations and edits share. ``null`` means "the default", as OpenAI reads it."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    prompt: str = Field(..., max_length=20000)
    model: Optional[str] = Field(None, max_length=1100, description="an engine.models alias, or arch:name_or_path")
    n: Optional[int] = Field(None, ge=1, le=10)
    size: Optional[str] = Field(None, max_length=32, description="'auto' or WIDTHxHEIGHT (16-4096 each)")
    quality: Optional[Quality] = None
    response_format: Optional[Literal["url", "b64_json"]] = None
    output_format: Optional[Literal["png", "jpeg", "webp"]] = None
    output_compression: Optional[int] = Field(None, ge=0, le=100)
    background: Optional[Literal["transparent", "opaque", "auto"]] = None
    moderation: Optional[Literal["low", "auto"]] = None
    stream: Optional[bool] = None
    partial_images: Optional[int] = Field(None, ge=0, le=3)
    user: Optional[str] = None
    safety_identifier: Optional[str] = None
    complexity: Optional[Any] = None
    frame_count: Optional[Any] = None
    frame_duration_ms: Optional[Any] = None
    svg: Optional[Any] = None
    # The engine's own (the SDK sends them with extra_body)
    seed: Optional[int] = Field(None, ge=0, le=MAX_SEED, description="engine extension: the first result's seed")
    negative_prompt: Optional[str] = Field(None, max_length=20000, description="engine extension")
    num_inference_steps: Optional[int] = Field(
        None, ge=1, le=MAX_STEPS, description="engine extension; wins over quality"
    )
    guidance_scale: Optional[float] = Field(None, ge=0, le=100, description="engine extension")


class ImageGenerationBody(ImageOptions):
    style: Optional[Literal["vivid", "natural"]] = None


class ImageEditFields(ImageOptions):
    """The text fields of an edit's multipart form (``image`` and ``mask`` are its files)."""

    input_fidelity: Optional[Literal["high", "low"]] = None


@dataclass
class ImagePlan:
    """One OpenAI request as engine requests: one per result, seeds counting up from the first."""

    choice: ModelChoice
    samples: list[dict]
    stream: dict
    kind: str  # image_generation | image_edit
    quality: str
    output_format: str
    response_format: str
    streaming: bool
    partial_images: int
    prompt: str
    input_images: int = 0
    seeds: list[int] = field(default_factory=list)


def plan_images(
    body: ImageOptions,
    choice: ModelChoice,
    images: list[str] = (),
    kind: str = "image_generation",
    mask: Optional[str] = None,
    start_size: Optional[tuple] = None,
):
    """The engine requests for ``body``; ``OpenAIError`` (400, naming the parameter) where it cannot be run.

    An edit on an edit family (Kontext, Qwen-Image-Edit) hands it the images as its control images; on any other
    family that can start from an image, the image is where sampling starts (image-to-image) and the mask, if
    sent, what it repaints (inpainting), at the image's size unless ``size`` names one."""
    cls = choice.model_class
    check_family(cls, choice.id, kind, len(images), mask is not None)
    start = kind == "image_edit" and not cls.control_images
    for name in UNSUPPORTED:
        if getattr(body, name) is not None:
            raise OpenAIError(400, f"'{name}' is not supported: this engine makes still images only", name)
    if body.background == "transparent":
        raise OpenAIError(400, f"{cls.arch} has no transparent output; use background 'opaque' or 'auto'", "background")
    width, height = parse_size(body.size, choice)
    if start and start_size and body.size in (None, "auto") and min(start_size) >= MIN_START_SIDE:
        width, height = start_size  # else the family's size: a thumbnail-sized input is resized up to it
    fmt = body.output_format or "png"
    sample = dict(choice.sample) | {"prompt": body.prompt, "width": width, "height": height}
    sample |= {"num_inference_steps": body.num_inference_steps or steps_for(body.quality, choice)}
    sample |= {"output_ext": OUTPUT_EXT[fmt]}
    if body.output_compression is not None and fmt != "png":
        sample["output_quality"] = body.output_compression
    for key in ("negative_prompt", "guidance_scale"):
        if getattr(body, key) is not None:
            sample[key] = getattr(body, key)
    if start:
        sample["init_image"] = images[0]
        if mask:
            sample["mask"] = mask
    else:
        for i, ref in enumerate(images):
            sample[f"ctrl_img_{i + 1}"] = ref
    seeds = seeds_for(body.seed, choice, body.n or 1)
    streaming = bool(body.stream)
    partials = (body.partial_images or 0) if streaming else 0
    return ImagePlan(
        choice=choice,
        samples=[sample | {"seed": seed} for seed in seeds],
        stream={"latents": "x0" if partials else "none", "every_n_steps": 1},
        kind=kind,
        quality=body.quality or "auto",
        output_format=fmt,
        response_format=body.response_format or "b64_json",
        streaming=streaming,
        partial_images=partials,
        prompt=body.prompt,
        input_images=len(images),
        seeds=seeds,
    )


def check_family(cls, model_id: str, kind: str, images: int, masked: bool = False) -> None:
    """Images only; edits only for families that take an input image or start from one, no more images than they
    use, and a mask only where the family inpaints."""
    if cls.modality != "image":
        raise OpenAIError(
            400,
            f"{model_id} is a {cls.modality} model ({cls.arch}); the Images API serves image models only: "
            "use POST /generate for video and audio",
            "model",
            "model_not_supported",
        )
    most = max(cls.control_images, getattr(cls, "max_control_images", 0))
    if kind == "image_generation" and cls.control_images:
        raise OpenAIError(400, f"{cls.arch} edits an input image: use POST /v1/images/edits", "model")
    if kind == "image_edit" and not most:
        tasks = from_image.tasks_of(cls)
        if masked and from_image.INPAINT not in tasks:
            raise OpenAIError(400, f"{cls.arch} cannot inpaint; send no mask, or use {inpaint_families()}", "mask")
        if not masked and from_image.IMG2IMG not in tasks:
            raise OpenAIError(400, f"{cls.arch} takes no input image; edit with {edit_families()}", "image")
        if images > 1:
            raise OpenAIError(400, f"{cls.arch} starts from one image; {images} were sent", "image")
        return
    if kind == "image_edit" and masked:
        raise OpenAIError(400, f"{cls.arch} takes no mask: edits here follow the prompt", "mask")
    if kind == "image_edit" and images > most:
        raise OpenAIError(400, f"{cls.arch} uses at most {most} input image(s); {images} were sent", "image")


def edit_families() -> str:
    """Families an edit can go to: the edit models, and those that start from an image."""
    from toolkit.models.registry import ARCHS, get_model_class

    def edits(cls) -> bool:
        return cls.modality == "image" and (cls.control_images or from_image.IMG2IMG in from_image.tasks_of(cls))

    return ", ".join(a for a in ARCHS if edits(get_model_class(a)))


def inpaint_families() -> str:
    from toolkit.models.registry import ARCHS, get_model_class

    return ", ".join(a for a in ARCHS if from_image.INPAINT in from_image.tasks_of(get_model_class(a)))


def parse_size(size: Optional[str], choice: ModelChoice) -> tuple[int, int]:
    """``WxH`` as given (the engine floors it to the family's divisibility), or ``auto``: the alias's size, else
    the family's native one."""
    if size in (None, "auto"):
        defaults = choice.model_class.defaults_for(choice.model.get("arch"))  # an alias's zimage:turbo: the tag's
        return (
            int(choice.sample.get("width") or defaults.get("width", choice.model_class.native_resolution)),
            int(choice.sample.get("height") or defaults.get("height", choice.model_class.native_resolution)),
        )
    match = SIZE.match(size)
    if not match or not all(16 <= int(v) <= 4096 for v in match.groups()):
        raise OpenAIError(
            400,
            f"Invalid value: '{size}'. Supported values are 'auto' and WIDTHxHEIGHT with each side 16-4096.",
            "size",
            "invalid_value",
        )
    return int(match.group(1)), int(match.group(2))


def steps_for(quality: Optional[str], choice: ModelChoice) -> int:
    defaults = choice.model_class.defaults_for(choice.model.get("arch"))
    base = choice.sample.get("num_inference_steps") or defaults.get("num_inference_steps", 30)
    return max(1, min(MAX_STEPS, math.ceil(base * QUALITY_STEPS[quality or "auto"])))


def seeds_for(seed: Optional[int], choice: ModelChoice, n: int) -> list[int]:
    """Consecutive seeds from the request's, else the alias's, else a random one: result i replays with
    ``seed + i``."""
    first = seed if seed is not None else choice.sample.get("seed", -1)
    if first is None or first < 0:
        first = secrets.randbelow(MAX_SEED + 1)
    return [(first + i) % (MAX_SEED + 1) for i in range(n)]


def usage(plan: ImagePlan, width: int, height: int, results: int) -> dict:
    """Token counts in OpenAI's shape. Estimates: no tokenizer runs here; text is ~4 characters a token, an
    image is its latent's 2x2 patches (what a DiT denoises per position)."""
    factor = plan.choice.model_class.latent.spatial_factor * 2
    per_image = math.ceil(width / factor) * math.ceil(height / factor)
    text = math.ceil(len(plan.prompt) / 4)
    images_in = plan.input_images * per_image
    out = per_image * results
    return {
        "input_tokens": text + images_in,
        "input_tokens_details": {"text_tokens": text, "image_tokens": images_in},
        "output_tokens": out,
        "total_tokens": text + images_in + out,
    }


def engine_error(code: str, message: str) -> OpenAIError:
    """An engine ``error`` frame: the status ``?wait=1`` gives it, but a bad request is OpenAI's 400."""
    status = 400 if code == "bad_request" else ERROR_HTTP_STATUS.get(code, 500)
    return OpenAIError(status, message, None, code)


def validation_error(error: ValidationError | list) -> OpenAIError:
    """pydantic's first complaint as OpenAI words it (unknown arguments, missing ones, values out of range)."""
    errors = error.errors() if isinstance(error, ValidationError) else error
    first = errors[0] if errors else {"type": "value_error", "loc": (), "msg": "invalid request"}
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    param = loc[0] if loc else None
    kind = first.get("type", "")
    if kind == "extra_forbidden":
        return OpenAIError(400, f"Unrecognized request argument supplied: {param}")
    if kind == "missing":
        return OpenAIError(400, f"Missing required parameter: '{param}'.", param, "missing_required_parameter")
    if kind in ("json_invalid", "model_attributes_type") or param is None:
        return OpenAIError(
            400,
            "We could not parse the JSON body of your request. The OpenAI API expects a JSON payload "
            f"({first.get('msg', 'invalid body')}).",
        )
    given = repr(first.get("input"))[:200]
    return OpenAIError(
        400, f"Invalid '{param}': {first.get('msg')} (got {given}).", param, _CODES.get(kind, "invalid_value")
    )


_CODES = {
    "less_than_equal": "integer_above_max_value",
    "greater_than_equal": "integer_below_min_value",
    "string_too_long": "string_above_max_length",
    "int_parsing": "invalid_type",
    "int_type": "invalid_type",
    "string_type": "invalid_type",
    "bool_parsing": "invalid_type",
    "float_parsing": "invalid_type",
}


def bad_request_param(loc: tuple) -> Optional[str]:
    """A ``BadRequest``'s field (``("body", "sample", "width")``) as the OpenAI parameter a client sent."""
    name = str(loc[-1]) if loc else ""
    if name in ("width", "height"):
        return "size"
    if name.startswith("ctrl_img") or name == "init_image":
        return "image"
    if name == "mask":
        return "mask"
    if name == "output_ext":
        return "output_format"
    if "model" in loc:
        return "model"
    return name or None
