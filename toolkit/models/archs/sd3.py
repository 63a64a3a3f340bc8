"""Stable Diffusion 3 / 3.5: MMDiT with two CLIPs and T5, flow matching, 16-channel BCHW latents."""

from toolkit.models.base_model import BaseModel, Component, LatentSpec

# ComfyUI latent_formats.SD3 (comfy/latent_formats.py): fitted on (x - 0.0609) * 1.5305, the space diffusers'
# SD3 loop samples in (patchification happens inside the transformer).
SD3_RGB_FACTORS = (
    (-0.0922, -0.0175, 0.0749),
    (0.0311, 0.0633, 0.0954),
    (0.1994, 0.0927, 0.0458),
    (0.0856, 0.0339, 0.0902),
    (0.0587, 0.0272, -0.0496),
    (-0.0006, 0.1104, 0.0309),
    (0.0978, 0.0306, 0.0427),
    (-0.0042, 0.1038, 0.1358),
    (-0.0194, 0.0020, 0.0669),
    (-0.0488, 0.0130, -0.0268),
    (0.0922, 0.0988, 0.0951),
    (-0.0278, 0.0524, -0.0542),
    (0.0332, 0.0456, 0.0895),
    (-0.0069, -0.0030, -0.0810),
    (-0.0596, -0.0465, -0.0293),
    (-0.1448, -0.1463, -0.1189),
)
SD3_RGB_BIAS = (0.2394, 0.2135, 0.1925)


class SD3Model(BaseModel):
    arch = "sd3"
    modality = "image"
    description = "Stable Diffusion 3 / 3.5"
    # Not in AI Toolkit's UI: the checkpoint of diffusers' StableDiffusion3Pipeline example (SD3 medium's card: 28
    # steps, guidance 7, the defaults below).
    hub_id = "stabilityai/stable-diffusion-3-medium-diffusers"
    pipeline_class = "StableDiffusion3Pipeline"
    img2img_pipeline, inpaint_pipeline = "StableDiffusion3Img2ImgPipeline", "StableDiffusion3InpaintPipeline"
    components = {
        "transformer": Component("diffusers.SD3Transformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.CLIPTextModelWithProjection", "text_encoder"),
        "tokenizer": Component("transformers.CLIPTokenizer", "tokenizer", has_weights=False),
        "text_encoder_2": Component("transformers.CLIPTextModelWithProjection", "text_encoder_2"),
        "tokenizer_2": Component("transformers.CLIPTokenizer", "tokenizer_2", has_weights=False),
        "text_encoder_3": Component("transformers.T5EncoderModel", "text_encoder_3"),
        "tokenizer_3": Component("transformers.T5Tokenizer", "tokenizer_3", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    pipeline_init_kwargs = dict(image_encoder=None, feature_extractor=None)
    latent = LatentSpec(
        "BCHW",
        16,
        spatial_factor=8,
        rgb_factors=SD3_RGB_FACTORS,
        rgb_bias=SD3_RGB_BIAS,
        scale=1.5305,
        shift=0.0609,
        factors_source="ComfyUI SD3",
    )
    divisibility = 16  # 8x VAE x 2x2 patches
    native_resolution = 1024
    defaults = dict(width=1024, height=1024, num_inference_steps=28, guidance_scale=7.0, output_ext="png")

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
            **gen.extra_kwargs,
        )
