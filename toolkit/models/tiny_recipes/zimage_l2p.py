"""Tiny Z-Image L2P (toolkit/models/archs/zimage_l2p.py): Z-Image's tiny trunk, text encoder and scheduler with
the transformer in pixel space (RGB in, 16x16 patches, the U-Net pixel head narrowed to 8 channels a level). The
pipeline is saved without a VAE: the family runs it with its identity decoder."""

from toolkit.models import tiny
from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import ZImagePipeline

    from toolkit.models.l2p import PIXEL_SHAPE, ZImageL2PTransformer2DModel

    base = tiny.recipe_builder("zimage")(None)
    shape = {k: v for k, v in base.transformer.config.items() if not k.startswith("_")}
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    transformer = ZImageL2PTransformer2DModel(**dict(shape, **PIXEL_SHAPE, decoder_widths=(8, 8, 8, 8))).eval()
    return ZImagePipeline(
        scheduler=base.scheduler,
        vae=None,
        text_encoder=base.text_encoder,
        tokenizer=base.tokenizer,
        transformer=transformer,
    )
