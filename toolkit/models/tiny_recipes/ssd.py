"""Tiny Segmind SSD-1B (toolkit/models/archs/ssd.py): SDXL's tiny pipeline with its UNet rebuilt the SSD-1B way,
an up path deeper than the down path it mirrors (reverse_transformer_layers_per_block) and a mid-block of one
ResNet without attention (mid_block_type UNetMidBlock2D)."""

from toolkit.models import tiny
from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def distilled_unet(base_unet, variant, **shape):
    """``base_unet``'s config (SDXL's tiny UNet) with ``shape`` changed, at the variant's seed."""
    from diffusers import UNet2DConditionModel

    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    return UNet2DConditionModel.from_config(base_unet.config, **shape).eval()


def build_tiny(variant=None):
    from diffusers import StableDiffusionXLPipeline

    base = tiny.recipe_builder("sdxl")(None)
    unet = distilled_unet(
        base.unet,
        variant,
        mid_block_type="UNetMidBlock2D",
        transformer_layers_per_block=[1, 2],
        reverse_transformer_layers_per_block=[[2, 3], [1, 1]],  # SSD-1B's up path: [[4, 4, 10], ...]
    )
    return StableDiffusionXLPipeline(**dict(base.components, unet=unet))
