"""Tiny Segmind-Vega (toolkit/models/archs/vega.py): SDXL's tiny pipeline with its UNet rebuilt the Vega way, more
transformer blocks in the deeper attention (as Vega's [1, 1, 2]) and a mid-block of one ResNet without attention
(mid_block_type UNetMidBlock2D)."""

from toolkit.models import tiny
from toolkit.models.tiny_recipes.ssd import distilled_unet

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import StableDiffusionXLPipeline

    base = tiny.recipe_builder("sdxl")(None)
    unet = distilled_unet(base.unet, variant, mid_block_type="UNetMidBlock2D", transformer_layers_per_block=[1, 2])
    return StableDiffusionXLPipeline(**dict(base.components, unet=unet))
