"""How a family runs a request that starts from an image (toolkit/models/from_image.py decides which task): the
pipeline for the task, its arguments, and the engine-started tasks' hooks (toolkit/models/latent_start.py). A base
class of ``BaseModel`` (toolkit/models/base_model.py), which declares the class attributes read here
(``img2img_pipeline``, ``inpaint_pipeline``, ``fill_channels``, ``fill_pipeline``, ``starts_from_latents``)."""

from __future__ import annotations

import contextlib

from toolkit.config_modules import GenerateImageConfig
from toolkit.media import GeneratedMedia
from toolkit.models import from_image, latent_start
from toolkit.models.components.loading import import_class


class TaskPipelines:
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
            key, name = (
                task,
                {from_image.IMG2IMG: self.img2img_pipeline, from_image.INPAINT: self.inpaint_pipeline}[task],
            )
        if name is None and self.starts_from_latents:
            return self.get_generation_pipeline()
        if name is None:
            raise ValueError(f"{self.arch} cannot {task} (no diffusers pipeline for it)")
        built = self._task_pipelines.get(key)
        if built is None:
            built = import_class(f"diffusers.{name}").from_pipe(self.get_generation_pipeline())
            built.set_progress_bar_config(disable=True)
            self._task_pipelines[key] = built
        return built

    def _round_trip(self, gen: GenerateImageConfig) -> GeneratedMedia:
        """Strength 0: nothing to denoise, the input through the VAE and back."""
        vae = self.parts["vae"]
        image = from_image.rgb_image(gen.init_image, (gen.width, gen.height))
        return GeneratedMedia("image", image=from_image.round_trip(vae, image))

    def call_kwargs(self, pipeline, gen: GenerateImageConfig) -> dict:
        """What ``sample_media`` passes the pipeline: the family's ``pipeline_kwargs``, and for a request that
        starts from an image, its image, mask and strength, kept to what the task pipeline takes."""
        kwargs = self.pipeline_kwargs(gen)
        task = self.task_for(gen)
        if task not in (from_image.IMG2IMG, from_image.INPAINT) or pipeline is self.pipeline:
            return kwargs
        return from_image.task_kwargs(pipeline, gen, kwargs, *from_image.sampled_images(gen, whole=task == "inpaint"))

    def _started_from_latents(self, pipeline, gen: GenerateImageConfig):
        """Image-to-image and inpainting on the text-to-image pipeline, for a family without diffusers' class for
        the task (toolkit/models/latent_start.py)."""
        if pipeline is not self.pipeline or self.task_for(gen) not in (from_image.IMG2IMG, from_image.INPAINT):
            return contextlib.nullcontext()
        vae = self.parts["vae"]
        init, mask = from_image.sampled_images(gen)
        return latent_start.started_from(
            pipeline,
            unpack=lambda latents: self.unpack_latents(latents, gen),
            start=lambda raw: latent_start.encoded(vae, init, raw),
            strength=from_image.strength_of(gen),
            flow=self.sampler_kind == "flow",
            mask=None if mask is None else lambda shape: latent_start.latent_mask(mask, shape),
        )
