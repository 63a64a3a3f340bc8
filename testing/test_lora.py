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


def text_encoder_lora(path, seed: int) -> str:
    """A random LoRA on the tiny SD1 text encoder's attention projections as well as its UNet's."""
    from diffusers import StableDiffusionPipeline
    from peft import LoraConfig, get_peft_model_state_dict
    from transformers import CLIPTextModel

    from testing.lora_files import randomize_adapters
    from testing.test_lora_formats import RANK, peft_lora
    from toolkit.models.tiny import tiny_checkpoint

    encoder = CLIPTextModel.from_pretrained(tiny_checkpoint("sd1"), subfolder="text_encoder")
    encoder.add_adapter(
        LoraConfig(r=RANK, lora_alpha=RANK, init_lora_weights=False, target_modules=["q_proj", "v_proj"])
    )
    randomize_adapters(encoder, seed)
    StableDiffusionPipeline.save_lora_weights(
        str(path),
        unet_lora_layers=peft_lora(seed),
        text_encoder_lora_layers=get_peft_model_state_dict(encoder),
        safe_serialization=True,
    )
    return str(path / "pytorch_lora_weights.safetensors")


def test_a_prompt_encodes_once_for_every_denoiser_lora_and_again_for_one_on_the_text_encoder(tmp_path, loras):
    """A compare grid's checkpoints: each LoRA builds its own pipeline around the pooled modules, and a LoRA that
    adapts the denoiser alone leaves the encoding as it was, so the same prompt is answered from the prompt cache
    (the images still match fresh engines: the test above). A LoRA on the text encoder changes the encoding: its
    prompt is encoded again."""
    encoder_lora = text_encoder_lora(tmp_path / "te", seed=3)
    h = EngineHarness(tmp_path / "resident", lora_roots=[str(tmp_path.parent), str(tmp_path)])
    try:
        image_of(h, with_lora(loras["a"]))
        cached = h.client.health()["prompt_cache"]
        image_of(h, with_lora(loras["b"]))
        after_b = h.client.health()["prompt_cache"]
        image_of(h, with_lora(encoder_lora))
        after_te = h.client.health()["prompt_cache"]
    finally:
        h.close()
    assert after_b["misses"] == cached["misses"] and after_b["hits"] > cached["hits"], (cached, after_b)
    assert after_te["misses"] > after_b["misses"], (after_b, after_te)
