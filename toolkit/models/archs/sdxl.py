"""Stable Diffusion XL: UNet with two CLIP text encoders, epsilon prediction, 4-channel BCHW latents."""

from toolkit.models import tiny
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
    # Measured on real-size random-init weights: family_sweep.py --quality (docs/BENCHMARKS.md).
    quality_8bit_db = {"float8": 44.6, "float8dq": 5.8}
    float8_activations = False
    modality = "image"
    description = "Stable Diffusion XL"
    pipeline_class = "StableDiffusionXLPipeline"
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
    tiny_sample = dict(width=64, height=64, output_ext="png")

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

    @staticmethod
    def build_tiny(variant=None):
        from diffusers import EulerDiscreteScheduler, StableDiffusionXLPipeline, UNet2DConditionModel

        tok, tok2 = tiny.clip_tokenizer(), tiny.clip_tokenizer()
        te = tiny.clip_text_encoder(tok, hidden=32)
        te2 = tiny.clip_text_encoder(tok2, hidden=32, with_projection=True, projection_dim=32)
        tiny.seeded(tiny.variant_seed(variant))
        unet = UNet2DConditionModel(
            sample_size=8,
            in_channels=4,
            out_channels=4,
            layers_per_block=1,
            block_out_channels=(32, 64),
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
            attention_head_dim=(2, 4),
            use_linear_projection=True,
            addition_embed_type="text_time",
            addition_time_embed_dim=8,
            transformer_layers_per_block=(1, 1),
            norm_num_groups=32,
            projection_class_embeddings_input_dim=6 * 8 + 32,  # 6 time ids x addition_time_embed_dim + te2 projection
            cross_attention_dim=64,  # te.hidden + te2.hidden: the penultimate states are concatenated
        ).eval()
        vae = tiny.vae_kl(latent_channels=4, scaling_factor=0.13025)
        sched = EulerDiscreteScheduler(
            beta_start=0.00085,
            beta_end=0.012,
            beta_schedule="scaled_linear",
            steps_offset=1,
            timestep_spacing="leading",
        )
        return StableDiffusionXLPipeline(
            vae=vae,
            text_encoder=te,
            text_encoder_2=te2,
            tokenizer=tok,
            tokenizer_2=tok2,
            unet=unet,
            scheduler=sched,
            image_encoder=None,
            feature_extractor=None,
            force_zeros_for_empty_prompt=True,
            add_watermarker=False,
        )
