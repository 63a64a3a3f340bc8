"""What the live preview streams for a pixel-space family, whose denoiser samples the image itself.

A pixel-space pipeline (PRXPixelPipeline; ZImagePipeline running a Z-Image L2P transformer through an identity
"VAE") steps RGB in [-1, 1] at full resolution: its "latents" are the picture. Streaming that whole would cost 48
bytes a latent position of an 8x-VAE family (1024x1024x3 float16 values a step, 6 MiB, against Flux's 0.5 MiB), so
the family hands the stream the pixels averaged over 8x8 blocks: the image at the preview resolution every 8x-VAE
family's latents give, in 3 channels. ComfyUI's own preview formula, ((x . F + bias) + 1) / 2, with the identity
for F and no bias, is then exactly the pipeline's own denormalisation (x / 2 + 0.5, clamped) of those pixels, so
the preview is the image being made, downsampled, with no fitted table.

An 8x preview grid under the denoisers' 16 px patches also makes 2x2 preview positions one token, which is what
the memory plan (``BaseModel.workload``) and the OpenAI route's token counts assume of an image DiT.

No torch at import: family files read this while the registry is listed.
"""

from __future__ import annotations

from toolkit.models.base_model import LatentSpec

PREVIEW_FACTOR = 8
IDENTITY_RGB = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
ZERO_BIAS = (0.0, 0.0, 0.0)

PIXEL_LATENT = LatentSpec(
    "BCHW",
    3,
    spatial_factor=PREVIEW_FACTOR,
    rgb_factors=IDENTITY_RGB,
    rgb_bias=ZERO_BIAS,
    scale=1.0,
    shift=0.0,
    factors_source="pixels",  # not a ComfyUI table: the identity, since the latents are RGB
)


def preview_pixels(pixels):
    """B x 3 x H x W pixels in [-1, 1] -> their 8x8 block means, B x 3 x H/8 x W/8, in their own dtype."""
    import torch.nn.functional as F

    return F.avg_pool2d(pixels, PREVIEW_FACTOR)
