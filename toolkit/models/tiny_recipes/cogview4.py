"""Tiny CogView4-6B: the fixture of toolkit/models/archs/cogview4.py, random weights in the real model's shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import CogView4Pipeline, CogView4Transformer2DModel, FlowMatchEulerDiscreteScheduler
    from transformers import GlmConfig, GlmModel

    tok = tiny_parts.glm4_tokenizer()
    tiny_parts.seeded()
    te = GlmModel(
        GlmConfig(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=1024,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    ).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = CogView4Transformer2DModel(
        patch_size=2,
        in_channels=16,
        out_channels=16,
        num_layers=1,
        attention_head_dim=8,
        num_attention_heads=4,
        text_embed_dim=32,  # == GLM hidden size (hidden_states[-2])
        time_embed_dim=8,
        condition_dim=4,
        pos_embed_max_size=32,
        sample_size=8,
        rope_axes_dim=(32, 32),
    ).eval()
    vae = tiny_parts.vae_kl(latent_channels=16, use_quant_conv=False, use_post_quant_conv=False, scaling_factor=1.0)
    sched = FlowMatchEulerDiscreteScheduler(
        base_image_seq_len=256, base_shift=0.25, max_shift=0.75, use_dynamic_shifting=True, time_shift_type="linear"
    )
    return CogView4Pipeline(tokenizer=tok, text_encoder=te, vae=vae, transformer=tr, scheduler=sched)
