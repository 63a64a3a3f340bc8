"""A family's float pixels become the uint8 file bytes: the in-place conversion gives exactly what the plain
formula gives (it replaced four fresh arrays a request), for every value a sampler can produce."""

import numpy as np

from toolkit.media import pixels_to_uint8


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
