"""BaseModel: a family's components by role, its diffusers pipeline, and ``generate_images``.

A family file (``toolkit/models/archs/<family>.py``) subclasses BaseModel and declares, as class attributes,
everything a caller needs to know without loading weights: modality, pipeline class, component roles, latent
spec, defaults and divisibility. The methods it overrides say how to call its pipeline and how to read what
comes back. Loading, seeding, the step hook and state restoration live here once.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ClassVar, Optional

from toolkit import samplers
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.media import GeneratedMedia, save_generated
from toolkit.memory_plan import OFF_GPU, Plan, WorkingSet
from toolkit.models import arch_tags, from_image, tiny
from toolkit.models.attention import attention_kernels
from toolkit.models.components.loading import end_group_offload_call, import_class, load_component
from toolkit.models.lora import LoraMismatch, adapter_name, load_lora, loaded_adapters
from toolkit.models.lora_hotswap import apply_to_slots
from toolkit.models.lora_patch import patch_loras
from toolkit.models.lora_patch import restore as restore_patched
from toolkit.models.memory_inputs import MemoryInputs
from toolkit.models.modulation import follow_schedule
from toolkit.models.prompt_cache import prompt_cache
from toolkit.models.rng_state import RngState
from toolkit.models.speed import step_cache
from toolkit.models.streaming import STREAM_ATTR
from toolkit.models.task_pipelines import TaskPipelines
from toolkit.models.vae_tiling import set_vae_tiling, smaller_tiles_on_oom, tile_px
from toolkit.pixels import pipeline_pixels_to_uint8
from toolkit.sample_step_hook import SchedulerStep, step_hook

Hook = Callable[..., None]


@dataclass(frozen=True)
class Component:
    """One role of a pipeline. ``source`` says which config key supplies it: the denoiser comes from
    ``name_or_path``; text encoders, tokenizers, VAE and scheduler from ``extras_name_or_path`` (AI Toolkit's
    split, which is what lets two fine-tunes of one base share everything but the denoiser)."""

    cls: str  # import path, or "auto" for the scheduler the checkpoint names
    subfolder: str
    source: str = "extras"  # "main" | "extras"
    has_weights: bool = True  # tokenizers and schedulers take no dtype or device


@dataclass(frozen=True)
class LatentSpec:
    """How streamed latents are laid out and how a client turns them into a preview.

    Streamed latents are in the denoiser's space (what the scheduler steps), which is the space ComfyUI's
    ``latent_rgb_factors`` were fitted in; ``scale``/``shift`` tell a client how to get back to VAE space."""

    layout: str  # BCHW | BCFHW | BLC
    channels: int
    spatial_factor: int = 8
    temporal_factor: int = 1
    rgb_factors: Optional[tuple] = None  # channels x 3
    rgb_bias: Optional[tuple] = None  # 3
    scale: float = 1.0
    shift: float = 0.0
    factors_source: Optional[str] = None  # which ComfyUI latent format the numbers come from

    def to_dict(self) -> dict:
        d = asdict(self)
        d["rgb_factors"] = [list(r) for r in self.rgb_factors] if self.rgb_factors else None
        d["rgb_bias"] = list(self.rgb_bias) if self.rgb_bias else None
        return d


NOT_FINITE_WARNING = (
    "Warning: the sampler's final latents hold NaN or infinite values, so the output will be "
    "blank. Usual causes: float16 overflow (use bf16), or 8-bit weights or activations this model "
    "does not tolerate (set quantize: false, or engine.memory_qtype: float8 or none)"
)


@dataclass
class SampleStep:
    """One denoising step as the engine sees it: latents come unpacked into the family's declared layout."""

    step: int
    num_steps: int
    raw: SchedulerStep = field(repr=False)
    model: "BaseModel" = field(repr=False)
    gen: GenerateImageConfig = field(repr=False)

    @property
    def timestep(self) -> float:
        return self.raw.timestep

    def latents(self, kind: str = "raw"):
        tensor = self.raw.x0() if kind == "x0" else self.raw.sample
        return self.model.unpack_latents(tensor, self.gen)


class BaseModel(arch_tags.ArchPicker, MemoryInputs, TaskPipelines):  # arch_tags.py, memory_inputs.py, task_pipelines.py
    arch: ClassVar[str]
    modality: ClassVar[str]  # image | video | audio
    pipeline_class: ClassVar[str]
    components: ClassVar[dict[str, Component]]
    pipeline_init_kwargs: ClassVar[dict] = {}
    latent: ClassVar[LatentSpec]
    divisibility: ClassVar[int] = 8
    control_images: ClassVar[int] = 0  # how many control images a request must bring
    max_control_images: ClassVar[int] = 0  # how many it may bring, where more than it must (0: control_images)
    takes_lyrics: ClassVar[bool] = False  # sample.lyrics means something to this family (forms show the field)
    defaults: ClassVar[dict] = {}  # width, height, num_inference_steps, guidance_scale, num_frames, fps, output_ext
    output_exts: ClassVar[tuple] = ("png", "jpg", "webp")
    native_resolution: ClassVar[int] = 1024
    description: ClassVar[str] = ""
    working_set: ClassVar[WorkingSet] = WorkingSet()  # what sampling and decoding allocate (the memory plan's input)
    # An automatic plan's 8-bit denoiser runs its matmuls in float8 (float8dq) on float8 tensor cores; a family whose
    # step is slower so says False and gets float8 weights only (an explicit engine.memory_qtype wins). Video families
    # say False: their compute-bound steps hide weight dequantizing (HunyuanVideo 1.5 at 24 GiB: 1.02x the full card),
    # while per-row activation scaling grows with tokens (Wan 2.1 I2V 480p: twice the bf16 working set, out of memory at
    # 24 GiB; HunyuanVideo 1.5: a blank video): docs/MEASURED.md "Float8 activations on video denoisers".
    float8_activations: ClassVar[bool] = True
    # qtype -> PSNR in dB of the family's output with that 8-bit denoiser against bf16 at real size (family_sweep.py
    # --quality; docs/BENCHMARKS.md "Memory plan"); ``engine.memory_quality: balanced`` takes 8 bits only from 35 dB
    # (toolkit/memory_quality.py). A qtype not listed is not measured: balanced keeps 16-bit weights where they fit.
    quality_8bit_db: ClassVar[dict] = {}
    step_cache: ClassVar[Optional[str]] = None  # the ``cache`` speed tier's kind (toolkit/models/speed.py), if any
    # Fewest steps the family's scheduler can take: Qwen-Image's and LTX-2's stretch sigmas to a terminal shift,
    # which divides by zero at one step (NaN sigmas, a blank result), so they say 2.
    min_steps: ClassVar[int] = 1
    # How the family was trained decides which samplers fit it (toolkit/samplers.py: discrete, flow or own) and
    # the A1111 name of the checkpoint's own scheduler, the default one.
    sampler_kind: ClassVar[str] = "flow"
    default_sampler: ClassVar[str] = "Euler"
    # diffusers' image-to-image and inpainting classes for the family, built from the resident components with
    # ``from_pipe`` when a request starts from an image (toolkit/models/from_image.py); None: it cannot yet.
    img2img_pipeline: ClassVar[Optional[str]] = None
    inpaint_pipeline: ClassVar[Optional[str]] = None
    # No diffusers image-to-image class, but the family's own pipeline can start from the encoded input
    # (toolkit/models/latent_start.py): image-to-image without a second pipeline.
    starts_from_latents: ClassVar[bool] = False
    # A dedicated inpainting checkpoint of the family (SD's 9-channel UNets, Flux Fill): the denoiser's input
    # channels that mark one, and the pipeline that feeds them; every request on one runs through it.
    fill_channels: ClassVar[Optional[int]] = None
    fill_pipeline: ClassVar[Optional[str]] = None
    # Whether requests on one resident holder may share denoiser calls (toolkit/models/step_batching.py).
    batchable: ClassVar[bool] = True
    sampler_names: ClassVar[Optional[tuple]] = None  # those of its kind the family's pipeline can drive (None: all)
    # Pixels made 8-bit on the GPU ("pt", toolkit/pixels.py), the same bytes as "np" (testing/test_models.py)
    pixel_output: ClassVar[str] = "pt"

    def __init__(self, device: str, model_config: ModelConfig, dtype: Optional[str] = None):
        self.device = device
        self.model_config = model_config
        self.dtype = self._resolve_dtype(dtype or model_config.dtype, device)
        self.parts: dict[str, Any] = {}
        self.pipeline = None
        self._task_pipelines: dict = {}  # task -> the pipeline from_pipe made for it (task_pipeline)
        self.plan: Optional[Plan] = None  # set by the engine's memory planner; else from the config's options
        self.attention: Optional[str] = None  # the SDPA kernel tried first (engine.attention); None: PyTorch's order
        self._thread = threading.local()  # each batched request's thread has its own step hook (step_batching.py)
        self._status_hooks: list[Hook] = []
        self._after_sample_hooks: list[Hook] = []
        # Whether a denoiser (role, module) is or will be compiled; the resident engine sets engine.compile's answer.
        self.will_compile: Callable[[str, Any], bool] = lambda role, module: bool(getattr(module, "_aitk_compiled", 0))
        self.lora_patch = False  # engine.lora_patch: LoRAs go into the weights instead of staying adapters

    @property
    def sample_step_hook(self) -> Optional[Callable[["SampleStep"], None]]:
        return getattr(self._thread, "step_hook", None)

    @sample_step_hook.setter
    def sample_step_hook(self, fn: Optional[Callable[["SampleStep"], None]]) -> None:
        self._thread.step_hook = fn

    @staticmethod
    def _resolve_dtype(dtype: str, device: str) -> str:
        # Half precision on CPU is slow and several CPU kernels lack it; it is a GPU setting.
        if str(device).startswith("cpu") and dtype in ("float16", "fp16", "half"):
            return "float32"
        return dtype

    # ------------------------------------------------------------------ hooks
    def add_status_update_hook(self, fn: Hook) -> None:
        self._status_hooks.append(fn)

    def add_after_sample_image_hook(self, fn: Hook) -> None:
        self._after_sample_hooks.append(fn)

    def _status_update(self, message: str, stage: Optional[str] = None) -> None:
        for fn in self._status_hooks:
            fn(message, stage)

    def print_and_status_update(self, message: str, stage: Optional[str] = None) -> None:
        print(message, flush=True)
        self._status_update(message, stage)

    def _after_sample_image(self, index: int, total: int) -> None:
        for fn in self._after_sample_hooks:
            fn(index, total)

    # ------------------------------------------------------------------ loading
    def load_model(self) -> None:
        self.plan = self.plan or self.options_plan()
        for role, comp in self.components.items():
            self.print_and_status_update(f"Loading {self.arch}: {role.replace('_', ' ')}", "loading")
            self.parts[role] = self.load_component(role, comp)
        self.pipeline = self.build_pipeline()
        self._task_pipelines = {}
        self.apply_lora()
        self.apply_offloading()

    def apply_lora(self) -> None:
        """Make the LoRA state of the (possibly shared) denoiser match this config.

        Adapters stay unmerged (PEFT): the base weights never change, so a denoiser shared through the pool
        keeps its identity, and switching LoRAs loads only the adapter. Adapters this config does not want are
        deleted, so a holder without a LoRA samples exactly the base model. Under ``engine.lora_patch`` they are
        added into the weights instead, with the originals kept and copied back exactly (lora_patch.py)."""
        pipe, loras = self.pipeline, self.model_config.lora_list()
        if not hasattr(pipe, "get_list_adapters"):
            if loras:
                raise LoraMismatch(f"{self.arch}: its pipeline cannot load LoRA weights")
            return
        if self.lora_patch and patch_loras(self, pipe, loras):
            return  # engine.lora_patch: in the weights, the originals kept (toolkit/models/lora_patch.py)
        restore_patched(self)
        if apply_to_slots(self, pipe, loras):
            return  # a compiled denoiser: LoRAs hot-swap into fixed slots instead of recompiling it
        wanted = {adapter_name(path): (path, weight) for path, weight in loras}
        loaded = loaded_adapters(pipe)
        if stale := sorted(loaded - set(wanted)):
            pipe.delete_adapters(stale)
        for name, (path, _) in wanted.items():
            if name not in loaded:
                self.print_and_status_update(f"Loading {self.arch}: LoRA {os.path.basename(path)}", "loading")
                self.print_and_status_update(
                    load_lora(pipe, path, name, self.arch, **self.lora_load_kwargs(path)), "loading"
                )
        if wanted:
            pipe.set_adapters(list(wanted), adapter_weights=[weight for _, weight in wanted.values()])

    def encoding_loras(self) -> tuple:
        """The LoRAs that change what the text encoders give (the prompt cache's key): all of them once one reaches
        an encoder, else none. Most LoRAs adapt the denoiser alone, and then a prompt is encoded once for all of
        them, as a compare grid's checkpoints need (docs/BENCHMARKS.md "Compare grids")."""
        loras = tuple(self.model_config.lora_list())
        listed = getattr(self.pipeline, "get_list_adapters", None)
        if not loras or listed is None:
            return loras
        denoisers = {role for role, comp in self.components.items() if comp.source == "main"}
        return loras if any(adapters for role, adapters in listed().items() if role not in denoisers) else ()

    def lora_load_kwargs(self, path: str) -> dict:
        """Extra arguments for diffusers' LoRA loader for this file: a family with two denoisers routes some
        files to the second one."""
        return {}

    def apply_offloading(self) -> None:
        """Components placed ``visit`` get model CPU offload in diffusers' order, moving weights through pinned host
        copies (``toolkit/models/offload.py``); the others stay where they loaded. ``stream`` is applied per
        component in the load funnel (diffusers group offloading)."""
        visitors = {
            role for role, placement in self.plan.placements.items() if placement in ("visit", "quantized_visit")
        }
        if visitors and self._on_gpu():
            from toolkit.models.offload import enable_low_vram

            enable_low_vram(self.pipeline, self.device, visitors)

    def load_component(self, role: str, comp: Component):
        cfg = self.model_config
        source = cfg.name_or_path if comp.source == "main" else cfg.extras_name_or_path
        if not comp.has_weights:
            return load_component(comp.cls, source, comp.subfolder, report=self._report_download)
        placement = self.plan.placements.get(role, "gpu")
        qtype = None
        if placement.startswith("quantized"):
            qtype = self.plan.qtype_for(role) or (cfg.qtype if comp.source == "main" else cfg.qtype_te)
        # Off the GPU a module is loaded where it waits: the host for one that visits (8-bit ones are quantized
        # there, as every quantized load is) or streams. The device is part of the pool's identity.
        waits_on_host = placement in OFF_GPU and self._on_gpu()
        offload = None
        if placement in ("stream", "quantized_stream") and self._on_gpu():
            # toolkit/models/streaming.py: a denoiser keeps what fits; diffusers' leaf offloading can't move 8-bit
            offload = "blocks" if comp.source == "main" else "group:leaf"
            offload = "blocks:encoder" if offload == "group:leaf" and placement == "quantized_stream" else offload
        return load_component(
            comp.cls,
            source,
            comp.subfolder,
            dtype=self.dtype,
            device="cpu" if waits_on_host else self.device,
            config_source=cfg.extras_name_or_path,
            qtype=qtype,
            offload=offload,
            onload_device=self.device,
            variant=cfg.variant,
            report=self._report_download,
        )

    def _report_download(self, message: str) -> None:
        self.print_and_status_update(message, "loading")

    def _on_gpu(self) -> bool:
        return str(self.device).startswith("cuda")

    def build_pipeline(self):
        pipe = import_class(f"diffusers.{self.pipeline_class}")(**self.parts, **self.pipeline_init_kwargs)
        pipe.set_progress_bar_config(disable=True)
        return pipe

    def get_generation_pipeline(self):
        if self.pipeline is None:
            raise RuntimeError(f"{self.arch}: load_model() has not run")
        return self.pipeline

    # ------------------------------------------------------------------ per-family behaviour
    def prepare_gen_config(self, gen: GenerateImageConfig) -> None:
        """Snap sizes (and frames) to what the family can sample; callers report the snapped values."""
        gen.snap_size(self.divisibility)
        if self.modality == "video":
            gen.snap_frames(self.latent.temporal_factor)

    def pipeline_kwargs(self, gen: GenerateImageConfig) -> dict:
        return dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or None,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            **gen.extra_kwargs,
        )

    def to_media(self, output, gen: GenerateImageConfig) -> GeneratedMedia:
        """Images (H x W x 3) or frames (F x H x W x 3) in [0, 1]; with ``"pt"`` tensors, channels first. Audio
        families, and video with a sound track, override this."""
        pixels = pipeline_pixels_to_uint8(output.frames[0] if self.modality == "video" else output.images[0])
        if self.modality == "video":
            return GeneratedMedia("video", frames=pixels, fps=gen.fps)
        return GeneratedMedia("image", image=pixels)

    def control_image(self, gen: GenerateImageConfig, index: int = 0, size: Optional[tuple] = None):
        """The request's index-th control image as RGB PIL, resized to ``size`` (width, height) when given."""
        from PIL import Image

        paths = gen.control_images
        if index >= len(paths):
            raise ValueError(f"{self.arch} needs control image {index + 1} (ctrl_img_{index + 1})")
        with Image.open(paths[index]) as img:
            img = img.convert("RGB")
        return img.resize(size, Image.LANCZOS) if size else img

    def unpack_latents(self, latents, gen: GenerateImageConfig):
        """Families whose pipelines pack latents into tokens override this to give the declared layout."""
        return latents

    def latent_shape(self, gen: GenerateImageConfig) -> tuple:
        f = self.latent.spatial_factor
        if self.latent.layout == "BCHW":
            return (1, self.latent.channels, gen.height // f, gen.width // f)
        if self.latent.layout == "BCFHW":
            frames = (gen.num_frames - 1) // self.latent.temporal_factor + 1
            return (1, self.latent.channels, frames, gen.height // f, gen.width // f)
        raise NotImplementedError(f"{self.arch} must define latent_shape for layout {self.latent.layout}")

    def sample_media(self, pipeline, gen: GenerateImageConfig, generator) -> GeneratedMedia:
        """One request through the pipeline: the image, frames or audio it made, as arrays. (AI Toolkit's
        ``generate_single_image`` returns one PIL image; families here override this for video and audio.)"""
        output = pipeline(**self.call_kwargs(pipeline, gen), generator=generator, output_type=self.pixel_output)
        return self.to_media(output, gen)

    # ------------------------------------------------------------------ generation
    def generate_images(self, image_configs: list[GenerateImageConfig], pipeline=None) -> list[dict]:
        """Generate and save each config; returns the saved files' metadata in order."""
        results = []
        for i, gen in enumerate(image_configs):
            media = self.generate_media(gen, pipeline)
            self._status_update("Saving", "saving")
            results.append(save_generated(media, gen, i, len(image_configs)))
            self._after_sample_image(i, len(image_configs))
        return results

    def generate_media(self, gen: GenerateImageConfig, pipeline=None, batch=None) -> GeneratedMedia:
        """One generation, decoded but not saved (the engine saves on another thread while it samples the next).
        ``batch``: the request's place in a step batch (toolkit/models/step_batching.py), or None to run alone.

        RNG state and module placement are put back even when a hook raises (a cancel), so the next request on
        this holder with the same seed reproduces an uncancelled run byte for byte."""
        rng = RngState.capture()
        placement = self._placement()
        try:
            self.prepare_gen_config(gen)
            task = self.task_for(gen)
            if task == from_image.ROUND_TRIP:
                return self._round_trip(gen)
            pipeline = pipeline or self.task_pipeline(task)
            media = self._sample(batch.pipeline(pipeline) if batch else pipeline, gen, batch)
            if task == from_image.INPAINT:  # the kept region is the input's own pixels, not a VAE round trip
                media.image = from_image.composite(media.image, *from_image.start_images(gen, whole=True))
            return media
        except BaseException:
            self.release_scratch()
            raise
        finally:
            rng.restore()
            self._restore_placement(placement)

    def release_scratch(self) -> None:
        """After a failed generation. diffusers' causal video VAEs (Wan, Qwen-Image) clear each chunk's features
        only when a decode finishes: one that ran out of memory kept ~5 GB (testing/test_gpu_regressions.py::
        test_an_oom_halfway_through_a_video_decode_leaves_no_vae_features_allocated).
        Streamed and group-offloaded modules hold what the failed call brought to the GPU: their offloading ends."""
        for module in self.parts.values():
            if callable(getattr(type(module), "clear_cache", None)):
                module.clear_cache()
            if (stream := getattr(module, STREAM_ATTR, None)) is not None:
                stream.end_call()
            end_group_offload_call(module)

    def _sample(self, pipeline, gen: GenerateImageConfig, batch=None) -> GeneratedMedia:
        import torch

        RngState.seed(gen.seed)
        generator = torch.Generator(device="cpu").manual_seed(gen.seed)
        self._status_update("Encoding prompt", "encoding")
        hook = self._step_callback(gen, batch) if self.sample_step_hook or batch else None
        with (
            batch.sampling() if batch else contextlib.nullcontext(),
            self._set_vae_tiling(bool(self.plan and self.plan.vae_tiling)),
            torch.inference_mode(),
            attention_kernels(self.attention),
            step_cache(self, gen),
            prompt_cache(pipeline, self.encoding_loras()),
            samplers.sampling_with(pipeline, self.scheduler_for(pipeline, gen)),
            self._started_from_latents(pipeline, gen),
            step_hook(pipeline, hook),
            follow_schedule(pipeline),
            self._sampling_announced_on_first_call(),
        ):
            return self.sample_media(pipeline, gen, generator)

    def scheduler_for(self, pipeline, gen: GenerateImageConfig):
        """The request's sampler built from the checkpoint's scheduler (None: the checkpoint's own runs as is)."""
        name, schedule = samplers.resolve(type(self), gen.sampler, gen.scheduler)
        scheduler = samplers.build(type(self), pipeline.scheduler, name, schedule)
        # Reported and written into the file as run: the checkpoint's own by the name A1111 gives it.
        gen.sampler = name or samplers.name_of(pipeline.scheduler, type(self))
        gen.scheduler = schedule
        return scheduler

    @contextlib.contextmanager
    def _sampling_announced_on_first_call(self):
        """The ``sampling`` status as the denoiser starts its first step: a video's first step takes up to half a
        minute (HunyuanVideo's step: docs/BENCHMARKS.md "Speed per family"), which would otherwise be reported (and its
        peak memory counted) as encoding."""
        import torch

        handles, own_thread = [], threading.get_ident()

        def first_call(module, args):
            if threading.get_ident() != own_thread:  # another batched request's call
                return
            while handles:
                handles.pop().remove()
            self._status_update("Sampling", "sampling")

        for role, comp in self.components.items():
            if comp.source == "main" and isinstance(self.parts.get(role), torch.nn.Module):
                handles.append(self.parts[role].register_forward_pre_hook(first_call))
        try:
            yield
        finally:
            while handles:
                handles.pop().remove()

    def _set_vae_tiling(self, on: bool):
        """Per generation (a pooled VAE keeps no other plan's setting); a decode out of memory retries smaller."""
        vae, tile = self.parts.get("vae"), (self.plan and self.plan.vae_tile) or tile_px(self)
        set_vae_tiling(vae, on, tile)
        return smaller_tiles_on_oom(self, vae, tile if on else None, lambda m: self._status_update(m, "decoding"))

    def _step_callback(self, gen: GenerateImageConfig, batch=None):
        hook = self.sample_step_hook

        def on_step(raw: SchedulerStep) -> None:
            if raw.index + 1 == raw.num_steps and batch:
                batch.done_sampling()  # the others go on while this one decodes (and while its hook runs)
            if hook is not None:
                hook(SampleStep(raw.index, raw.num_steps, raw, self, gen))
            if raw.index + 1 == raw.num_steps:
                self._warn_if_not_finite(raw.sample)
                self._status_update("Decoding", "decoding")

        return on_step

    def _warn_if_not_finite(self, latents) -> None:
        """NaN or infinite final latents decode to a blank (black) file that is otherwise saved as a success; the
        user is told why while it decodes. One device sync, on the last step only."""
        import torch

        if torch.is_tensor(latents) and not bool(torch.isfinite(latents).all()):
            self._status_update(NOT_FINITE_WARNING, "sampling")

    def _placement(self) -> dict:
        return {role: _module_device(m) for role, m in self.parts.items() if _module_device(m) is not None}

    def _restore_placement(self, placement: dict) -> None:
        for role, device in placement.items():
            module = self.parts[role]
            # A streamed module's place is its stream's: .to("cpu") left FLUX.2-dev's encoder half on the CPU
            # (testing/test_offload.py::
            # test_after_a_failed_call_the_holder_ends_a_streamed_modules_call_instead_of_moving_it).
            if getattr(module, STREAM_ATTR, None) is None and _module_device(module) != device:
                module.to(device)

    @classmethod
    def describe(cls) -> dict:
        """What ``GET /models`` serves for this family: enough for a client to build a form and a preview."""
        return {
            "arch": cls.arch,
            "modality": cls.modality,
            "description": cls.description,
            "pipeline": cls.pipeline_class,
            "control_images": cls.control_images,
            "max_control_images": max(cls.control_images, cls.max_control_images),
            "takes_lyrics": cls.takes_lyrics,
            "divisibility": cls.divisibility,
            "min_steps": cls.min_steps,
            "native_resolution": cls.native_resolution,
            "defaults": dict(cls.defaults),
            "output_exts": list(cls.output_exts),
            "tiny_sample": tiny.sample(cls.arch),
            "latent": cls.latent.to_dict(),
            **samplers.describe(cls),  # samplers (the default first) and their schedule types
            "tasks": list(from_image.tasks_of(cls)),  # txt2img, and img2img / inpaint where it can start from an image
        } | cls.picker_facts()  # group, hub_id, tags


def _module_device(module) -> Optional[str]:
    first = next(iter(module.parameters()), None) if hasattr(module, "parameters") else None
    return str(first.device) if first is not None else None
