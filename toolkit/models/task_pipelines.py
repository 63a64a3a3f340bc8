"""How a family runs a request that starts from an image (toolkit/models/from_image.py decides which task): the
pipeline for the task, its arguments, and the engine-started tasks' hooks (toolkit/models/latent_start.py). A base
class of ``BaseModel`` (toolkit/models/base_model.py), which declares the class attributes read here
(``img2img_pipeline``, ``inpaint_pipeline``, ``fill_channels``, ``fill_pipeline``, ``starts_from_latents``); this
class declares ``cannot_start`` and the video-to-video attributes."""

from __future__ import annotations

import contextlib
from typing import ClassVar, Optional

from toolkit.config_modules import GenerateImageConfig
from toolkit.media import GeneratedMedia
from toolkit.models import from_image, latent_start
from toolkit.models.components.loading import import_class
from toolkit.models.step_batching import RESIDENT_ATTR


def from_resident(cls, pipeline):
    """``cls.from_pipe(pipeline)`` with every shared module left in the dtype it has. diffusers' ``from_pipe`` ends by
    casting the new pipeline, that is the resident modules it shares, to the dtype it is given, float32 when none
    is: a bfloat16 denoiser became float32 in place, twice its memory (an image-to-image request out of memory on a
    24 GiB card) and several times its step, for every later request too (docs/BENCHMARKS.md "Starting from an
    image"). No one dtype is right for all of them (an upcast VAE, 8-bit layers), so the cast is skipped."""
    keeping = type(cls.__name__, (cls,), {"to": lambda self, *args, **kwargs: self})
    built = keeping.from_pipe(pipeline)
    built.__class__ = cls
    return built


class TaskPipelines:
    # Why a family starts from no image at all: the 422's words (request_checks.py).
    cannot_start: ClassVar[str] = ""
    # Video-to-video (toolkit/models/from_video.py): diffusers' class for it, built with from_pipe, and the name
    # its __call__ gives the strength; else why the video family cannot.
    vid2vid_pipeline: ClassVar[Optional[str]] = None
    vid2vid_own: ClassVar[bool] = False  # or on its own pipeline, as latent_start.py does (video_start_latents)
    vid2vid_strength: ClassVar[str] = "strength"
    cannot_start_video: ClassVar[str] = ""

    def fills(self) -> bool:
        """Whether the resident checkpoint is an inpainting one (its denoiser takes the mask and the masked image)."""
        denoiser = next((self.parts[r] for r, c in self.components.items() if c.source == "main"), None)
        channels = getattr(getattr(denoiser, "config", None), "in_channels", None)
        return self.fill_channels is not None and channels == self.fill_channels

    def task_for(self, gen: GenerateImageConfig) -> str:
        """The request's task; on an inpainting checkpoint every request is an inpaint (text-to-image repaints a
        blank canvas whole, image-to-image the whole input), as A1111 runs them."""
        task = from_image.task_of(gen)
        return from_image.INPAINT if self.fills() and task != from_image.ROUND_TRIP else task

    def task_pipeline(self, task: str):
        """The resident pipeline for text-to-image, and for a task the family runs on it (latent_start.py); else
        diffusers' class for the task made from the same components (``from_pipe``: no weight loads twice), built
        once per holder."""
        if task == from_image.TXT2IMG:
            return self.get_generation_pipeline()
        if task == from_image.INPAINT and self.fills():
            key, name = "fill", self.fill_pipeline
        else:
            named = {from_image.IMG2IMG: self.img2img_pipeline, from_image.INPAINT: self.inpaint_pipeline}
            key, name = task, named.get(task, self.vid2vid_pipeline if task == from_image.VID2VID else None)
        if name is None and (self.starts_from_latents or (task == from_image.VID2VID and self.vid2vid_own)):
            return self.get_generation_pipeline()
        if name is None:
            raise ValueError(f"{self.arch} cannot {task} (no diffusers pipeline for it)")
        built = self._task_pipelines.get(key)
        if built is None:
            built = from_resident(import_class(f"diffusers.{name}"), self.get_generation_pipeline())
            built.set_progress_bar_config(disable=True)
            self._task_pipelines[key] = built
        return built

    def _round_trip(self, gen: GenerateImageConfig) -> GeneratedMedia:
        """Strength 0: nothing to denoise, the input through the VAE and back (a pixel-space family, which has no
        VAE, returns the input itself)."""
        import numpy as np

        vae = self.parts.get("vae")
        image = from_image.rgb_image(from_image.start_path(gen), (gen.width, gen.height))
        return GeneratedMedia("image", image=np.asarray(image) if vae is None else from_image.round_trip(vae, image))

    def start_latents(self, image, raw: bool):
        """The input as the sampler starts from it, in ``start_layout``'s layout: its VAE encoding, or for a
        pixel-space family (no VAE: the sampled "latents" are the picture) the image itself at -1..1."""
        vae = self.parts.get("vae")
        return latent_start.encoded(vae, image, raw) if vae is not None else latent_start.pixels(image)

    def start_layout(self, latents, gen: GenerateImageConfig):
        """The pipeline's latents in the layout ``start_latents`` gives: the family's ``unpack_latents``, which
        latent_start.py runs backwards. Pixel-space families, whose preview unpacking averages 8x8 blocks (not a
        permutation), give the full-resolution image instead."""
        return self.unpack_latents(latents, gen)

    def is_resident(self, pipeline) -> bool:
        """The resident text-to-image pipeline, or a batched request's own copy of it (step_batching.py)."""
        return getattr(pipeline, RESIDENT_ATTR, pipeline) is self.pipeline

    def call_kwargs(self, pipeline, gen: GenerateImageConfig) -> dict:
        """What ``sample_media`` passes the pipeline: the family's ``pipeline_kwargs``, and for a request that
        starts from an image, its image, mask and strength, kept to what the task pipeline takes."""
        kwargs = self.pipeline_kwargs(gen)
        task = self.task_for(gen)
        if task == from_image.VID2VID:
            return kwargs if self.is_resident(pipeline) else self.vid2vid_kwargs(pipeline, gen, kwargs)
        if task not in (from_image.IMG2IMG, from_image.INPAINT) or self.is_resident(pipeline):
            return kwargs
        return from_image.task_kwargs(pipeline, gen, kwargs, *from_image.sampled_images(gen, whole=task == "inpaint"))

    def vid2vid_kwargs(self, pipeline, gen: GenerateImageConfig, kwargs: dict) -> dict:
        """The text-to-video arguments with the start video's frames (fitted to the request) and the strength,
        kept to what the task pipeline takes."""
        import inspect

        from toolkit.models import from_video

        frames = from_video.fitted_frames(gen.init_video, gen.num_frames, (gen.width, gen.height))
        merged = {**kwargs, "video": frames, self.vid2vid_strength: from_image.strength_of(gen)}
        takes = set(inspect.signature(type(pipeline).__call__).parameters)
        return {k: v for k, v in merged.items() if k in takes}

    def video_start_latents(self, frames, raw: bool):
        """A ``vid2vid_own`` family's start video in ``start_layout``'s layout (its own encoding and scaling)."""
        raise NotImplementedError(f"{self.arch} declares vid2vid_own without video_start_latents")

    def _started_from_latents(self, pipeline, gen: GenerateImageConfig):
        """Image-to-image and inpainting (and a ``vid2vid_own`` family's video-to-video) on the text-to-image
        pipeline, for a family without diffusers' class for the task (toolkit/models/latent_start.py)."""
        task = self.task_for(gen)
        if not self.is_resident(pipeline):
            return contextlib.nullcontext()
        mask = None
        if task == from_image.VID2VID and self.vid2vid_own:
            from toolkit.models import from_video

            frames = from_video.fitted_frames(gen.init_video, gen.num_frames, (gen.width, gen.height))
            start = lambda raw: self.video_start_latents(frames, raw)  # noqa: E731
        elif task in (from_image.IMG2IMG, from_image.INPAINT):
            init, mask = from_image.sampled_images(gen)
            start = lambda raw: self.start_latents(init, raw)  # noqa: E731
        else:
            return contextlib.nullcontext()
        return latent_start.started_from(
            pipeline,
            unpack=lambda latents: self.start_layout(latents, gen),
            start=start,
            strength=from_image.strength_of(gen),
            flow=self.sampler_kind == "flow",
            mask=None if mask is None else lambda shape: latent_start.latent_mask(mask, shape),
        )
