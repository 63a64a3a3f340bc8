"""Tiny AuraFlow v0.3: the fixture of toolkit/models/archs/auraflow.py, random weights in the real model's
shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import AuraFlowPipeline, AuraFlowTransformer2DModel, FlowMatchEulerDiscreteScheduler

    tok = tiny_parts.t5_tokenizer()
    te = tiny_parts.t5_text_encoder(tok, d_model=32, umt5=True)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = AuraFlowTransformer2DModel(
        sample_size=8,
        patch_size=2,
        in_channels=4,
        out_channels=4,
        num_mmdit_layers=1,
        num_single_dit_layers=1,
        attention_head_dim=8,
        num_attention_heads=4,
        caption_projection_dim=32,
        joint_attention_dim=32,  # == UMT5 d_model
        pos_embed_max_size=64,
    ).eval()
    vae = tiny_parts.vae_kl(latent_channels=4, scaling_factor=0.13025)
    sched = FlowMatchEulerDiscreteScheduler(shift=1.73)
    return AuraFlowPipeline(tokenizer=tok, text_encoder=te, vae=vae, transformer=tr, scheduler=sched)
