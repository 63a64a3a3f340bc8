"""Qwen-Image: MMDiT with a Qwen2.5-VL text encoder; Wan-2.1-style 16-channel VAE, latents packed in 2x2 tokens."""

from toolkit.memory_plan import WorkingSet
from toolkit.models.archs.wan21 import WAN21_RGB_BIAS, WAN21_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class QwenImageModel(BaseModel):
    arch = "qwen_image"
    quality_8bit_db = {"float8": 47.4, "float8dq": 46.7}  # vs bf16, random-init weights: family_sweep.py --quality
    modality = "image"
    description = "Qwen-Image (text-to-image)"
    # AI Toolkit's UI offers it as qwen_image, and Qwen-Image-2512 as qwen_image:2512 (ostris/ai-toolkit
    # ui/src/app/jobs/new/options.tsx).
    hub_id = "Qwen/Qwen-Image"
    tags = {"2512": {"hub_id": "Qwen/Qwen-Image-2512", "description": "Qwen-Image-2512 (December 2025 update)"}}
    pipeline_class = "QwenImagePipeline"
    img2img_pipeline, inpaint_pipeline = "QwenImageImg2ImgPipeline", "QwenImageInpaintPipeline"
    components = {
        "transformer": Component("diffusers.QwenImageTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.Qwen2_5_VLForConditionalGeneration", "text_encoder"),
        "tokenizer": Component("transformers.Qwen2Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLQwenImage", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # ComfyUI previews Qwen-Image with the Wan21 format (comfy/supported_models.py): fitted on (x - mean) / std, the
    # space the pipeline samples in. The loop's tokens are unpacked to B,16,H/8,W/8 (the VAE's frame axis dropped).
    latent = LatentSpec(
        "BCHW",
        16,
        spatial_factor=8,
        rgb_factors=WAN21_RGB_FACTORS,
        rgb_bias=WAN21_RGB_BIAS,
        factors_source="ComfyUI Wan21",
    )
    divisibility = 16  # 8x VAE x 2x2 packing
    native_resolution = 1328
    defaults = dict(width=1328, height=1328, num_inference_steps=50, guidance_scale=4.0, output_ext="png")
    # Measured at 1328x1328 (testing/test_working_sets.py): decoding 7.0 GiB over the weights (3.9 KB per pixel: a
    # Wan-style 3D VAE); sampling 0.65 GiB, within the default.
    min_steps = 2  # shift_terminal in its scheduler (BaseModel.min_steps)
    working_set = WorkingSet(per_pixel=4608)

    def pipeline_kwargs(self, gen):
        # CFG is "true CFG" on a negative prompt (enabled by any negative, even " "); guidance_scale proper is
        # only for guidance-distilled transformers, which Qwen-Image's are not.
        cfg = gen.guidance_scale > 1
        return dict(
            prompt=gen.prompt,
            negative_prompt=(gen.negative_prompt or " ") if cfg else None,
            true_cfg_scale=gen.guidance_scale,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            **gen.extra_kwargs,
        )

    def unpack_latents(self, latents, gen):
        from diffusers import QwenImagePipeline

        # (B, H/16*W/16, 64) -> (B, 16, 1, H/8, W/8): the VAE is a video VAE; an image is its one frame.
        return QwenImagePipeline._unpack_latents(latents, gen.height, gen.width, self.latent.spatial_factor)[:, :, 0]
