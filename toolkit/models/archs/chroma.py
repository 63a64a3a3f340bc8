"""Chroma: Flux.1-schnell-derived transformer without CLIP (T5 only, real CFG); latents packed like Flux."""

from toolkit.models.archs.flux import FLUX_RGB_BIAS, FLUX_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class ChromaModel(BaseModel):
    arch = "chroma"
    modality = "image"
    description = "Chroma (Chroma1-HD / Base)"
    hub_id = "lodestones/Chroma1-Base"  # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx)
    pipeline_class = "ChromaPipeline"
    # ChromaInpaintPipeline reads ``transformer.config.guidance_embeds``, which Chroma's transformer config lacks.
    img2img_pipeline = "ChromaImg2ImgPipeline"
    starts_from_latents = True  # inpainting by the engine's latent blend (toolkit/models/latent_start.py)
    components = {
        "transformer": Component("diffusers.ChromaTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.T5EncoderModel", "text_encoder"),
        "tokenizer": Component("transformers.T5Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    pipeline_init_kwargs = dict(image_encoder=None, feature_extractor=None)
    # Flux.1's VAE and latent space (ComfyUI runs Chroma on latent_formats.Flux; comfy/supported_models.py).
    latent = LatentSpec(
        "BCHW",
        16,
        spatial_factor=8,
        rgb_factors=FLUX_RGB_FACTORS,
        rgb_bias=FLUX_RGB_BIAS,
        scale=0.3611,
        shift=0.1159,
        factors_source="ComfyUI Flux",
    )
    divisibility = 16
    native_resolution = 1024
    defaults = dict(width=1024, height=1024, num_inference_steps=40, guidance_scale=3.0, output_ext="png")

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or None,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            max_sequence_length=512,
            **gen.extra_kwargs,
        )

    def unpack_latents(self, latents, gen):
        from diffusers import ChromaPipeline

        return ChromaPipeline._unpack_latents(latents, gen.height, gen.width, self.latent.spatial_factor)
