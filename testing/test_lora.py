"""LoRA as unmerged PEFT adapters on a pooled denoiser: on, off and switch match a fresh model in that state."""

import numpy as np
import pytest
from PIL import Image

from testing.engine_harness import EngineHarness
from testing.test_pool import counters, sd1


def make_lora(path, seed: int) -> str:
    """A random LoRA for the tiny SD1 UNet, saved the way trainers save them (diffusers LoRA format)."""
    from diffusers import StableDiffusionPipeline

    from testing.test_lora_formats import peft_lora

    StableDiffusionPipeline.save_lora_weights(str(path), unet_lora_layers=peft_lora(seed), safe_serialization=True)
    return str(path / "pytorch_lora_weights.safetensors")


@pytest.fixture(scope="module")
def loras(tmp_path_factory, tiny_cache):
    folder = tmp_path_factory.mktemp("loras")
    return {name: make_lora(folder / name, seed) for name, seed in (("a", 1), ("b", 2))}


def image_of(h, body) -> np.ndarray:
    out = h.client.generate_wait(body)
    assert out["http_status"] == 200, out
    return np.asarray(Image.open(out["result"]["path"]), dtype=np.float32)


def with_lora(path=None, multiplier=1.0):
    body = sd1(seed=5)
    if path:
        body["model"].update(lora_path=path, lora_multiplier=multiplier)
    return body


def fresh(tmp_path, body, name) -> np.ndarray:
    h = EngineHarness(tmp_path / name, lora_roots=[str(tmp_path.parent)])
    try:
        return image_of(h, body)
    finally:
        h.close()


def test_lora_on_off_and_switch_match_fresh_models_without_reloading_the_unet(tmp_path, loras):
    h = EngineHarness(tmp_path / "resident", lora_roots=[str(tmp_path.parent)])  # the loras folder is a sibling
    try:
        base = image_of(h, with_lora())
        misses = counters(h)["misses"]
        on_a = image_of(h, with_lora(loras["a"]))
        on_b = image_of(h, with_lora(loras["b"]))
        off = image_of(h, with_lora())
        half_a = image_of(h, with_lora(loras["a"], 0.5))
        assert counters(h)["misses"] == misses  # LoRA switches never reloaded a component
        assert counters(h)["holder_builds"] >= 5
    finally:
        h.close()
    assert np.abs(on_a - base).max() > 10  # the LoRA does something
    assert np.abs(on_a - on_b).max() > 10
    assert np.abs(half_a - on_a).max() > 1
    for name, image, body in (
        ("fresh_a", on_a, with_lora(loras["a"])),
        ("fresh_b", on_b, with_lora(loras["b"])),
        ("fresh_base", off, with_lora()),
    ):
        reference = fresh(tmp_path, body, name)
        assert np.abs(image - reference).max() <= 2, name


def test_lora_paths_outside_the_lora_folders_are_refused(engine_server):
    r = engine_server.client.http.post("/generate", json=with_lora("/etc/passwd"))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "lora_path"


def test_quantize_with_a_qtype_this_device_cannot_run_is_422(engine_server):
    body = sd1()
    body["model"].update(quantize=True, qtype="float8")
    r = engine_server.client.http.post("/generate", json=body)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "qtype"
    body["model"].update(qtype="nf17")
    r = engine_server.client.http.post("/generate", json=body)
    assert r.status_code == 422 and "not supported" in r.text
