"""The "VAE" a latent pipeline runs a pixel-space transformer with: a decode that only rearranges what it is given.

diffusers' ZImagePipeline and ChromaPipeline size their latents from ``vae.config`` (``vae_scale_factor`` is 2 to the
number of blocks less one) and decode ``latents / scaling_factor + shift_factor`` with ``vae.decode``. With this
module in the VAE's place, at ``factor`` 1 the latents are the RGB image itself (Z-Image L2P); at ``factor`` 8 they
are the image folded 8x8 into 192 channels (``pixel_unshuffle``), so the pipeline's own 2x2 packing makes one token
of each 16x16 RGB patch (Chroma Radiance), and the decode unfolds them (``pixel_shuffle``). Either way the
pipeline's postprocessing then maps [-1, 1] to the picture.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch
from torch import nn


class PixelDecoder(nn.Module):
    def __init__(self, factor: int = 1):
        super().__init__()
        self.factor = factor
        blocks = int(math.log2(factor)) + 1
        self.config = SimpleNamespace(
            block_out_channels=(3,) * blocks, latent_channels=3 * factor**2, scaling_factor=1.0, shift_factor=0.0
        )
        self.register_buffer("_place", torch.zeros(0), persistent=False)  # follows .to(), for ``device``

    @property
    def device(self):
        return self._place.device

    @property
    def dtype(self):
        return torch.float32  # the pipelines' latents are float32; the image is made from them as they are

    def decode(self, z, return_dict: bool = True):
        from diffusers.models.autoencoders.vae import DecoderOutput

        image = nn.functional.pixel_shuffle(z, self.factor) if self.factor > 1 else z
        return DecoderOutput(sample=image) if return_dict else (image,)
