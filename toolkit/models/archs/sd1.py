"""Stable Diffusion 1.x: UNet, epsilon prediction, 4-channel BCHW latents."""

from toolkit.models import tiny
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
    pipeline_class = "StableDiffusionPipeline"
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
    tiny_sample = dict(width=64, height=64, output_ext="png")

    @staticmethod
    def build_tiny(variant=None):
        from diffusers import EulerDiscreteScheduler, StableDiffusionPipeline, UNet2DConditionModel

        tok = tiny.clip_tokenizer()
        te = tiny.clip_text_encoder(tok, hidden=32)
        tiny.seeded(tiny.variant_seed(variant))
        unet = UNet2DConditionModel(
            sample_size=8,
            in_channels=4,
            out_channels=4,
            layers_per_block=1,
            block_out_channels=(32, 64),
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=32,
            attention_head_dim=8,
            norm_num_groups=32,  # cross_attention_dim == CLIP hidden
        ).eval()
        vae = tiny.vae_kl(latent_channels=4, scaling_factor=0.18215)
        sched = EulerDiscreteScheduler(
            beta_start=0.00085,
            beta_end=0.012,
            beta_schedule="scaled_linear",
            steps_offset=1,
            timestep_spacing="leading",
        )
        return StableDiffusionPipeline(
            vae=vae,
            text_encoder=te,
            tokenizer=tok,
            unet=unet,
            scheduler=sched,
            safety_checker=None,
            feature_extractor=None,
            image_encoder=None,
            requires_safety_checker=False,
        )
