"""Settings embedded in every output, where other tools read them (toolkit/media_info.py): A1111's ``parameters``
text in PNG chunks and JPEG/WebP EXIF, the full request as JSON in PNGs, container comments for video and audio.
Written through the real writers (Pillow, PyAV, libsndfile) and read back from the files."""

import json

import numpy as np
import pytest
from PIL import Image

from testing.stream_contract import body_for
from toolkit.media import save_media
from toolkit.media_info import FULL, PARAMETERS, info_for, parameters_text, read_info

CONFIG = {
    "model": {"arch": "flux", "name_or_path": "black-forest-labs/FLUX.1-dev", "lora_path": None},
    "sample": {"prompt": "a fox, snow", "negative_prompt": "blurry", "num_inference_steps": 28, "seed": 7,
               "guidance_scale": 3.5, "width": 1024, "height": 768, "num_frames": 1},
    "stream": {"latents": "x0"},
}  # fmt: skip


def test_the_parameters_text_is_a1111s_layout():
    assert parameters_text(CONFIG).splitlines() == [
        "a fox, snow",
        "Negative prompt: blurry",
        "Steps: 28, CFG scale: 3.5, Seed: 7, Size: 1024x768, Model: black-forest-labs/FLUX.1-dev, Arch: flux, "
        "Version: ai-toolkit inference engine",
    ]


def test_a_plan_that_quantized_or_streamed_is_named_among_the_settings():
    """``Memory``: where the plan put weights in 8 bits or streamed them (toolkit/memory_quality.py ``file_note``);
    a value with a comma is quoted, as A1111 quotes it, so its parser keeps the pair whole."""
    pairs = parameters_text(CONFIG | {"memory": "float8dq transformer resident"}).splitlines()[-1]
    assert "Arch: flux, Memory: float8dq transformer resident, Version" in pairs
    assert 'Memory: "a, b"' in parameters_text(CONFIG | {"memory": "a, b"})
    assert "Memory" not in parameters_text(CONFIG)


@pytest.mark.parametrize(
    "ext,kind",
    [("png", "image"), ("jpg", "image"), ("webp", "image"), ("webp", "video"), ("mp4", "video"), ("wav", "audio"),
     ("flac", "audio"), ("mp3", "audio")],
)  # fmt: skip
def test_every_format_carries_the_settings(ext, kind, tmp_path):
    media = {
        "image": np.full((32, 32, 3), 120, np.uint8),
        "video": np.stack([np.full((32, 32, 3), v, np.uint8) for v in (0, 90, 180)]),
        "audio": np.sin(np.linspace(0, 200, 8000, dtype=np.float32))[None] * 0.5,
    }[kind]
    path = tmp_path / f"out.{ext}"
    info = info_for(CONFIG)
    save_media(media, path, kind=kind, fps=8, sample_rate=16000, info=info)
    found = read_info(path)
    assert found[PARAMETERS] == info[PARAMETERS]
    if ext == "png":  # the full request too, and under the key A1111 and its forks read
        assert json.loads(found[FULL]) == json.loads(info[FULL])
        assert Image.open(path).text[PARAMETERS].startswith("a fox, snow\nNegative prompt: blurry")


def test_a_file_without_settings_reads_as_empty(tmp_path):
    save_media(np.zeros((8, 8, 3), np.uint8), tmp_path / "plain.png", kind="image")
    assert read_info(tmp_path / "plain.png") == {}


def test_an_engine_result_embeds_its_request(engine_server):
    out = engine_server.client.generate_wait(body_for("sd1", steps=2, seed=41))
    found = read_info(out["result"]["path"])
    assert "Steps: 2" in found[PARAMETERS] and "Seed: 41" in found[PARAMETERS] and "Arch: sd1" in found[PARAMETERS]
    request = json.loads(found[FULL])
    assert request["sample"]["seed"] == 41 and request["model"]["arch"] == "sd1"
