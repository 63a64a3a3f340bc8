"""Tiny PixArt-Sigma: the fixture of toolkit/models/archs/pixart_sigma.py, random weights in the real model's
shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import DPMSolverMultistepScheduler, PixArtSigmaPipeline, PixArtTransformer2DModel

    tok = tiny_parts.t5_tokenizer(model_max_length=300)
    te = tiny_parts.t5_text_encoder(tok, d_model=32)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = PixArtTransformer2DModel(
        sample_size=8,
        num_layers=1,
        patch_size=2,
        attention_head_dim=8,
        num_attention_heads=3,
        caption_channels=32,  # == T5 d_model
        in_channels=4,
        cross_attention_dim=24,
        out_channels=8,  # eps + learned sigma
        attention_bias=True,
        activation_fn="gelu-approximate",
        num_embeds_ada_norm=1000,
        norm_type="ada_norm_single",
        norm_elementwise_affine=False,
        norm_eps=1e-6,
    ).eval()
    vae = tiny_parts.vae_kl(latent_channels=4, scaling_factor=0.13025)
    sched = DPMSolverMultistepScheduler(
        beta_start=0.0001, beta_end=0.02, beta_schedule="linear", prediction_type="epsilon", solver_order=2
    )
    return PixArtSigmaPipeline(tokenizer=tok, text_encoder=te, vae=vae, transformer=tr, scheduler=sched)
