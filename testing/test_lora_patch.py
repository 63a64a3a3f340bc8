"""``engine.lora_patch``: LoRAs added into the resident denoiser's weights give the images unmerged adapters give,
the checkpoint's own weights come back bit for bit after any number of switches, a compiled denoiser recompiles
nothing, and what cannot be patched stays an adapter and says why. Tiny Flux.1 and SD 1.5 on the CPU; images are
compared with engines whose LoRAs load as unmerged adapters (the default)."""

import os

import numpy as np
import pytest
import torch

from testing.engine_harness import EngineHarness
from testing.test_lora_hotswap import body, eager_compile, graphs, loras, run  # noqa: F401 (fixtures)


def engine(tmp_path, files, name: str, patch: bool = True, compile: str = "off", roots=()) -> EngineHarness:
    roots = [os.path.dirname(files["a"]), *roots]
    return EngineHarness(tmp_path / name, compile=compile, lora_patch=patch, lora_roots=roots)


def denoiser(h, role: str = "transformer"):
    return h.engine.resident.holder.parts[role]


def lora_layers(module) -> int:
    from peft.tuners.lora import LoraLayer

    return sum(isinstance(m, LoraLayer) for m in module.modules())


def weights(module) -> dict:
    return {name: p.detach().clone() for name, p in module.state_dict().items()}


def test_patched_loras_match_adapters_and_the_checkpoint_comes_back_bit_for_bit(tmp_path, loras):  # noqa: F811
    bodies = {
        "a": body(loras["a"]),
        "b": body(loras["b"]),
        "a_and_mod": body(loras["a"], loras["mod"], multipliers=[0.7, 1.3]),
        "half_a": body(loras["a"], multipliers=[0.5]),
    }
    h = engine(tmp_path, loras, "patched")
    try:
        base, _ = run(h, body())
        original = weights(denoiser(h))
        misses = h.client.health()["counters"]["misses"]
        images, said = {}, {}
        for name, b in bodies.items():
            images[name], said[name] = run(h, b)
            assert lora_layers(denoiser(h)) == 0, name  # the adapters went once their deltas were in the weights
            if name == "a_and_mod":
                health = h.client.health()["lora_patch"]
        again, _ = run(h, body())
        after = weights(denoiser(h))
        assert h.client.health()["counters"]["misses"] == misses  # never reloaded
        plain_health = h.client.health()["lora_patch"]
    finally:
        h.close()
    assert any("added into the weights" in m for m in said["a"]), said["a"]
    files = [(p["file"], p["multiplier"]) for p in health["patched"]]
    assert health["enabled"] and files == [("a.safetensors", 0.7), ("mod.safetensors", 1.3)], health
    assert health["originals_bytes"]["host"] > 0 and health["originals_bytes"]["device"] == 0
    assert plain_health["patched"] == []
    assert all(torch.equal(original[k], after[k]) for k in original)  # copied back, not subtracted
    assert np.array_equal(base, again)
    reference = engine(tmp_path, loras, "adapters", patch=False)
    try:
        expected = {name: run(reference, b)[0] for name, b in bodies.items()}
    finally:
        reference.close()
    for name, image in images.items():
        assert np.abs(image - base).max() > 10, name  # the LoRA does something
        assert np.abs(image - expected[name]).max() <= 2, name
    assert np.abs(images["half_a"] - images["a"]).max() > 1


def test_on_a_compiled_denoiser_patched_loras_recompile_nothing(tmp_path, loras, eager_compile):  # noqa: F811
    """Unlike hot-swap slots, a patch leaves the denoiser's modules as the checkpoint built them: the graphs the
    first plain request traced serve every LoRA after it."""
    h = engine(tmp_path, loras, "compiled", compile="max")
    try:
        base, _ = run(h, body())
        traced = graphs(h)
        on_a, _ = run(h, body(loras["a"]))
        on_b, _ = run(h, body(loras["b"]))
        none, _ = run(h, body())
        assert graphs(h) == traced
    finally:
        h.close()
    assert np.array_equal(base, none)
    assert np.abs(on_a - on_b).max() > 10 and np.abs(on_a - none).max() > 10


def test_a_lora_on_the_text_encoder_stays_an_adapter_and_the_next_patch_removes_it(tmp_path, tiny_cache):
    from testing.test_lora import make_lora, text_encoder_lora, with_lora

    files = {"a": make_lora(tmp_path / "a", seed=1), "te": text_encoder_lora(tmp_path / "te", seed=3)}
    h = engine(tmp_path, files, "patched", roots=[str(tmp_path)])
    try:
        on_te, said_te = run(h, with_lora(files["te"]))
        assert lora_layers(denoiser(h, "unet")) > 0  # adapters, as without the setting
        on_a, said_a = run(h, with_lora(files["a"]))
        assert lora_layers(denoiser(h, "unet")) == 0
    finally:
        h.close()
    assert any("stay unmerged adapters (a LoRA reaches the text_encoder)" in m for m in said_te), said_te
    assert any("added into the weights" in m for m in said_a), said_a
    reference = engine(tmp_path, files, "adapters", patch=False, roots=[str(tmp_path)])
    try:
        assert np.abs(on_te - run(reference, with_lora(files["te"]))[0]).max() <= 2
        assert np.abs(on_a - run(reference, with_lora(files["a"]))[0]).max() <= 2
    finally:
        reference.close()


@pytest.mark.parametrize("value, expected", [(None, False), (True, True), ("1", True)])
def test_the_setting_reads_like_the_other_flags(value, expected):
    from extensions_built_in.inference_engine.settings import EngineSettings

    assert EngineSettings.from_config({"lora_patch": value}).lora_patch is expected


def test_originals_kept_beside_the_weights_go_with_the_holder(tmp_path, loras, monkeypatch):  # noqa: F811
    """Where the plan leaves room on the GPU the originals are copied there (faster to copy back than from the
    host); the pool does not count them, so they are copied back and freed when the holder goes. (On the CPU the
    room is patched in: both copies are CPU memory here, and what is tested is when each goes.)"""
    from testing.test_lora import with_lora
    from toolkit.models import lora_patch

    monkeypatch.setattr(lora_patch, "_room_on_device", lambda model: 2**40)
    h = engine(tmp_path, loras, "beside")
    try:
        base, _ = run(h, body())
        original = weights(denoiser(h))
        on_a, said = run(h, body(loras["a"]))
        state = getattr(denoiser(h), lora_patch.STATE)
        assert state.device and not state.host and any("beside them on the GPU" in m for m in said), said
        assert h.client.health()["lora_patch"]["originals_bytes"]["device"] > 0
        module = denoiser(h)
        run(h, with_lora())  # another model: this holder goes, and no request of Flux's undoes the patch
        assert not state.device and not state.key
        assert all(torch.equal(original[k], v) for k, v in weights(module).items())
        again, _ = run(h, body())
    finally:
        h.close()
    assert np.array_equal(base, again) and np.abs(on_a - base).max() > 10


def test_a_patch_that_fails_midway_is_copied_back_before_the_next_request(tmp_path, loras, monkeypatch):  # noqa: F811
    from peft.tuners.lora import Linear

    delta, calls = Linear.get_delta_weight, []

    def fails_on_the_third(layer, adapter):
        calls.append(adapter)
        if len(calls) == 3:
            raise RuntimeError("a delta that failed")
        return delta(layer, adapter)

    h = engine(tmp_path, loras, "midway")
    try:
        base, _ = run(h, body())
        original = weights(denoiser(h))
        on_a, _ = run(h, body(loras["a"]))
        run(h, body())
        monkeypatch.setattr(Linear, "get_delta_weight", fails_on_the_third)
        failed = [f.header for f in h.client.generate(body(loras["a"]))]
        monkeypatch.setattr(Linear, "get_delta_weight", delta)
        assert any(x.get("type") == "error" and "a delta that failed" in x.get("message", "") for x in failed), failed
        retried, _ = run(h, body(loras["a"]))  # the same LoRA at once: patched whole, not taken for done
        again, _ = run(h, body())
        assert all(torch.equal(original[k], v) for k, v in weights(denoiser(h)).items())
    finally:
        h.close()
    assert np.array_equal(retried, on_a) and np.array_equal(base, again)
