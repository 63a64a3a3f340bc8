"""AuraFlow v0.x: MMDiT with a UMT5 (Pile-T5) text encoder on the SDXL VAE, 4-channel BCHW latents."""

from toolkit.models.archs.sdxl import SDXL_RGB_BIAS, SDXL_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class AuraFlowModel(BaseModel):
    arch = "auraflow"
    modality = "image"
    description = "AuraFlow v0.3"
    hub_id = "fal/AuraFlow-v0.3"  # not in AI Toolkit's UI: fal's current AuraFlow (its card: 50 steps, CFG 3.5)
    pipeline_class = "AuraFlowPipeline"
    starts_from_latents = True  # image-to-image on its own pipeline (toolkit/models/latent_start.py)
    components = {
        "transformer": Component("diffusers.AuraFlowTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.UMT5EncoderModel", "text_encoder"),
        # The real repo ships a Llama-style fast tokenizer; AutoTokenizer reads whichever class a folder names.
        "tokenizer": Component("transformers.AutoTokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # The SDXL VAE: ComfyUI previews AuraFlow with latent_formats.SDXL (comfy/supported_models.py), on x * 0.13025,
    # the space the pipeline samples in.
    latent = LatentSpec(
        "BCHW",
        4,
        spatial_factor=8,
        rgb_factors=SDXL_RGB_FACTORS,
        rgb_bias=SDXL_RGB_BIAS,
        scale=0.13025,
        factors_source="ComfyUI SDXL",
    )
    divisibility = 16  # 8x VAE x 2x2 patches
    native_resolution = 1024
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=3.5, output_ext="png")
