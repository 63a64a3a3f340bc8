"""PNG stills through fpng (toolkit/png_writer.py): the same pixels, valid chunks, the settings where every reader
looks for them, and Pillow for what fpng cannot write or when it is missing."""

import sys

import numpy as np
import pytest
from PIL import Image, PngImagePlugin

from toolkit.media import save_image
from toolkit.media_info import FULL, PARAMETERS, read_info
from toolkit.png_writer import _itxt, fast_png

TEXTS = {PARAMETERS: "un renard roux — 狐\nSteps: 28, Seed: 1", FULL: '{"prompt": "x"}'}


def _chunk_types(path) -> list:
    data, at, kinds = open(path, "rb").read(), 8, []
    while at < len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        kinds.append(data[at + 4 : at + 8].decode())
        at += 12 + length
    return kinds


@pytest.mark.parametrize("channels", [3, 4])
def test_an_rgb_or_rgba_still_is_written_by_fpng_with_the_same_pixels_and_its_settings(tmp_path, channels):
    pixels = np.random.default_rng(channels).integers(0, 256, (37, 53, channels), dtype=np.uint8)
    path = tmp_path / "a.png"
    meta = save_image(pixels, str(path), info=TEXTS)
    assert (meta["width"], meta["height"]) == (53, 37)
    assert _chunk_types(path) == ["IHDR", "iTXt", "iTXt", "fdEC", "IDAT", "IEND"]  # fdEC: fpng's own mark
    with Image.open(path) as img:
        img.verify()  # every chunk's CRC
    with Image.open(path) as img:
        assert np.array_equal(np.asarray(img), pixels)
    assert read_info(str(path)) == TEXTS


def test_the_text_chunks_are_byte_for_byte_what_pillow_writes(tmp_path):
    chunks = PngImagePlugin.PngInfo()
    for key, text in TEXTS.items():
        chunks.add_itxt(key, text)
    Image.new("RGB", (2, 2)).save(tmp_path / "p.png", pnginfo=chunks)
    data = (tmp_path / "p.png").read_bytes()
    for key, text in TEXTS.items():
        assert _itxt(key, text) in data


def test_what_fpng_cannot_write_goes_through_pillow_with_its_settings(tmp_path):
    grey = np.arange(64, dtype=np.uint8).reshape(8, 8)
    assert fast_png(grey) is None and fast_png(np.zeros((4, 4, 3), np.uint16)) is None
    save_image(grey, str(tmp_path / "g.png"), info=TEXTS)
    assert "fdEC" not in _chunk_types(tmp_path / "g.png")
    with Image.open(tmp_path / "g.png") as img:
        assert img.mode == "L" and np.array_equal(np.asarray(img), grey)
    assert read_info(str(tmp_path / "g.png")) == TEXTS


def test_without_the_fpng_package_pillow_writes_every_png(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "fpng", None)  # import fails as if it were not installed
    pixels = np.full((6, 5, 3), 200, np.uint8)
    save_image(pixels, str(tmp_path / "b.png"), info=TEXTS)
    assert "fdEC" not in _chunk_types(tmp_path / "b.png")
    with Image.open(tmp_path / "b.png") as img:
        assert np.array_equal(np.asarray(img), pixels)
    assert read_info(str(tmp_path / "b.png")) == TEXTS
