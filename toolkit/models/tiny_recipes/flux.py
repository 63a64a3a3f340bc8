"""Tiny FLUX.1 (dev / schnell): the fixture of toolkit/models/archs/flux.py, random weights in the real model's
shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel

    tok, tok2 = tiny_parts.clip_tokenizer(), tiny_parts.t5_tokenizer()
    te = tiny_parts.clip_text_encoder(tok, hidden=32)
    te2 = tiny_parts.t5_text_encoder(tok2, d_model=32)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = FluxTransformer2DModel(
        patch_size=1,
        in_channels=384 if variant == "fill" else 64,  # Flux Fill: + masked-image latents (64) + the mask (256)
        out_channels=64,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=32,
        pooled_projection_dim=32,
        guidance_embeds=True,
        axes_dims_rope=(4, 6, 6),  # in_channels = 4 x 16 latent channels; sum(axes) == head dim
    ).eval()
    vae = tiny_parts.vae_kl(
        latent_channels=16,
        use_quant_conv=False,
        use_post_quant_conv=False,
        scaling_factor=0.3611,
        shift_factor=0.1159,
    )
    sched = FlowMatchEulerDiscreteScheduler(
        shift=3.0,
        use_dynamic_shifting=True,
        base_shift=0.5,
        max_shift=1.15,
        base_image_seq_len=256,
        max_image_seq_len=4096,
    )
    return FluxPipeline(
        scheduler=sched,
        vae=vae,
        text_encoder=te,
        tokenizer=tok,
        text_encoder_2=te2,
        tokenizer_2=tok2,
        transformer=tr,
        image_encoder=None,
        feature_extractor=None,
    )
