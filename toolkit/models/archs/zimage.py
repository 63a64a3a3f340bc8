"""Z-Image (Turbo): single-stream DiT with a Qwen3 text encoder on Flux.1's 16-channel VAE, BCHW latents."""

from toolkit.models.archs.flux import FLUX_RGB_BIAS, FLUX_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class ZImageModel(BaseModel):
    arch = "zimage"
    # float8 weights keep the image (42.5 dB against bf16); float8 activations too broke it (4.9 dB, SSIM 0).
    # Measured on real-size random-init weights: family_sweep.py --quality (docs/BENCHMARKS.md "Memory plan").
    quality_8bit_db = {"float8": 42.5, "float8dq": 4.9}
    float8_activations = False
    modality = "image"
    description = "Z-Image (base; Turbo and De-Turbo as tags)"
    # AI Toolkit's UI names the base model zimage and its variants zimage:turbo and zimage:deturbo (ostris/ai-toolkit
    # ui/src/app/jobs/new/options.tsx). Z-Image-Turbo: 9 steps (8 DiT forwards), no CFG (guidance_scale 0 switches
    # it off in the pipeline), its model card. De-Turbo is a de-distilled Turbo denoiser alone: AI Toolkit pairs it
    # with Turbo's encoders and VAE and samples it at 25 steps, guidance 3.
    hub_id = "Tongyi-MAI/Z-Image"
    tags = {
        "turbo": {
            "hub_id": "Tongyi-MAI/Z-Image-Turbo",
            "description": "Z-Image-Turbo (distilled: 8 DiT steps, no CFG)",
            "defaults": {"num_inference_steps": 9, "guidance_scale": 0.0},
        },
        "deturbo": {
            "hub_id": "ostris/Z-Image-De-Turbo",
            "extras_hub_id": "Tongyi-MAI/Z-Image-Turbo",
            "description": "Z-Image De-Turbo (de-distilled Turbo)",
            "defaults": {"num_inference_steps": 25, "guidance_scale": 3.0},
        },
    }
    pipeline_class = "ZImagePipeline"
    img2img_pipeline, inpaint_pipeline = "ZImageImg2ImgPipeline", "ZImageInpaintPipeline"
    components = {
        "transformer": Component("diffusers.ZImageTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.Qwen3Model", "text_encoder"),
        "tokenizer": Component("transformers.Qwen2Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # ComfyUI runs Z-Image through its Lumina2 model on the Flux latent format (comfy/supported_models.py); the
    # pipeline's loop latents are (x - 0.1159) * 0.3611 like Flux's, unpacked already.
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
    # Z-Image (base), its model card: 28-50 steps, guidance 3-5; its example runs 50 steps at guidance 4.
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=4.0, output_ext="png")
