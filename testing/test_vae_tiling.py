"""A plan that tiles the VAE decode gets the tile it counted on, and a smaller one where only that fits
(toolkit/models/vae_tiling.py).

On the H200 (2026-12-03) CogView4 on a 16 GiB budget peaked at 15.66 GiB against a planned 14.68: its plan said
"VAE tiled", but diffusers' AutoencoderKL tiles at its ``config.sample_size`` (1024 px for SDXL, Flux, SD3,
CogView4) and only above it, so a 1024² decode ran whole. These tests run diffusers' real VAE code: a small
AutoencoderKL with the published VAEs' ``sample_size``, and Wan 2.1's tiny video VAE."""

import pytest
import torch

from testing.bench.budget_probe import is_note
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.memory_plan import Plan, Workload
from toolkit.models.registry import get_model_class
from toolkit.models.vae_tiling import resized, set_vae_tiling, tile_px


@pytest.fixture()
def vae():
    """The published VAEs' shape of tiling (four levels, 8x down, sample_size 1024) with few channels."""
    from diffusers import AutoencoderKL

    torch.manual_seed(0)
    return AutoencoderKL(
        block_out_channels=[8, 8, 8, 8],
        layers_per_block=1,
        latent_channels=4,
        norm_num_groups=4,
        down_block_types=["DownEncoderBlock2D"] * 4,
        up_block_types=["UpDecoderBlock2D"] * 4,
        sample_size=1024,
    ).eval()


def decode_tiles(vae, side: int) -> int:
    """How many tiles diffusers' decode ran for a ``side`` px output (0: it decoded whole)."""
    tiles = []
    decoder = vae.decoder.forward

    def counted(z, *args, **kwargs):
        tiles.append(tuple(z.shape[-2:]))
        return decoder(z, *args, **kwargs)

    vae.decoder.forward = counted
    with torch.no_grad():
        out = vae.decode(torch.randn(1, 4, side // 8, side // 8)).sample
    assert out.shape[-2:] == (side, side)
    return 0 if tiles == [(side // 8, side // 8)] else len(tiles)


def test_diffusers_own_tiling_leaves_a_1024_decode_whole(vae):
    """The premise: ``enable_tiling()`` alone changes nothing at the families' native 1024²."""
    vae.enable_tiling()
    assert decode_tiles(vae, 1024) == 0


def test_a_planned_tiled_decode_runs_in_tiles_of_the_planned_size_and_untiled_after(vae):
    set_vae_tiling(vae, True, 512)
    assert (vae.tile_sample_min_size, vae.tile_latent_min_size) == (512, 64)
    assert decode_tiles(vae, 1024) == 9  # 64-latent tiles every 48 (a quarter overlapping): 3 x 3
    set_vae_tiling(vae, False, 512)  # the next plan does not tile: the VAE's own sizes again
    assert (vae.tile_sample_min_size, vae.tile_latent_min_size, vae.use_tiling) == (1024, 128, False)
    assert decode_tiles(vae, 1024) == 0


@pytest.mark.parametrize("arch, tile", [("flux", 512), ("cogview4", 512), ("wan21", 256), ("ltx", 512)])
def test_the_plan_counts_the_tile_the_family_decodes_with(arch, tile):
    """LTX's VAE tiles at 512 px where the other video VAEs tile at 256: its plans count a 512 px tile."""
    model = get_model_class(arch)("cuda", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
    assert tile_px(model) == tile
    gen = GenerateImageConfig(prompt="p", width=1024, height=1024, num_frames=9)
    work = model.workload(gen)
    frames = 9 if model.modality == "video" else 1
    held = frames if model.working_set.frames_at_once == 0 else min(frames, model.working_set.frames_at_once)
    assert work.decode_tiled - int(0.4 * 2**30) == tile * tile * held * model.working_set.per_pixel


def test_a_loaded_family_sets_its_vae_to_the_planned_tile_and_back(tiny_cache):
    model = get_model_class("flux")("cpu", ModelConfig(name_or_path="tiny:flux", arch="flux"))
    model.load_model()
    vae = model.parts["vae"]
    trained = vae.tile_sample_min_size
    model._set_vae_tiling(True)
    assert vae.use_tiling and vae.tile_sample_min_size == 512
    model._set_vae_tiling(False)
    assert not vae.use_tiling and vae.tile_sample_min_size == trained


def test_a_smaller_tile_keeps_each_vae_s_proportions():
    """Latent tiles and strides scale with the tile: Wan's 192 px stride left beside a 128 px tile would skip
    pixels; HunyuanVideo 1.5's latent tile is a sixteenth of its pixel tile."""
    wan = {"tile_sample_min_height": 256, "tile_sample_min_width": 256, "tile_sample_stride_height": 192}
    assert resized(wan, 128) == {
        "tile_sample_min_height": 128,
        "tile_sample_min_width": 128,
        "tile_sample_stride_height": 96,
    }
    hunyuan15 = {"tile_sample_min_height": 256, "tile_latent_min_height": 16}
    assert resized(hunyuan15, 192) == {"tile_sample_min_height": 192, "tile_latent_min_height": 12}


def test_a_video_vae_decodes_in_the_smaller_tiles_its_plan_counted_and_its_own_after(tiny_cache):
    """Wan 2.1's tiny checkpoint, diffusers' own tiled decode: the plan's 128 px tiles while it tiles, 256 after."""
    model = get_model_class("wan21")("cpu", ModelConfig(name_or_path="tiny:wan21", arch="wan21"))
    model.load_model()
    vae = model.parts["vae"]
    model.plan = Plan({}, True, 0, 0, work=Workload(0, 0, 0, tile=128))
    seen = []
    tiled = vae.tiled_decode

    def spy(z, *args, **kwargs):
        seen.append((vae.tile_sample_min_height, vae.tile_sample_stride_height))
        return tiled(z, *args, **kwargs)

    vae.tiled_decode = spy
    model._set_vae_tiling(True)
    with torch.no_grad():
        video = vae.decode(torch.randn(1, vae.config.z_dim, 1, 32, 32)).sample
    assert seen == [(128, 96)] and video.shape[-2:] == (256, 256) and torch.isfinite(video).all()
    model._set_vae_tiling(False)
    assert (vae.use_tiling, vae.tile_sample_min_height, vae.tile_sample_stride_height) == (False, 256, 192)


def test_a_plan_tiles_smaller_rather_than_refuse_and_says_so():
    """HunyuanVideo 1.5 at its native 848x480x121 on 16 GiB: its decode in the VAE's own 256 px tiles needs 15.5 GiB
    beside the weights, and the request was refused; in 192 px tiles it fits. On 24 GiB its own tiles fit; on 12
    GiB nothing does, and the error names the smallest plan, the smallest tile's."""
    from testing.bench.plan_table import predicted

    on16, on24, on12 = (predicted("hunyuan_video15", card, 64) for card in (16, 24, 12))
    assert on16["fits"] and on16["summary"].endswith("VAE tiled in 192 px tiles") and on16["peak_gib"] <= 15.4
    assert on24["fits"] and on24["summary"].endswith("VAE tiled")
    assert not on12["fits"] and "VAE tiled in 128 px tiles) needs" in on12["summary"]


@pytest.mark.parametrize("fails_below", [256, 0])
def test_a_decode_out_of_memory_decodes_again_in_smaller_tiles_keeping_the_latents(
    tiny_cache, monkeypatch, fails_below
):
    """HunyuanVideo 1.5 at 24 GiB (H200, 2026-12-03): its decode ran out in 256 px tiles after sampling, and the
    engine sampled the whole request again under a wider plan. Now the decode alone runs again, in the family's
    smaller tiles (SD 1.5's 512 px: 384, then 256), and the user is told; once the smallest fails too, the
    out-of-memory goes to the engine (its re-plan). Sampling runs once either way. The next request of that
    size decodes in the tile that fitted, without failing first."""
    from diffusers import AutoencoderKL

    model = get_model_class("sd1")("cpu", ModelConfig(name_or_path="tiny:sd1", arch="sd1"))
    model.load_model()
    model.plan = Plan({}, True, 0, 0, work=Workload(0, 0, 0))
    tiles, steps, statuses = [], [], []
    decode = AutoencoderKL._decode

    def runs_out_above(vae, z, *args, **kwargs):
        tiles.append(vae.tile_sample_min_size)
        if vae.tile_sample_min_size > fails_below:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.78 GiB (injected)")
        return decode(vae, z, *args, **kwargs)

    monkeypatch.setattr(AutoencoderKL, "_decode", runs_out_above)
    model.sample_step_hook = steps.append
    model.add_status_update_hook(lambda message, stage: statuses.append((stage, message)))
    gen = GenerateImageConfig(prompt="p", width=64, height=64, num_inference_steps=2)
    if fails_below:
        media = model.generate_media(gen)
        assert media.kind == "image" and media.image.shape == (64, 64, 3)
    else:
        with pytest.raises(torch.cuda.OutOfMemoryError):
            model.generate_media(gen)
    assert tiles == [512, 384, 256] and len(steps) == 2
    assert [m for stage, m in statuses if m.startswith("Out of memory")] == [
        "Out of memory decoding in 512 px tiles: decoding in 384 px tiles",
        "Out of memory decoding in 384 px tiles: decoding in 256 px tiles",
    ]
    # ...and a GPU benchmark's record keeps them (testing/bench/budget_probe.py: it did not on 2026-12-04)
    kept = [m for stage, m in statuses if is_note({"stage": stage, "message": m})]
    assert len(kept) == 2 and kept == [m for _, m in statuses if m.startswith("Out of memory")]
    assert "decode" not in model.parts["vae"].__dict__  # the pooled VAE is left as it was
    if fails_below:  # the holder's next decode of latents that shape starts in the tile that fitted
        statuses.clear()
        model.generate_media(gen)
        assert tiles[3:] == [256] and not [m for stage, m in statuses if m.startswith("Out of memory")]
