"""Tiny Stable Diffusion XL: the fixture of toolkit/models/archs/sdxl.py, random weights in the real model's
shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import EulerDiscreteScheduler, StableDiffusionXLPipeline, UNet2DConditionModel

    tok, tok2 = tiny_parts.clip_tokenizer(), tiny_parts.clip_tokenizer()
    te = tiny_parts.clip_text_encoder(tok, hidden=32)
    te2 = tiny_parts.clip_text_encoder(tok2, hidden=32, with_projection=True, projection_dim=32)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
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
    vae = tiny_parts.vae_kl(latent_channels=4, scaling_factor=0.13025)
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
