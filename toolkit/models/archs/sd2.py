"""Stable Diffusion 2.x: SD 1.x's pipeline and VAE with an OpenCLIP-H text encoder (1024 wide), a UNet with linear
projections and per-block head counts, and v-prediction at 768x768 (stabilityai/stable-diffusion-2-1)."""

from toolkit.models.archs.sd1 import SD1Model


class SD2Model(SD1Model):
    arch = "sd2"
    description = "Stable Diffusion 2.x"
    hub_id = "stabilityai/stable-diffusion-2-1"
    group = "image"
    # Components, pipeline and latent space are SD 1.x's: the same StableDiffusionPipeline roles, the same KL-f8 VAE
    # (vae/config.json: scaling_factor 0.18215), and ComfyUI previews SD 2.x with latent_formats.SD15
    # (comfy/supported_models.py, SD20). What differs lives in the checkpoint's own configs: the UNet's widths, the
    # text encoder, and the scheduler (scheduler_config.json: DDIMScheduler with prediction_type v_prediction),
    # which the "auto" scheduler role loads as shipped.
    native_resolution = 768
    # The model card's call is the pipeline's own defaults at the checkpoint's 768x768 (sample_size 96 x 8);
    # steps as SD 1.x here (25 of its DDIM schedule).
    defaults = dict(width=768, height=768, num_inference_steps=25, guidance_scale=7.5, output_ext="png")
