"""A tiled VAE decode at the tile size the memory plan counted on.

diffusers' ``AutoencoderKL`` (and ``AutoencoderKLFlux2``) tile at ``config.sample_size``, the size the VAE was
trained at: 1024 px for SDXL, Flux, SD3, CogView4 and the families that ship their VAEs, and they tile only an
output larger than one tile. So ``enable_tiling()`` did nothing at 1024², while the plan had counted a 512 px
tile's working set: CogView4 on a 16 GiB budget peaked at 15.66 GiB against a planned 14.68 (H200, 2026-12-03,
docs/BENCHMARKS.md, thirteenth run), 3.0 GiB of it the untiled decode. Every VAE now tiles at the plan's
size while a plan asks for tiling, and at its own again when a plan does not (the VAE is pooled, shared with
other plans). A family's plan counts its VAE's own tile (Wan, HunyuanVideo and Qwen-Image's 256 px, LTX's
512 px), or 512 px for the image VAEs, and a smaller one where only that fits (``smaller_tiles``).
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


def smaller_tiles(family) -> tuple:
    """Tiles a plan may fall back to before a request is refused: a tiled decode's working set falls with the
    tile's area (HunyuanVideo 1.5 at 848x480x121: 15.5 GiB in 256 px tiles, whole clip per tile), as a ComfyUI
    user on a small card picks a smaller tile for its tiled decode."""
    tile = tile_px(family)
    return (tile * 3 // 4, tile // 2) if vae_tiles(family) else ()


# Every tile size diffusers' VAEs keep, in pixels or latents: AutoencoderKL's square ones, the video VAEs' sides and
# strides (Wan, Qwen-Image, HunyuanVideo, LTX), HunyuanVideo 1.5's latent sides.
SIZES = (
    "tile_sample_min_size",
    "tile_latent_min_size",
    "tile_sample_min_height",
    "tile_sample_min_width",
    "tile_latent_min_height",
    "tile_latent_min_width",
    "tile_sample_stride_height",
    "tile_sample_stride_width",
)


def set_vae_tiling(vae, on: bool, tile: int) -> None:
    """Tiling on at ``tile`` px, or off; the VAE's own sizes between, so a pooled VAE another plan shares keeps
    no stale setting."""
    if vae is None:
        return
    own = vae.__dict__.setdefault(
        "_aitk_tile_sizes", {name: getattr(vae, name) for name in SIZES if hasattr(vae, name)}
    )
    for name, value in (resized(own, tile) if on else own).items():
        setattr(vae, name, value)
    method = getattr(vae, "enable_tiling" if on else "disable_tiling", None)
    if callable(method):
        method()


def resized(own: dict, tile: int) -> dict:
    """Every size scaled by ``tile`` over the VAE's own tile, so latent tiles and strides keep their proportion to
    the tile (a stride left at 192 beside a 128 px tile would skip pixels)."""
    if not own:
        return {}
    first = _side(own.get("tile_sample_min_size", own.get("tile_sample_min_height")))
    return {name: int(_side(value) * tile / first) for name, value in own.items()}


def _side(size) -> int:
    """AutoencoderKL keeps ``config.sample_size`` as it came, which may be a (height, width) pair."""
    return size[0] if isinstance(size, (list, tuple)) else size
