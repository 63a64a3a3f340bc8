"""A tiled VAE decode at the tile size the memory plan counted on.

diffusers' ``AutoencoderKL`` (and ``AutoencoderKLFlux2``) tile at ``config.sample_size``, the size the VAE was trained
at: 1024 px for SDXL, Flux, SD3, CogView4 and the families that ship their VAEs, and they tile only an output larger
than one tile. So ``enable_tiling()`` did nothing at 1024², while the plan had counted a 512 px tile's working set:
CogView4 on a 16 GiB budget peaked at 15.66 GiB against a planned 14.68 (docs/MEASURED.md "VAE tiling at 1024²"),
3.0 GiB of it the untiled decode. Every VAE now tiles at the plan's size while a plan asks for tiling, and at its own
again when a plan does not (the VAE is pooled, shared with other plans). A family's plan counts its VAE's own tile (Wan,
HunyuanVideo and Qwen-Image's 256 px, LTX's 512 px), or 512 px for the image VAEs, and a smaller one where only that
fits (``smaller_tiles``). A decode that runs out of memory anyway decodes again in smaller tiles
(``smaller_tiles_on_oom``), as ComfyUI falls back to a tiled decode, instead of the engine sampling the whole request
again under a wider plan.
"""

from __future__ import annotations

import contextlib

IMAGE_TILE, VIDEO_TILE = 512, 256  # what a tiled decode holds per side, in output pixels, unless a family says


def vae_tiles(family) -> bool:
    """Every image and video VAE the families use has diffusers' tiled decode. Decided without importing
    diffusers: the start frame's prediction runs on the server thread, where an import racing the main thread's
    left transformers half-initialised ("cannot import name 'AutoModel'": testing/test_memory_plan_engine.py::
    test_the_start_frame_prediction_imports_neither_torch_nor_diffusers)."""
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


@contextlib.contextmanager
def smaller_tiles_on_oom(family, vae, tile, notify):
    """While a generation runs, a decode of ``vae`` (tiled at ``tile`` px, or untiled: None) that runs out of memory is
    run again in the family's smaller tiles, down to the smallest, and ``notify`` says so. The latents stay:
    HunyuanVideo 1.5's decode ran out in 256 px tiles at 24 GiB after its sampling (docs/MEASURED.md
    "A decode that runs out of memory, tiled smaller"), which the engine's re-plan would have run again (at its 50
    default steps, minutes); 192 px tiles decode it in 8 GiB. The holder remembers the tile that fitted latents of that
    shape, so its next such decode starts there."""
    from toolkit.device import is_oom

    tiles = [t for t in (tile_px(family), *smaller_tiles(family)) if tile is None or t < tile]
    if vae is None or not vae_tiles(family) or not tiles or "decode" in vae.__dict__:
        yield
        return
    decode, fitted = vae.decode, family.__dict__.setdefault("_decode_tiles_that_fit", {})

    def decode_in_smaller_tiles(*args, **kwargs):
        shape = tuple(getattr(args[0] if args else kwargs.get("z"), "shape", ()))
        now = fitted.get(shape, tile)
        if now != tile:
            set_vae_tiling(vae, True, now)
        left = iter([t for t in tiles if now is None or t < now])
        while True:
            try:
                decoded = decode(*args, **kwargs)
                fitted[shape] = now
                return decoded
            except Exception as e:
                smaller = next(left, None)
                if smaller is None or not is_oom(e):
                    raise
            # Out of the except clause: the failed attempt's tensors went with its traceback.
            _free_after_oom(vae)
            notify(
                f"Out of memory decoding {f'in {now} px tiles' if now else 'untiled'}: decoding in {smaller} px tiles"
            )
            set_vae_tiling(vae, True, smaller)
            now = smaller

    vae.decode = decode_in_smaller_tiles
    try:
        yield
    finally:
        del vae.decode


def _free_after_oom(vae) -> None:
    """diffusers' causal video VAEs (Wan, Qwen-Image) keep each chunk's features until a decode finishes."""
    import torch

    if callable(getattr(type(vae), "clear_cache", None)):
        vae.clear_cache()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
