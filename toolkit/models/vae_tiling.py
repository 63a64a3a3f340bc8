"""A tiled VAE decode at the tile size the memory plan counted on.

diffusers' ``AutoencoderKL`` (and ``AutoencoderKLFlux2``) tile at ``config.sample_size``, the size the VAE was
trained at: 1024 px for SDXL, Flux, SD3, CogView4 and the families that ship their VAEs, and they tile only an
output larger than one tile. So ``enable_tiling()`` did nothing at 1024², while the plan had counted a 512 px
tile's working set: CogView4 on a 16 GiB budget peaked at 15.66 GiB against a planned 14.68 (H200, 2026-12-03,
docs/BENCHMARKS.md, thirteenth run), 3.0 GiB of it the untiled decode. These VAEs now tile at the plan's size
while a plan asks for tiling, and at their own again when a plan does not (the VAE is pooled, shared with other
plans). The video VAEs' ``enable_tiling`` tiles at their own sizes (Wan, HunyuanVideo and Qwen-Image's 256 px,
LTX's 512 px), which the families' working sets count as they are.
"""

from __future__ import annotations

IMAGE_TILE, VIDEO_TILE = 512, 256  # what a tiled decode holds per side, in output pixels, unless a family says


def vae_tiles(family) -> bool:
    """Every image and video VAE the families use has diffusers' tiled decode. Decided without importing
    diffusers: the start frame's prediction runs on the server thread, where an import racing the main thread's
    left transformers half-initialised on the H200 ("cannot import name 'AutoModel'")."""
    return family.modality in ("image", "video") and "vae" in family.components


def tile_px(family) -> int:
    """A family's tile: its working set's (``WorkingSet.tile``), else the default for its modality."""
    return family.working_set.tile or (VIDEO_TILE if family.modality == "video" else IMAGE_TILE)


def set_vae_tiling(vae, on: bool, tile: int) -> None:
    if vae is None:
        return
    if hasattr(vae, "tile_sample_min_size") and hasattr(vae, "tile_latent_min_size"):
        _sample_sized(vae, tile if on else _trained_size(vae))
    method = getattr(vae, "enable_tiling" if on else "disable_tiling", None)
    if callable(method):
        method()


def _trained_size(vae) -> int:
    size = vae.config.sample_size
    return size[0] if isinstance(size, (list, tuple)) else size


def _sample_sized(vae, tile: int) -> None:
    """diffusers' own arithmetic (``AutoencoderKL.__init__``): the latent tile is the pixel tile over the VAE's
    downsampling, 2 per block after the first."""
    vae.tile_sample_min_size = tile
    vae.tile_latent_min_size = int(tile / (2 ** (len(vae.config.block_out_channels) - 1)))
