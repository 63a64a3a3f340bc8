"""PixArt-Sigma: DiT with a T5 text encoder on the SDXL VAE, epsilon prediction, 4-channel BCHW latents."""

from toolkit.models.archs.sdxl import SDXL_RGB_BIAS, SDXL_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class PixArtSigmaModel(BaseModel):
    arch = "pixart_sigma"
    modality = "image"
    description = "PixArt-Sigma"
    hub_id = "PixArt-alpha/PixArt-Sigma-XL-2-1024-MS"  # not in AI Toolkit's UI: diffusers' PixArtSigmaPipeline example
    pipeline_class = "PixArtSigmaPipeline"
    starts_from_latents = True  # image-to-image on its own pipeline (toolkit/models/latent_start.py)
    sampler_kind, default_sampler = "discrete", "DPM++ 2M"
    components = {
        "transformer": Component("diffusers.PixArtTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.T5EncoderModel", "text_encoder"),
        "tokenizer": Component("transformers.T5Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # The SDXL VAE: ComfyUI previews PixArt-Sigma with latent_formats.SDXL (comfy/supported_models.py).
    latent = LatentSpec(
        "BCHW",
        4,
        spatial_factor=8,
        rgb_factors=SDXL_RGB_FACTORS,
        rgb_bias=SDXL_RGB_BIAS,
        scale=0.13025,
        factors_source="ComfyUI SDXL",
    )
    divisibility = 16  # 8x VAE x 2x2 patches (the pipeline itself checks only 8)
    native_resolution = 1024
    defaults = dict(width=1024, height=1024, num_inference_steps=20, guidance_scale=4.5, output_ext="png")

    def pipeline_kwargs(self, gen):
        # Resolution binning would sample at the nearest trained aspect bucket and resize afterwards: the
        # latents would not have the requested shape. Caption cleaning needs bs4/ftfy and is off.
        return dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or "",
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            use_resolution_binning=False,
            clean_caption=False,
            **gen.extra_kwargs,
        )
