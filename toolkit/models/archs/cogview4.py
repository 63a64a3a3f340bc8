"""CogView4-6B: DiT with a GLM-4 text encoder on a 16-channel VAE (scaling 1.0), BCHW latents."""

from toolkit.memory_plan import WorkingSet
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class CogView4Model(BaseModel):
    arch = "cogview4"
    modality = "image"
    description = "CogView4-6B"
    hub_id = "THUDM/CogView4-6B"  # not in AI Toolkit's UI: diffusers' CogView4Pipeline example
    pipeline_class = "CogView4Pipeline"
    starts_from_latents = True  # image-to-image on its own pipeline (toolkit/models/latent_start.py)
    # Its dynamic shift is linear; diffusers' DPM-Solver shifts exponentially only (and asserts so).
    sampler_names = ("Euler", "Heun", "UniPC")
    components = {
        "transformer": Component("diffusers.CogView4Transformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.GlmModel", "text_encoder"),
        "tokenizer": Component("transformers.AutoTokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # No ComfyUI latent format has factors for CogView4's VAE (comfy/supported_models.py): clients fall back to
    # scaling the first three channels.
    latent = LatentSpec("BCHW", 16, spatial_factor=8, scale=1.0, factors_source=None)
    divisibility = 32  # the model card's rule (the pipeline itself checks 16)
    native_resolution = 1024
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=3.5, output_ext="png")
    # Measured at 1024x1024 (testing/test_working_sets.py): decoding 4.8 GiB over the weights (4.4 KB per pixel);
    # sampling 0.45 GiB.
    working_set = WorkingSet(per_pixel=5 * 1024)
