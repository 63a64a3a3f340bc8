"""Stable Diffusion XL: UNet with two CLIP text encoders, epsilon prediction, 4-channel BCHW latents."""

from toolkit.models.base_model import BaseModel, Component, LatentSpec

# ComfyUI latent_formats.SDXL (comfy/latent_formats.py); diffusers' SDXL loop samples x * 0.13025, the space
# these were fitted in. AuraFlow and PixArt-Sigma use the same VAE and import these.
SDXL_RGB_FACTORS = (
    (0.3651, 0.4232, 0.4341),
    (-0.2533, -0.0042, 0.1068),
    (0.1076, 0.1111, -0.0362),
    (-0.3165, -0.2492, -0.2188),
)
SDXL_RGB_BIAS = (0.1084, -0.0175, -0.0011)


class SDXLModel(BaseModel):
    arch = "sdxl"
    # float8 weights keep the image (44.6 dB against bf16); float8 activations too broke it (5.8 dB, SSIM 0).
    # Measured on real-size random-init weights: family_sweep.py --quality (docs/BENCHMARKS.md "Memory plan").
    quality_8bit_db = {"float8": 44.6, "float8dq": 5.8}
    float8_activations = False
    modality = "image"
    description = "Stable Diffusion XL"
    # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx).
    hub_id = "stabilityai/stable-diffusion-xl-base-1.0"
    pipeline_class = "StableDiffusionXLPipeline"
    img2img_pipeline, inpaint_pipeline = "StableDiffusionXLImg2ImgPipeline", "StableDiffusionXLInpaintPipeline"
    fill_channels, fill_pipeline = 9, "StableDiffusionXLInpaintPipeline"  # 4 latent + 1 mask + 4 masked-image
    sampler_kind = "discrete"
    components = {
        "unet": Component("diffusers.UNet2DConditionModel", "unet", source="main"),
        "text_encoder": Component("transformers.CLIPTextModel", "text_encoder"),
        "tokenizer": Component("transformers.CLIPTokenizer", "tokenizer", has_weights=False),
        "text_encoder_2": Component("transformers.CLIPTextModelWithProjection", "text_encoder_2"),
        "tokenizer_2": Component("transformers.CLIPTokenizer", "tokenizer_2", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # No invisible watermark: it alters every output and is not something the user asked for.
    pipeline_init_kwargs = dict(image_encoder=None, feature_extractor=None, add_watermarker=False)
    latent = LatentSpec(
        "BCHW",
        4,
        spatial_factor=8,
        rgb_factors=SDXL_RGB_FACTORS,
        rgb_bias=SDXL_RGB_BIAS,
        scale=0.13025,
        factors_source="ComfyUI SDXL",
    )
    divisibility = 8
    native_resolution = 1024
    defaults = dict(width=1024, height=1024, num_inference_steps=30, guidance_scale=7.0, output_ext="png")

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            prompt_2=gen.prompt_2,
            negative_prompt=gen.negative_prompt or None,
            negative_prompt_2=gen.negative_prompt_2 or None,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            guidance_rescale=gen.guidance_rescale,
            **gen.extra_kwargs,
        )
