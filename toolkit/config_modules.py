"""Model and sample configuration with AI Toolkit's field names and defaults.

Users move configs between AI Toolkit and this toolkit, so every key keeps its upstream name and default;
only the fields the inference side uses are modelled, and unknown keys are kept in ``extra`` rather than
rejected (an AI Toolkit training config carries many that do not concern generation).
"""

from __future__ import annotations

import random
import shlex
import time
from dataclasses import dataclass, field, fields
from typing import Optional

MAX_SEED = 2**32 - 1


# AI Toolkit's other names for a family, with the checkpoint its UI offers under that name (ostris/ai-toolkit
# ui/src/app/jobs/new/options.tsx): its ModelConfig turns flex1 into flux (Flex.1's transformer is a FLUX.1 one)
# and its UI writes sd15 for what its loader runs as SD 1.x. ModelConfig and the registry both resolve through this.
ARCH_ALIASES = {
    "flex1": ("flux", "ostris/Flex.1-alpha"),
    "sd15": ("sd1", "stable-diffusion-v1-5/stable-diffusion-v1-5"),
}


def arch_family(name: str) -> str:
    """The family an arch name (no tag) runs as: an alias's, else the name itself."""
    return ARCH_ALIASES[name][0] if name in ARCH_ALIASES else name


def _split_arch(arch: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """``zimage:turbo`` selects a variant in the UI; the model class only cares about the family."""
    if not arch:
        return None, None
    name, _, tag = str(arch).partition(":")
    return name, tag or None


@dataclass
class ModelConfig:
    name_or_path: str
    arch: Optional[str] = None
    arch_tag: Optional[str] = None
    extras_name_or_path: Optional[str] = None
    variant: Optional[str] = None  # which weight files of a diffusers folder: "fp16" reads *.fp16.safetensors
    dtype: str = "float16"
    quantize: bool = False
    qtype: str = "qfloat8"
    quantize_te: Optional[bool] = None
    qtype_te: str = "qfloat8"
    low_vram: bool = False
    layer_offloading: bool = False
    layer_offloading_transformer_percent: float = 1.0
    layer_offloading_text_encoder_percent: float = 1.0
    lora_path: Optional[str] = None
    lora_multiplier: float = 1.0
    loras: list = field(default_factory=list)  # [{"path", "multiplier"}]: several at once, after lora_path
    assistant_lora_path: Optional[str] = None
    model_kwargs: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.name_or_path:
            raise ValueError("ModelConfig: name_or_path is required")
        arch, tag = _split_arch(self.arch)
        self.arch = arch_family(arch or "sd1")
        self.arch_tag = self.arch_tag or tag
        self.extras_name_or_path = self.extras_name_or_path or self.name_or_path
        if self.quantize_te is None:
            self.quantize_te = self.quantize
        self.loras = [
            {"path": e["path"], "multiplier": float(e.get("multiplier", 1.0))}
            if isinstance(e, dict)
            else {"path": str(e), "multiplier": 1.0}
            for e in self.loras or []
        ]
        if self.layer_offloading:
            # AI Toolkit's layer offloading cannot run optimum-quanto types; it maps them to torchao's.
            self.qtype = "float8" if self.qtype == "qfloat8" else self.qtype
            self.qtype_te = "float8" if self.qtype_te == "qfloat8" else self.qtype_te

    @classmethod
    def from_dict(cls, data: dict) -> "ModelConfig":
        data = dict(data)
        if "auto_memory" in data and "layer_offloading" not in data:
            data["layer_offloading"] = data.pop("auto_memory")
        known = {f.name for f in fields(cls)} - {"extra"}
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**{k: v for k, v in data.items() if k in known}, extra=extra)

    def lora_list(self) -> list[tuple[str, float]]:
        """Every LoRA to apply, in order: AI Toolkit's single ``lora_path`` first, then ``loras``."""
        first = [(self.lora_path, self.lora_multiplier)] if self.lora_path else []
        return first + [(e["path"], e["multiplier"]) for e in self.loras]

    def explicit_memory_options(self) -> bool:
        """The user chose how this model uses memory: the engine's automatic plan then stays out of it."""
        return bool(self.low_vram or self.layer_offloading or self.quantize or self.quantize_te)

    def identity(self) -> dict:
        """Everything that decides which weights end up resident; the engine's holder fast path compares it."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        d.pop("arch_tag")
        return d


# Flags of AI Toolkit's inline prompt syntax: "a cat --w 512 --h 768 --seed 3 --n blurry".
_PROMPT_FLAGS = {
    "p2": ("prompt_2", str),
    "n": ("negative_prompt", str),
    "n2": ("negative_prompt_2", str),
    "w": ("width", int),
    "h": ("height", int),
    "seed": ("seed", int),
    "d": ("seed", int),
    "cfg": ("guidance_scale", float),
    "l": ("guidance_scale", float),
    "s": ("num_inference_steps", int),
    "steps": ("num_inference_steps", int),
    "m": ("network_multiplier", float),
    "network_multiplier": ("network_multiplier", float),
    "gr": ("guidance_rescale", float),
    "frames": ("num_frames", int),
    "num_frames": ("num_frames", int),
    "fps": ("fps", int),
    "ctrl_img": ("ctrl_img", str),
    "ctrl_idx": ("ctrl_idx", int),
}


def parse_prompt_flags(prompt: str) -> tuple[str, dict]:
    """AI Toolkit's inline syntax, for prompts from the user's own config files (``job: generate``): the text
    before the first ``--`` and the settings the flags name. A literal ``--`` therefore ends the prompt.

    The engine never calls this: a request's prompt is text, and its sizes, steps and paths are checked fields;
    flags parsed after those checks would bypass them (``--ctrl_img /etc/...``, ``--w 100000``)."""
    if "--" not in prompt:
        return prompt, {}
    head, *parts = prompt.split("--")
    settings = {}
    for part in parts:
        words = shlex.split(part) if part.strip() else []
        if not words or words[0] not in _PROMPT_FLAGS:
            continue
        key, value = words[0], " ".join(words[1:])
        attr, cast = _PROMPT_FLAGS[key]
        try:
            settings[attr] = cast(value)
        except ValueError as e:
            raise ValueError(f"prompt flag --{key}: cannot read {value!r} as {cast.__name__}") from e
    return head.strip(), settings


@dataclass
class GenerateImageConfig:
    prompt: str = ""
    prompt_2: Optional[str] = None
    width: int = 512
    height: int = 512
    num_inference_steps: int = 50
    guidance_scale: float = 7.5
    negative_prompt: str = ""
    negative_prompt_2: Optional[str] = None
    seed: int = -1
    network_multiplier: float = 1.0
    guidance_rescale: float = 0.0
    output_path: Optional[str] = None
    output_folder: Optional[str] = None
    output_ext: str = "png"
    output_quality: Optional[int] = (
        None  # jpg/webp encoder quality 0-100 (None: 95); the OpenAI API's output_compression
    )
    output_tail: str = ""
    ctrl_img: Optional[str] = None
    ctrl_img_1: Optional[str] = None
    ctrl_img_2: Optional[str] = None
    ctrl_img_3: Optional[str] = None
    ctrl_idx: int = 0
    num_frames: int = 1
    fps: int = 15
    # Audio families (not in AI Toolkit's GenerateImageConfig, which predates them in the engine).
    duration_s: Optional[float] = None
    lyrics: str = ""
    # The engine's speed tier (toolkit/models/speed.py): lossless, fp8, cache or fast. Not an AI Toolkit key.
    speed: str = "lossless"
    # Starting from an image (toolkit/models/from_image.py): its path, how much of it is re-noised (None: 0.75, or
    # 1.0 with a mask), the mask (white repaints) and the mask's blur in pixels. Not AI Toolkit keys.
    init_image: Optional[str] = None
    init_video: Optional[str] = None  # video-to-video (toolkit/models/from_video.py), at ``strength``
    strength: Optional[float] = None
    mask: Optional[str] = None
    mask_blur: int = 4
    outpaint: Optional[dict] = None  # left, right, top, bottom: pixels the canvas grows by (the new area repainted)
    upscale: Optional[float] = None  # the factor the input is resized by before it is refined
    # The upscaler model that resizes it (toolkit/models/upscalers.py; None: Lanczos), in tiles of this many input
    # pixels, and the file it made at the request's size: what sampling starts from (the engine's scratch).
    upscaler: Optional[str] = None
    upscale_tile: int = 512
    upscaled_input: Optional[str] = None
    # A1111's inpaint area: "whole" repaints at the picture's scale, "only_masked" the region around the mask
    # (its box plus this many pixels) at the request's size, pasted back (toolkit/models/masked_area.py).
    inpaint_area: str = "whole"
    inpaint_padding: int = 32
    # A1111's sampler name and schedule type (toolkit/samplers.py); None: the checkpoint's own scheduler.
    sampler: Optional[str] = None
    scheduler: Optional[str] = None
    extra_kwargs: dict = field(default_factory=dict)
    gen_time: int = field(default_factory=lambda: int(time.time() * 1000))

    def __post_init__(self):
        self.prompt_2 = self.prompt_2 if self.prompt_2 is not None else self.prompt
        if self.negative_prompt_2 is None:
            self.negative_prompt_2 = self.negative_prompt
        self.ctrl_img_1 = self.ctrl_img_1 or self.ctrl_img
        if self.seed is None or int(self.seed) < 0:
            self.seed = random.randint(0, MAX_SEED)  # resolved here so it can be reported and replayed
        self.output_ext = self.output_ext.lower().lstrip(".")

    @property
    def control_images(self) -> list[str]:
        return [p for p in (self.ctrl_img_1, self.ctrl_img_2, self.ctrl_img_3) if p]

    @property
    def input_images(self) -> list[str]:
        """Every input file the request reads: control images, the start image and its mask, the start video."""
        return self.control_images + [p for p in (self.init_image, self.mask, self.init_video) if p]

    def snap_size(self, divisibility: int, minimum: Optional[int] = None) -> None:
        """Floor width/height to what the arch can sample; AI Toolkit floors to 8 with a 64 minimum."""
        minimum = minimum or divisibility
        self.width = max(minimum, int(self.width) // divisibility * divisibility)
        self.height = max(minimum, int(self.height) // divisibility * divisibility)

    def snap_frames(self, temporal: int) -> None:
        """Video VAEs compress time by ``temporal``: frame counts must be ``k * temporal + 1``."""
        self.num_frames = max(1, (int(self.num_frames) - 1) // temporal * temporal + 1)

    def get_image_path(self, count: int = 0, max_count: int = 0) -> str:
        import os

        if self.output_path:
            return self.output_path
        if not self.output_folder:
            raise ValueError("GenerateImageConfig needs output_path or output_folder")
        stem = f"{self.gen_time}_{str(count).zfill(len(str(max_count)))}"
        if self.output_tail:
            stem += f"_{self.output_tail}"
        return os.path.join(self.output_folder, f"{stem}.{self.output_ext}")
