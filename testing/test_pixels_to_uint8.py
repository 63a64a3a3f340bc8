"""A family's float pixels become the uint8 file bytes: the in-place conversion gives exactly what the plain
formula gives (it replaced four fresh arrays a request), for every value a sampler can produce; so does the
conversion on the pixels' own device, from a channels-first tensor (toolkit/pixels.py)."""

import numpy as np
import torch

from toolkit.pixels import channels_first_to_uint8, pixels_to_uint8


def _reference(pixels):
    return (np.nan_to_num(pixels.clip(0, 1), nan=0.0) * 255).round().astype("uint8")


def _awkward_pixels(shape):
    rng = np.random.default_rng(7)
    pixels = rng.uniform(-0.2, 1.2, size=shape).astype(np.float32)
    flat = pixels.reshape(-1)
    flat[:6] = [np.nan, np.inf, -np.inf, 0.5 / 255, 1.5 / 255, 254.5 / 255]  # NaN, infinities, exact halves
    return pixels


def test_an_image_converts_byte_for_byte_as_the_plain_formula_and_its_input_is_untouched():
    pixels = _awkward_pixels((64, 48, 3))
    before = pixels.copy()
    with np.errstate(invalid="raise"):  # a NaN reaching the cast is undefined behaviour, not a black pixel
        out = pixels_to_uint8(pixels)
    assert out.dtype == np.uint8 and out.shape == (64, 48, 3)
    assert np.array_equal(out, _reference(pixels))
    assert np.array_equal(pixels, before, equal_nan=True)
    assert out.reshape(-1)[:3].tolist() == [0, 255, 0]  # NaN is black, +inf white, -inf black


def test_video_frames_and_half_precision_convert_the_same_way():
    frames = _awkward_pixels((5, 16, 24, 3))
    half = frames.astype(np.float16)
    with np.errstate(invalid="raise"):
        assert np.array_equal(pixels_to_uint8(frames), _reference(frames))
        assert np.array_equal(pixels_to_uint8(half), _reference(half.astype(np.float32)))


def test_a_channels_first_tensor_converts_to_the_same_channels_last_bytes_in_float32_and_bf16():
    """What an image pipeline's ``"pt"`` output becomes on its device: the host path's bytes, NaN and infinities
    included, for bf16 (what a GPU pipeline gives) as for float32; frames first keeps its frames."""
    pixels = _awkward_pixels((64, 48, 3))
    chw = torch.from_numpy(pixels).permute(2, 0, 1)
    out = channels_first_to_uint8(chw)
    assert out.dtype == np.uint8 and out.shape == (64, 48, 3) and out.flags["C_CONTIGUOUS"]
    assert np.array_equal(out, pixels_to_uint8(pixels))
    assert out.reshape(-1)[:3].tolist() == [0, 255, 0]
    half = chw.to(torch.bfloat16)
    assert np.array_equal(channels_first_to_uint8(half), pixels_to_uint8(half.permute(1, 2, 0).float().numpy()))
    frames = _awkward_pixels((5, 16, 24, 3))
    assert np.array_equal(channels_first_to_uint8(torch.from_numpy(frames).permute(0, 3, 1, 2)), _reference(frames))
    assert torch.isnan(chw).any()  # the input is left as it was
