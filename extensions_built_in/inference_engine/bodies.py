"""The request bodies of the engine's HTTP API (docs/PROTOCOL.md): pydantic models, no FastAPI and no torch.

They live apart from the routes so that what else reads a body's rules (``engine.models`` entries are checked
against ``ModelBody`` and ``SampleBody`` when the engine starts) need not import the server.
"""

from __future__ import annotations

import json
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_LORAS = 8
MAX_BATCH = 16  # one request holds the queue for all its results; more is a script's job
MAX_MODEL_EXTRAS = 64  # unknown ModelConfig keys kept (configs pasted from AI Toolkit carry some) ...
MAX_MODEL_EXTRAS_BYTES = 64 * 1024  # ... and their size as JSON: they are copied into every sidecar


# ---------------------------------------------------------------------------------------------- request bodies
class LoraBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(..., min_length=1, max_length=1024, description="a .safetensors file under a LoRA root")
    multiplier: float = Field(1.0, ge=-10, le=10)


class ModelBody(BaseModel):
    """AI Toolkit's ModelConfig keys. Unknown keys are kept (configs pasted from training jobs carry many)."""

    model_config = ConfigDict(extra="allow", protected_namespaces=())
    arch: str = Field("sd1", max_length=64, description="family, optionally with a tag: 'zimage:turbo'")
    name_or_path: str = Field(..., min_length=1, max_length=1024, description="hub id, local folder, or tiny:<arch>")
    extras_name_or_path: Optional[str] = Field(None, max_length=1024)
    variant: Optional[str] = Field(
        None,
        pattern=r"^[A-Za-z0-9_]{1,32}$",
        description="weight files: 'fp16' reads *.fp16.safetensors where a folder has them",
    )
    dtype: Literal["float16", "fp16", "bfloat16", "bf16", "float32", "fp32"] = "float16"
    quantize: bool = False
    qtype: str = Field("qfloat8", max_length=64)
    quantize_te: Optional[bool] = None
    qtype_te: str = Field("qfloat8", max_length=64)
    low_vram: bool = False
    layer_offloading: bool = False
    layer_offloading_transformer_percent: float = Field(1.0, ge=0, le=1)
    layer_offloading_text_encoder_percent: float = Field(1.0, ge=0, le=1)
    lora_path: Optional[str] = Field(None, max_length=1024)
    lora_multiplier: float = Field(1.0, ge=-10, le=10)
    loras: list[LoraBody] = Field(
        default_factory=list, max_length=MAX_LORAS, description="several LoRAs at once, applied after lora_path"
    )

    @model_validator(mode="after")
    def bounded_extras(self):
        extras = self.model_extra or {}
        if len(extras) > MAX_MODEL_EXTRAS:
            raise ValueError(f"{len(extras)} unknown model keys; at most {MAX_MODEL_EXTRAS} are kept")
        size = len(json.dumps(extras, default=str))
        if size > MAX_MODEL_EXTRAS_BYTES:
            raise ValueError(f"unknown model keys take {size} bytes as JSON; at most {MAX_MODEL_EXTRAS_BYTES}")
        return self


class OutpaintBody(BaseModel):
    """Pixels the canvas grows by on each side; the new area is repainted (inpainting with it as the mask)."""

    model_config = ConfigDict(extra="forbid")
    left: int = Field(0, ge=0, le=2048)
    right: int = Field(0, ge=0, le=2048)
    top: int = Field(0, ge=0, le=2048)
    bottom: int = Field(0, ge=0, le=2048)


class UpscaleBody(BaseModel):
    """init_image resized by ``factor`` and refined by image-to-image at the new size (A1111's hires fix)."""

    model_config = ConfigDict(extra="forbid")
    factor: float = Field(2.0, gt=1, le=4)
    model: Optional[str] = Field(
        None,
        max_length=1024,
        description="an ESRGAN-family upscaler file under the model folders (toolkit/models/upscalers.py); "
        "none: Lanczos",
    )
    tile: int = Field(512, ge=0, le=4096, description="input pixels per tile for the upscaler (0: whole image)")
    strength: Optional[float] = Field(None, ge=0, le=1, description="the refine's strength (0.35)")
    steps: Optional[int] = Field(None, ge=1, le=500, description="the refine's steps (the request's)")


class SampleBody(BaseModel):
    """AI Toolkit's GenerateImageConfig keys; omitted values take the arch's defaults (see GET /models)."""

    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(..., max_length=20000)
    negative_prompt: str = Field("", max_length=20000)
    width: Optional[int] = Field(None, ge=16, le=4096)
    height: Optional[int] = Field(None, ge=16, le=4096)
    num_inference_steps: Optional[int] = Field(None, ge=1, le=500)
    guidance_scale: Optional[float] = Field(None, ge=0, le=100)
    seed: int = Field(-1, ge=-1, le=2**32 - 1, description="-1 picks one; the start frame reports it")
    num_frames: Optional[int] = Field(None, ge=1, le=1025)
    fps: Optional[int] = Field(None, ge=1, le=240)
    duration_s: Optional[float] = Field(None, gt=0, le=600)
    lyrics: str = Field("", max_length=20000)
    ctrl_img: Optional[str] = Field(None, max_length=4096, description="asset id from POST /assets, or a server path")
    ctrl_img_1: Optional[str] = Field(None, max_length=4096)
    ctrl_img_2: Optional[str] = Field(None, max_length=4096)
    ctrl_img_3: Optional[str] = Field(None, max_length=4096)
    init_image: Optional[str] = Field(
        None, max_length=4096, description="start from this image (asset id or server path): image-to-image"
    )
    init_video: Optional[str] = Field(
        None, max_length=4096, description="start from this video (asset id or server path): video-to-video"
    )
    strength: Optional[float] = Field(
        None, ge=0, le=1, description="how much of init_image is re-noised: 0 keeps it, 1 keeps nothing (0.75)"
    )
    mask: Optional[str] = Field(None, max_length=4096, description="inpaint: white repaints (asset id or server path)")
    mask_blur: int = Field(4, ge=0, le=64, description="the mask's edge blur in pixels, as A1111's")
    inpaint_area: Literal["whole", "only_masked"] = Field(
        "whole", description="only_masked: repaint the mask's box (plus padding) at width x height, pasted back"
    )
    inpaint_padding: int = Field(32, ge=0, le=1024, description="only_masked: pixels of context around the mask")
    outpaint: Optional[OutpaintBody] = None
    upscale: Optional[UpscaleBody] = None
    output_ext: Optional[str] = Field(None, max_length=8)
    output_quality: Optional[int] = Field(None, ge=0, le=100, description="jpg/webp quality (default 95)")
    speed: Literal["lossless", "fp8", "cache", "fast"] = Field(
        "lossless",
        description="fp8: float8 denoiser (Ada/Hopper+); cache: reuse steps (DiT families); fast: both "
        "(docs/BENCHMARKS.md 'Fast tiers' has their quality cost)",
    )
    sampler: Optional[str] = Field(
        None,
        max_length=64,
        description="A1111's name ('DPM++ 2M', 'Euler a'; ComfyUI's 'dpmpp_2m' too): GET /models lists each "
        "family's; omitted, the checkpoint's own scheduler",
    )
    scheduler: Optional[str] = Field(
        None, max_length=32, description="schedule type: default, karras, exponential, beta or simple"
    )
    batch_count: int = Field(1, ge=1, le=MAX_BATCH, description="results made one after another, each its own frame")
    batch_seeds: Literal["consecutive", "random"] = Field(
        "consecutive", description="seeds after the first: seed+1, seed+2… (A1111's batch count), or each random"
    )


class StreamBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    latents: Literal["raw", "x0", "none"] = "raw"
    every_n_steps: int = Field(1, ge=1, le=1000)
    max_frames: int = Field(0, ge=0, le=1024, description="video: at most this many latent frames (0 = all)")
    downsample: int = Field(1, ge=1, le=64, description="average-pool latents spatially by this factor")


class GenerateBody(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    model: ModelBody
    sample: SampleBody
    stream: StreamBody = StreamBody()


class UnloadBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    all: bool = False
    keys: list[str] = []
