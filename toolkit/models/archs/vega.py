"""Segmind-Vega: SDXL distilled to a 0.74B UNet (segmind/Segmind-Vega). SDXL's files, pipeline, text encoders and
VAE; the UNet keeps SDXL's widths with fewer transformer blocks (one, then two per attention, down and up alike)
and a mid-block of one ResNet (mid_block_type UNetMidBlock2D), which the checkpoint's own config builds."""

from toolkit.models.archs.sdxl import SDXLModel


class VegaModel(SDXLModel):
    arch = "vega"
    description = "Segmind-Vega (distilled SDXL)"
    hub_id = "segmind/Segmind-Vega"
    group = "image"
    # SDXL's 8-bit measurements were taken on SDXL's UNet; this one is not measured, so balanced keeps 16 bits.
    quality_8bit_db = {}
    # Segmind's reference call for Vega (segmind.com/models/segmind-vega/api): 1024x1024, 25 steps, guidance 9.
    defaults = dict(SDXLModel.defaults, num_inference_steps=25, guidance_scale=9.0)
