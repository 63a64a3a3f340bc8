"""Qwen-Image: MMDiT with a Qwen2.5-VL text encoder; Wan-2.1-style 16-channel VAE, latents packed in 2x2 tokens."""

from toolkit.memory_plan import WorkingSet
from toolkit.models import tiny
from toolkit.models.archs.wan21 import WAN21_RGB_BIAS, WAN21_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec

# Wan 2.1 VAE statistics (comfy/latent_formats.py, Wan21): AutoencoderKLQwenImage's defaults, and what the
# tiny VAE declares so its normalisation is the production one.
WAN21_LATENTS_MEAN = [
    -0.7571,
    -0.7089,
    -0.9113,
    0.1075,
    -0.1745,
    0.9653,
    -0.1517,
    1.5508,
    0.4134,
    -0.0715,
    0.5517,
    -0.3632,
    -0.1922,
    -0.9497,
    0.2503,
    -0.2921,
]
WAN21_LATENTS_STD = [
    2.8184,
    1.4541,
    2.3275,
    2.6558,
    1.2196,
    1.7708,
    2.6052,
    2.0743,
    3.2687,
    2.1526,
    2.8652,
    1.5579,
    1.6382,
    1.1253,
    2.8251,
    1.9160,
]


class QwenImageModel(BaseModel):
    arch = "qwen_image"
    quality_8bit_db = {"float8": 47.4, "float8dq": 46.7}  # vs bf16, random-init weights: family_sweep.py --quality
    modality = "image"
    description = "Qwen-Image (text-to-image)"
    pipeline_class = "QwenImagePipeline"
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
    tiny_sample = dict(width=64, height=64, output_ext="png")
    # Measured (H200, 1328x1328): decoding 7.0 GiB over the weights (3.9 KB per pixel: a Wan-style 3D VAE);
    # sampling 0.65 GiB, within the default.
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

    @staticmethod
    def tiny_parts(variant=None):
        """The tiny components every Qwen-Image pipeline shares (the edit families add a processor)."""
        from diffusers import AutoencoderKLQwenImage, FlowMatchEulerDiscreteScheduler, QwenImageTransformer2DModel

        tok = tiny.qwen2_tokenizer(model_max_length=2048)
        te = tiny.qwen25_vl_text_encoder(tok, hidden=16)
        tiny.seeded(tiny.variant_seed(variant))
        tr = QwenImageTransformer2DModel(
            patch_size=2,
            in_channels=64,
            out_channels=16,
            num_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            joint_attention_dim=16,  # == Qwen2.5-VL hidden size
            guidance_embeds=False,
            axes_dims_rope=(8, 4, 4),
        ).eval()
        tiny.seeded()
        # 8x spatial like production (three downsamples), 16 channels, the real Wan 2.1 statistics. Narrow and
        # without res blocks because the edit pipelines VAE-encode every control image at ~1024^2 whatever the
        # output size: on a CPU that encode (mid-block attention over 128 x 128 positions) is most of a run.
        vae = AutoencoderKLQwenImage(
            base_dim=4,
            z_dim=16,
            dim_mult=[1, 1, 1, 1],
            num_res_blocks=0,
            temperal_downsample=[False, True, True],
            latents_mean=WAN21_LATENTS_MEAN,
            latents_std=WAN21_LATENTS_STD,
        ).eval()
        sched = FlowMatchEulerDiscreteScheduler(
            shift=1.0,
            use_dynamic_shifting=True,
            base_shift=0.5,
            max_shift=0.9,
            base_image_seq_len=256,
            max_image_seq_len=8192,
            shift_terminal=0.02,
            time_shift_type="exponential",
        )
        return dict(scheduler=sched, vae=vae, text_encoder=te, tokenizer=tok, transformer=tr)

    @staticmethod
    def build_tiny(variant=None):
        from diffusers import QwenImagePipeline

        return QwenImagePipeline(**QwenImageModel.tiny_parts(variant))
