"""Tiny PixArt-alpha (toolkit/models/archs/pixart.py): a one-layer PixArt DiT with the 1024-MS checkpoint's
sample_size 128, so the pipeline passes resolution and aspect-ratio micro-conditions as it does for the real
model (the position table is computed per request, so the large grid costs nothing saved), a T5 of 120 tokens,
and SD's VAE scaling."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import DPMSolverMultistepScheduler, PixArtAlphaPipeline, PixArtTransformer2DModel

    tok = tiny_parts.t5_tokenizer(model_max_length=120)
    te = tiny_parts.t5_text_encoder(tok, d_model=32)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = PixArtTransformer2DModel(
        sample_size=128,  # the 1024-MS config's: micro-conditions on (use_additional_conditions follows it)
        num_layers=1,
        patch_size=2,
        attention_head_dim=8,
        num_attention_heads=3,  # inner 24: the size embedders take a third of it each
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
    vae = tiny_parts.vae_kl(latent_channels=4, scaling_factor=0.18215)
    sched = DPMSolverMultistepScheduler(
        beta_start=0.0001, beta_end=0.02, beta_schedule="linear", prediction_type="epsilon", solver_order=2
    )
    return PixArtAlphaPipeline(tokenizer=tok, text_encoder=te, vae=vae, transformer=tr, scheduler=sched)
