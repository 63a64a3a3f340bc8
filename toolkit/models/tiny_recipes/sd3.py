"""Tiny Stable Diffusion 3 / 3.5: the fixture of toolkit/models/archs/sd3.py, random weights in the real model's
shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel, StableDiffusion3Pipeline

    tok, tok2, tok3 = (
        tiny_parts.clip_tokenizer(),
        tiny_parts.clip_tokenizer(),
        tiny_parts.t5_tokenizer(model_max_length=256),
    )
    te = tiny_parts.clip_text_encoder(tok, hidden=32, with_projection=True, projection_dim=32)
    te2 = tiny_parts.clip_text_encoder(tok2, hidden=32, with_projection=True, projection_dim=32)
    te3 = tiny_parts.t5_text_encoder(tok3, d_model=64)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = SD3Transformer2DModel(
        sample_size=8,
        patch_size=2,
        in_channels=16,
        out_channels=16,
        num_layers=1,
        attention_head_dim=8,
        num_attention_heads=4,
        caption_projection_dim=32,
        pos_embed_max_size=16,
        joint_attention_dim=64,  # == T5 d_model; the two CLIPs' 32+32 states are zero-padded up to it
        pooled_projection_dim=64,  # == te.projection_dim + te2.projection_dim
    ).eval()
    vae = tiny_parts.vae_kl(
        latent_channels=16,
        use_quant_conv=False,
        use_post_quant_conv=False,
        scaling_factor=1.5305,
        shift_factor=0.0609,
    )
    sched = FlowMatchEulerDiscreteScheduler(shift=3.0)
    return StableDiffusion3Pipeline(
        transformer=tr,
        scheduler=sched,
        vae=vae,
        text_encoder=te,
        tokenizer=tok,
        text_encoder_2=te2,
        tokenizer_2=tok2,
        text_encoder_3=te3,
        tokenizer_3=tok3,
        image_encoder=None,
        feature_extractor=None,
    )
