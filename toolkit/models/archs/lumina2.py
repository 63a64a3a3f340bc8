"""Lumina-Image 2.0: Next-DiT with a Gemma-2 text encoder on Flux.1's 16-channel VAE, BCHW latents."""

from toolkit.models.archs.flux import FLUX_RGB_BIAS, FLUX_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class Lumina2Model(BaseModel):
    arch = "lumina2"
    modality = "image"
    description = "Lumina-Image 2.0"
    # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx).
    hub_id = "Alpha-VLLM/Lumina-Image-2.0"
    pipeline_class = "Lumina2Pipeline"
    starts_from_latents = True  # image-to-image on its own pipeline (toolkit/models/latent_start.py)
    components = {
        "transformer": Component("diffusers.Lumina2Transformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.Gemma2Model", "text_encoder"),
        "tokenizer": Component("transformers.GemmaTokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # Flux.1's VAE; ComfyUI previews Lumina2 with latent_formats.Flux (comfy/supported_models.py) on the same
    # (x - 0.1159) * 0.3611 space the pipeline samples in.
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
    divisibility = 16  # 8x VAE x 2x2 patches
    native_resolution = 1024
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=4.0, output_ext="png")
