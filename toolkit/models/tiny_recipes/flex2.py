"""Tiny Flex.2: the fixture of toolkit/models/archs/flex2.py, the tiny FLUX.1 components (flux.py) around a
transformer of Flex.2's input and output widths: 196 channels in (64 of packed latents, 132 of conditioning),
64 out."""

from toolkit.models import tiny
from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import FluxTransformer2DModel

    pipe = tiny.recipe_builder("flux")(variant)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    config = {k: v for k, v in pipe.transformer.config.items() if not k.startswith("_")}  # ``_use_default_values``
    pipe.transformer = FluxTransformer2DModel(**{**config, "in_channels": 196, "out_channels": 64}).eval()
    return pipe
