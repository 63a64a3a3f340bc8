"""Stable Diffusion 1.x: UNet, epsilon prediction, 4-channel BCHW latents."""

from toolkit.models.base_model import BaseModel, Component, LatentSpec

# ComfyUI latent_formats.SD15 (comfy/latent_formats.py); diffusers' loop latents are already x * 0.18215,
# the space these were fitted in.
SD15_RGB_FACTORS = (
    (0.3512, 0.2297, 0.3227),
    (0.3250, 0.4974, 0.2350),
    (-0.2829, 0.1762, 0.2721),
    (-0.2120, -0.2616, -0.7177),
)


class SD1Model(BaseModel):
    arch = "sd1"
    modality = "image"
    description = "Stable Diffusion 1.x"
    # AI Toolkit's UI offers it as sd15 (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx).
    hub_id = "stable-diffusion-v1-5/stable-diffusion-v1-5"
    pipeline_class = "StableDiffusionPipeline"
    img2img_pipeline, inpaint_pipeline = "StableDiffusionImg2ImgPipeline", "StableDiffusionInpaintPipeline"
    fill_channels, fill_pipeline = 9, "StableDiffusionInpaintPipeline"  # 4 latent + 1 mask + 4 masked-image
    sampler_kind = "discrete"  # epsilon prediction over the 1000-step noise table
    components = {
        "unet": Component("diffusers.UNet2DConditionModel", "unet", source="main"),
        "text_encoder": Component("transformers.CLIPTextModel", "text_encoder"),
        "tokenizer": Component("transformers.CLIPTokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    pipeline_init_kwargs = dict(
        safety_checker=None, feature_extractor=None, image_encoder=None, requires_safety_checker=False
    )
    latent = LatentSpec(
        "BCHW", 4, spatial_factor=8, rgb_factors=SD15_RGB_FACTORS, scale=0.18215, factors_source="ComfyUI SD15"
    )
    divisibility = 8
    native_resolution = 512
    defaults = dict(width=512, height=512, num_inference_steps=25, guidance_scale=7.5, output_ext="png")
