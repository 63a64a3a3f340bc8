"""Tiny Stable Diffusion 1.x: the fixture of toolkit/models/archs/sd1.py, random weights in the real model's
shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import EulerDiscreteScheduler, StableDiffusionPipeline, UNet2DConditionModel

    tok = tiny_parts.clip_tokenizer()
    te = tiny_parts.clip_text_encoder(tok, hidden=32)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    unet = UNet2DConditionModel(
        sample_size=8,
        in_channels=9 if variant == "inpainting" else 4,  # an inpainting UNet: + mask + masked-image latents
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=8,
        norm_num_groups=32,  # cross_attention_dim == CLIP hidden
    ).eval()
    vae = tiny_parts.vae_kl(latent_channels=4, scaling_factor=0.18215)
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
