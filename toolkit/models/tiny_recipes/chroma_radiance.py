"""Tiny Chroma Radiance (toolkit/models/archs/chroma_radiance.py): Chroma's tiny T5 and scheduler with a one-block
radiance transformer (16x16 RGB patches, 768 values a token; a one-layer NeRF head, 8 wide). Saved without a VAE:
the family runs ChromaPipeline with its pixel decoder."""

from toolkit.models import tiny
from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import ChromaPipeline

    from toolkit.models.chroma_radiance import ChromaRadianceTransformer2DModel

    base = tiny.recipe_builder("chroma")(None)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    transformer = ChromaRadianceTransformer2DModel(
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=base.text_encoder.config.d_model,
        axes_dims_rope=(4, 6, 6),
        approximator_hidden_dim=32,
        approximator_layers=1,
        approximator_num_channels=16,
        nerf_hidden_size=8,
        nerf_mlp_ratio=2,
        nerf_depth=1,
        nerf_max_freqs=4,
    ).eval()
    return ChromaPipeline(
        scheduler=base.scheduler,
        vae=None,
        text_encoder=base.text_encoder,
        tokenizer=base.tokenizer,
        transformer=transformer,
        image_encoder=None,
        feature_extractor=None,
    )
