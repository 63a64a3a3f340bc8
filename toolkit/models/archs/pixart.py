"""PixArt-alpha: PixArt-Sigma's DiT shape and T5 on SD 1.x's VAE, conditioned on the output's resolution and aspect
ratio at 1024 px (PixArt-alpha/PixArt-XL-2-1024-MS); epsilon prediction, 4-channel BCHW latents."""

from toolkit.models.archs.pixart_sigma import PixArtSigmaModel
from toolkit.models.archs.sd1 import SD15_RGB_FACTORS
from toolkit.models.base_model import LatentSpec


class PixArtAlphaModel(PixArtSigmaModel):
    arch = "pixart"
    description = "PixArt-alpha"
    hub_id = "PixArt-alpha/PixArt-XL-2-1024-MS"
    group = "image"
    # Sigma's roles (transformer, T5 encoder and tokenizer, VAE, scheduler) and call; PixArtAlphaPipeline encodes
    # 120 T5 tokens (its max_sequence_length default, as the model was trained) and, for a transformer of
    # sample_size 128, passes the requested size and aspect ratio as micro-conditions.
    pipeline_class = "PixArtAlphaPipeline"
    # The VAE is SD's KL-f8 (sd-vae-ft-ema: scaling_factor 0.18215); ComfyUI previews PixArt-alpha with
    # latent_formats.SD15 (comfy/supported_models.py, PixArtAlpha), which has no bias row.
    latent = LatentSpec(
        "BCHW", 4, spatial_factor=8, rgb_factors=SD15_RGB_FACTORS, scale=0.18215, factors_source="ComfyUI SD15"
    )
    # The model card's call is PixArtAlphaPipeline's defaults: 20 DPM-Solver steps at guidance 4.5, 1024 px.
    defaults = dict(width=1024, height=1024, num_inference_steps=20, guidance_scale=4.5, output_ext="png")
