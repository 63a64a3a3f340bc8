"""The checks a generate request passes before it is queued: its arch, checkpoint, memory options, LoRA and
control-image paths, output format and sizes. Every refusal is a ``BadRequest`` naming its field, as FastAPI's
own 422s do.

Paths from a request are resolved before they are checked (links followed): a checkpoint only from the model
roots (``model_sources.py``), a LoRA only from the LoRA roots, a control image only as an uploaded asset or a
file in the engine's own folders. No torch is needed: sizes are snapped by the family class without weights.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from extensions_built_in.inference_engine.assets import AssetError, AssetStore, is_inside, real_path
from extensions_built_in.inference_engine.bodies import MAX_LORAS
from extensions_built_in.inference_engine.catalog import LoraLibrary, UnknownLora
from extensions_built_in.inference_engine.lora_library import HASHES, BadLoraTag, split_lora_tags
from extensions_built_in.inference_engine.model_sources import ModelSources, SourceRefused
from toolkit import samplers
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models import from_image, from_video, upscalers
from toolkit.models.arch_tags import UnknownArchTag
from toolkit.models.components.loading import check_qtype
from toolkit.models.registry import UnknownArchError, get_model_class
from toolkit.models.speed import fp8_problem, speed_problem


class BadRequest(ValueError):
    """A request the engine cannot run; ``loc`` names the field, as FastAPI's own 422s do."""

    def __init__(self, loc: tuple, message: str):
        super().__init__(message)
        self.loc = loc


@dataclass
class StreamOptions:
    latents: str = "raw"  # raw | x0 | none
    every_n_steps: int = 1
    max_frames: int = 0  # 0: every latent frame
    downsample: int = 1


MAX_CANVAS = 4096  # the largest side a request may ask for (SampleBody's width and height)
MIN_CANVAS = 16  # and the smallest


class RequestChecks:
    def __init__(
        self,
        device: str,
        assets: AssetStore,
        output_folder: str,
        lora_roots: list[str],
        sources: Optional[ModelSources] = None,
    ):
        self.device, self.assets, self.output_folder = device, assets, output_folder
        self.sources = sources or ModelSources()
        self.lora_roots = [os.path.abspath(p) for p in lora_roots] + [assets.folder, output_folder]
        self.loras = LoraLibrary(self.lora_roots)  # GET /loras, and the names <lora:name> tags use
        self.no_fp8 = fp8_problem(device)  # why the fp8 speed tiers cannot run here (None: they can)

    def resolve(self, model: dict, sample: dict, stream: dict) -> tuple:
        """Semantic checks on an already type-checked body; every failure names its field."""
        arch = model.get("arch") or "sd1"
        try:  # the tag too: zimage:turbo picks Z-Image-Turbo's defaults (toolkit/models/arch_tags.py)
            model_class = get_model_class(arch)
            defaults, model = model_class.defaults_for(arch), model_class.model_for(arch, model)
        except (UnknownArchError, UnknownArchTag) as e:
            raise BadRequest(("body", "model", "arch"), str(e)) from None
        model_config = ModelConfig.from_dict(model)
        try:  # first: nothing below may read a checkpoint path the request is not allowed to name
            self.sources.check(model_class, model_config)
        except SourceRefused as e:
            raise BadRequest(("body", "model", e.field), str(e)) from None
        self.check_memory_options(model_config)
        if model_config.lora_path:
            model_config.lora_path = self.resolve_lora(model_config.lora_path, ("body", "model", "lora_path"))
        for i, entry in enumerate(model_config.loras):
            entry["path"] = self.resolve_lora(entry["path"], ("body", "model", "loras", i, "path"))
        sample = {k: v for k, v in sample.items() if v is not None}
        if "<lora:" in str(sample.get("prompt") or ""):
            sample["prompt"] = self.prompt_loras(str(sample["prompt"]), model_config)
        for path, _ in model_config.lora_list():
            HASHES.prefetch(path)  # read while the request waits and runs: its result's text names the hash
        merged = {**defaults, **sample}
        if merged.get("output_ext") not in model_class.output_exts:
            raise BadRequest(
                ("body", "sample", "output_ext"),
                f"{model_class.arch} writes {', '.join(model_class.output_exts)}, not {merged.get('output_ext')!r}",
            )
        self.check_start_image(model_class, merged)
        for key in ("ctrl_img", "ctrl_img_1", "ctrl_img_2", "ctrl_img_3", "init_image", "mask", "init_video"):
            if merged.get(key):
                merged[key] = self.resolve_image_ref(merged[key], ("body", "sample", key))
        for key in ("ctrl_img", "ctrl_img_1", "ctrl_img_2", "ctrl_img_3", "init_image", "mask"):
            if str(merged.get(key) or "").lower().endswith((".mp4", ".mov", ".webm")):
                raise BadRequest(("body", "sample", key), "a video, not an image: a start video is sample.init_video")
        if merged.get("init_video") and (problem := from_video.check(merged["init_video"])):
            raise BadRequest(("body", "sample", "init_video"), problem)
        self.set_canvas(merged)
        if merged.get("upscaler"):
            merged["upscaler"] = self.resolve_upscaler(merged["upscaler"], ("body", "sample", "upscale", "model"))
        try:
            gen = GenerateImageConfig(**merged)
        except (TypeError, ValueError) as e:
            raise BadRequest(("body", "sample"), str(e)) from None
        problem = speed_problem(gen.speed, model_class, self.no_fp8)
        if problem:
            raise BadRequest(("body", "sample", "speed"), problem)
        gen.strength = from_image.strength_of(gen)  # the default its task runs with, written into the file
        try:  # canonical names in the start frame; the run fills in the checkpoint's own where none was asked
            gen.sampler, gen.scheduler = samplers.resolve(model_class, gen.sampler, gen.scheduler)
        except samplers.SamplerError as e:
            raise BadRequest(("body", "sample", e.field), str(e)) from None
        if gen.num_inference_steps < model_class.min_steps:
            raise BadRequest(
                ("body", "sample", "num_inference_steps"),
                f"{model_class.arch} needs at least {model_class.min_steps} steps (its scheduler's terminal shift "
                "divides by zero at one step)",
            )
        if len(gen.control_images) < model_class.control_images:
            raise BadRequest(
                ("body", "sample", "ctrl_img"),
                f"{model_class.arch} needs {model_class.control_images} control image(s): upload one to "
                f"/assets and pass its id as ctrl_img",
            )
        model_class("cpu", model_config).prepare_gen_config(gen)  # snapping needs no weights
        return model_class, model_config, gen, StreamOptions(**stream)

    @staticmethod
    def check_start_image(model_class, sample: dict) -> None:
        """A start image or mask only where the family can use it (toolkit/models/from_image.py)."""
        tasks = from_image.tasks_of(model_class)
        if sample.get("init_video"):
            if from_image.VID2VID not in tasks:
                raise BadRequest(("body", "sample", "init_video"), from_image.why_not(model_class, from_image.VID2VID))
            # a control image too: Wan 2.2 5B would run image-to-video, on a pipeline not started from the video
            starts = ("init_image", "mask", "outpaint", "upscale", "ctrl_img", "ctrl_img_1")
            other = next((k for k in starts if sample.get(k)), None)
            if other:
                raise BadRequest(("body", "sample", other), f"a video-to-video request takes no {other}")
            if sample.get("strength") == 0:
                raise BadRequest(("body", "sample", "strength"), "strength 0 keeps the video as it is: use 0 < s <= 1")
        if sample.get("mask") and not sample.get("init_image"):
            raise BadRequest(("body", "sample", "mask"), "a mask needs the image it masks: set sample.init_image")
        if sample.get("inpaint_area") == "only_masked":
            other = next((k for k in ("outpaint", "upscale") if sample.get(k)), None)
            if not sample.get("mask") or other:
                raise BadRequest(
                    ("body", "sample", "inpaint_area"),
                    "only_masked repaints the region around a mask: it needs sample.mask"
                    + (f", and no {other} (which repaints or refines the whole canvas)" if other else ""),
                )
        repaint = next((k for k in ("mask", "outpaint") if sample.get(k)), None)
        if repaint and from_image.INPAINT not in tasks:
            raise BadRequest(("body", "sample", repaint), from_image.why_not(model_class, from_image.INPAINT))
        if sample.get("init_image") and not repaint and from_image.IMG2IMG not in tasks:
            raise BadRequest(("body", "sample", "init_image"), from_image.why_not(model_class, from_image.IMG2IMG))

    @staticmethod
    def set_canvas(sample: dict) -> None:
        """An outpaint or an upscale sets the result's size from the start image's; an upscale's own strength and
        steps are the request's."""
        outpaint, upscale = sample.get("outpaint"), sample.pop("upscale", None)
        if not (outpaint or upscale):
            return
        field = "outpaint" if outpaint else "upscale"
        if not sample.get("init_image"):
            raise BadRequest(
                ("body", "sample", field), f"{field} needs the image it starts from: set sample.init_image"
            )
        factor = upscale["factor"] if upscale else None
        width, height = from_image.canvas_size(sample["init_image"], outpaint, factor)
        if max(width, height) > MAX_CANVAS or min(width, height) < MIN_CANVAS:
            raise BadRequest(
                ("body", "sample", field),
                f"the result would be {width}x{height}; each side {MIN_CANVAS} to {MAX_CANVAS}",
            )
        sample.update(width=width, height=height, upscale=factor)
        if upscale:
            sample.update(
                {
                    k: v
                    for k, v in (
                        ("strength", upscale.get("strength")),
                        ("num_inference_steps", upscale.get("steps")),
                        ("upscaler", upscale.get("model")),
                        ("upscale_tile", upscale.get("tile")),
                    )
                    if v is not None
                }
            )

    def check_memory_options(self, cfg: ModelConfig) -> None:
        for flag, field_name, qtype in (("quantize", "qtype", cfg.qtype), ("quantize_te", "qtype_te", cfg.qtype_te)):
            if getattr(cfg, flag):
                problem = check_qtype(qtype, self.device)
                if problem:
                    raise BadRequest(("body", "model", field_name), problem)

    def resolve_lora(self, path: str, loc: tuple) -> str:
        """LoRA files are read from the engine's LoRA roots only (MODELS_PATH, assets, outputs by default).
        A folder means its diffusers LoRA file; the name is joined *before* links are resolved and the result
        checked, so a link of that name inside a root cannot point outside it."""
        candidate = os.path.expanduser(path)
        if os.path.isdir(candidate):
            candidate = os.path.join(candidate, "pytorch_lora_weights.safetensors")
        real = _request_path(candidate, loc)
        inside = any(is_inside(real, root) for root in self.lora_roots)
        if not inside:
            raise BadRequest(loc, f"{path!r} is outside the engine's LoRA folders ({', '.join(self.lora_roots)})")
        if not real.endswith(".safetensors") or not os.path.isfile(real):
            raise BadRequest(loc, f"{path!r} is not a .safetensors LoRA file")
        return real

    def resolve_upscaler(self, path: str, loc: tuple) -> str:
        """An upscaler file from the engine's model folders only (model_sources.py), checked as a LoRA file is:
        the real path, links resolved, inside a root, with a weights file's extension."""
        real = _request_path(os.path.expanduser(path), loc)
        roots = [os.path.abspath(r) for r in self.sources.roots]
        if not any(is_inside(real, root) for root in roots):
            raise BadRequest(loc, f"{path!r} is outside the engine's model folders ({', '.join(roots)})")
        if not real.endswith(upscalers.EXTENSIONS) or not os.path.isfile(real):
            raise BadRequest(loc, f"{path!r} is not an upscaler file ({', '.join(upscalers.EXTENSIONS)})")
        return real

    def prompt_loras(self, prompt: str, model_config: ModelConfig) -> str:
        """A1111's ``<lora:name:0.8>`` in the prompt: each tag is found by name in the LoRA library
        (lora_library.py) and added to the model's LoRAs (a LoRA already chosen takes the tag's multiplier);
        the prompt is encoded without the tags. An unreadable tag or an unknown name is a 422 at
        ``sample.prompt`` naming it."""
        loc = ("body", "sample", "prompt")
        try:
            clean, tags = split_lora_tags(prompt)
        except BadLoraTag as e:
            raise BadRequest(loc, str(e)) from None
        for tag in tags:
            try:
                entry = self.loras.resolve(tag.name)
            except UnknownLora as e:
                raise BadRequest(loc, str(e)) from None
            path = self.resolve_lora(entry["path"], loc)
            if model_config.lora_path == path:
                model_config.lora_multiplier = tag.multiplier
                continue
            chosen = next((e for e in model_config.loras if e["path"] == path), None)
            if chosen is not None:
                chosen["multiplier"] = tag.multiplier
            else:
                model_config.loras.append({"path": path, "multiplier": tag.multiplier})
        if len(model_config.lora_list()) > MAX_LORAS:
            raise BadRequest(loc, f"at most {MAX_LORAS} LoRAs at once, model.loras and <lora:…> tags together")
        return clean

    def resolve_image_ref(self, ref: str, loc: tuple) -> str:
        """An uploaded asset id, or a server path inside the assets or output folder; nothing else."""
        try:
            return self.assets.resolve(ref, extra_roots=[self.output_folder])
        except AssetError as e:
            raise BadRequest(loc, str(e)) from None


def _request_path(path: str, loc: tuple) -> str:
    try:
        return real_path(path)
    except AssetError as e:
        raise BadRequest(loc, str(e)) from None
