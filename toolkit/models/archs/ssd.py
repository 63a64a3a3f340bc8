"""Segmind SSD-1B: SDXL distilled to a 1.3B UNet (segmind/SSD-1B). SDXL's files, pipeline, text encoders and VAE;
the UNet keeps SDXL's widths and drops transformer blocks and the mid-block's attention (unet/config.json:
transformer_layers_per_block [1, 2, 4] down, [[4, 4, 10], [2, 1, 1], [1, 1, 1]] up, mid_block_type
UNetMidBlock2D: one ResNet), which the checkpoint's own config builds."""

from toolkit.models.archs.sdxl import SDXLModel


class SSD1BModel(SDXLModel):
    arch = "ssd"
    description = "Segmind SSD-1B (distilled SDXL)"
    hub_id = "segmind/SSD-1B"
    group = "image"
    # SDXL's 8-bit measurements were taken on SDXL's UNet; this one is not measured, so balanced keeps 16 bits.
    quality_8bit_db = {}
    # The model card: 1024x1024 with a negative prompt and "a CFG around 9.0"; steps as SDXL here.
    defaults = dict(SDXLModel.defaults, guidance_scale=9.0)
