"""PRXPixel (Photoroom/prxpixel-t2i): a 7B pixel-space DiT with no VAE. PRXPixelPipeline denoises RGB in [-1, 1]
directly (16x16 patches through a bottleneck projection, the output resolution as a timestep condition), the
transformer predicts the clean image, which the pipeline turns into a flow velocity before each scheduler step,
sampling starts from noise of std 2, and prompts go through the Qwen3-VL text tower (256 tokens). The sampled
"latents" are the image: toolkit/models/pixel_space.py says what the live preview streams of them."""

from toolkit.models.base_model import BaseModel, Component
from toolkit.models.pixel_space import PIXEL_LATENT, preview_pixels


def ensure_prx_text_cleaning() -> None:
    """PRXPixelPipeline cleans every prompt with ``ftfy.fix_text``, which diffusers imports only where ftfy is
    installed (a NameError otherwise). Without it, the cleaning's other half (HTML unescaping) still runs: the same
    no-op fallback as the Wan image-to-video module's (toolkit/models/archs/wan21_i2v.py)."""
    from diffusers.pipelines.prx import pipeline_prx_pixel

    if getattr(pipeline_prx_pixel, "ftfy", None) is None:
        try:
            import ftfy
        except ImportError:
            import types

            ftfy = types.SimpleNamespace(fix_text=lambda text: text)
        pipeline_prx_pixel.ftfy = ftfy


class PRXPixelModel(BaseModel):
    arch = "prx_pixel"
    modality = "image"
    description = "PRXPixel (Photoroom, pixel space)"
    hub_id = "Photoroom/prxpixel-t2i"
    group = "image"
    pipeline_class = "PRXPixelPipeline"
    components = {
        "transformer": Component("diffusers.PRXTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.Qwen3VLTextModel", "text_encoder"),
        "tokenizer": Component("transformers.AutoTokenizer", "tokenizer", has_weights=False),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    latent = PIXEL_LATENT
    divisibility = 16  # 16x16 pixel patches (the pipeline checks vae_scale_factor 1 x patch_size)
    native_resolution = 1024
    # The pipeline's documented call (and AI Toolkit's sample settings for it): 28 steps at guidance 5, 1024 px.
    defaults = dict(width=1024, height=1024, num_inference_steps=28, guidance_scale=5.0, output_ext="png")
    # Image-to-image and inpainting on its own pipeline (toolkit/models/latent_start.py): the start is the image
    # itself at -1..1, mixed with the pipeline's noise (std noise_scale) at the strength's sigma.
    starts_from_latents = True

    def build_pipeline(self):
        ensure_prx_text_cleaning()
        return super().build_pipeline()

    def pipeline_kwargs(self, gen):
        # Resolution binning would sample at the nearest trained aspect bucket and resize afterwards: the latents
        # would not have the requested shape. The pipeline refuses guidance below 1; 1 is its "no guidance" (one
        # forward a step), which is what 0 means to every other family here.
        return dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or "",
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=max(1.0, gen.guidance_scale),
            use_resolution_binning=False,
            **gen.extra_kwargs,
        )

    def sample_media(self, pipeline, gen, generator):
        """PRXPixelPipeline hands ``"pt"`` back as its raw [-1, 1] pixels (no VAE to decode them), so for pixels
        made 8-bit on the device it is asked for those and they are denormalised by its own image processor, as
        ``"np"`` would be on the host."""
        if self.pixel_output != "pt":
            return super().sample_media(pipeline, gen, generator)
        output = pipeline(**self.pipeline_kwargs(gen), generator=generator, output_type="latent")
        output.images = pipeline.image_processor.postprocess(output.images, output_type="pt")
        return self.to_media(output, gen)

    def unpack_latents(self, latents, gen):
        return preview_pixels(latents)

    def start_layout(self, latents, gen):
        return latents  # the picture itself, B x 3 x H x W
