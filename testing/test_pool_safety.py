"""Pooled modules are never mutated in ways that change their identity: one test per rule
(README "Memory: the component pool")."""

import hashlib

import pytest
import torch

from testing import test_lora
from testing.engine_harness import EngineHarness
from testing.test_pool import run, sd1
from toolkit.models.components.loading import load_component
from toolkit.models.components.pool import ComponentPool, active_pool

loras = test_lora.loras  # the module-scoped fixture: two small LoRA files
with_lora = test_lora.with_lora


def base_weights_digest(module) -> str:
    """Hash of the base (non-adapter) weights: what identity promises stays the same."""
    h = hashlib.sha1()
    for name, tensor in sorted(module.state_dict().items()):
        if "lora_" not in name:
            h.update(name.replace(".base_layer", "").encode())  # PEFT wraps the layer; the weight is the same
            h.update(tensor.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


@pytest.fixture()
def harness(tmp_path, tiny_cache):
    h = EngineHarness(tmp_path, lora_roots=[str(tmp_path.parent)])
    yield h
    h.close()


def pooled_unet(h):
    [entry] = [e for k, e in h.engine.pool.entries.items() if k.subfolder == "unet"]
    return entry


def test_a_lora_is_never_merged_into_the_pooled_denoiser(harness, loras):
    run(harness, sd1())
    entry = pooled_unet(harness)
    before = base_weights_digest(entry.module)
    run(harness, with_lora(loras["a"]))
    assert pooled_unet(harness) is entry  # same entry, same module
    assert base_weights_digest(entry.module) == before
    assert not harness.engine.holder.pipeline.fused_loras  # unmerged adapters only


def test_modules_are_on_their_keyed_device_after_every_request(harness):
    run(harness, sd1())
    for key, entry in harness.engine.pool.entries.items():
        params = list(entry.module.parameters()) if hasattr(entry.module, "parameters") else []
        assert all(str(p.device) == key.device for p in params), key


def test_offload_policy_is_part_of_identity_and_hooks_go_with_eviction(tiny_cache):
    pool = ComponentPool()
    with active_pool(pool):
        plain = load_component("diffusers.AutoencoderKL", "tiny:sd1", "vae", dtype="float32", device="cpu")
        offloaded = load_component(
            "diffusers.AutoencoderKL",
            "tiny:sd1",
            "vae",
            dtype="float32",
            device="cpu",
            offload="group:1",
            onload_device="cpu",
        )
    assert plain is not offloaded and len(pool.entries) == 2
    assert not any(hasattr(m, "_diffusers_hook") for m in plain.modules())
    [key] = [k for k in pool.entries if k.offload]
    hooked = [m for m in offloaded.modules() if hasattr(m, "_diffusers_hook")]
    assert hooked and any(m._diffusers_hook.hooks for m in hooked)
    pool.evict([key])
    assert len(pool.entries) == 1 and pool.counters["evictions"] == 1
    assert not any(hasattr(m, "_diffusers_hook") for m in offloaded.modules())  # the hook objects are gone
    assert all(unhooked(m) for m in hooked)


def unhooked(module) -> bool:
    """``forward`` is the class's own method again, not a hook's wrapper."""
    return getattr(module.forward, "__func__", None) is type(module).forward


def test_evicting_a_module_with_accelerate_hooks_removes_them(tiny_cache):
    """Model CPU offload (low_vram) puts accelerate hooks on a component; they go with its eviction."""
    from accelerate.hooks import ModelHook, add_hook_to_module

    pool = ComponentPool()
    with active_pool(pool):
        vae = load_component("diffusers.AutoencoderKL", "tiny:sd1", "vae", dtype="float32", device="cpu")
    add_hook_to_module(vae, ModelHook())
    add_hook_to_module(vae.decoder, ModelHook())
    assert hasattr(vae, "_hf_hook") and hasattr(vae.decoder, "_hf_hook")
    [key] = list(pool.entries)
    pool.evict([key])
    assert not hasattr(vae, "_hf_hook") and not hasattr(vae.decoder, "_hf_hook")
    assert unhooked(vae) and unhooked(vae.decoder)


class FakeParameter:
    def __init__(self, device):
        self.device = device


class FakeModule:
    """A module whose device is a label: placement can be checked on a machine with one device."""

    def __init__(self, device):
        self.param = FakeParameter(device)
        self.moves = []

    def parameters(self):
        return iter([self.param])

    def to(self, device):
        self.moves.append(device)
        self.param.device = device
        return self


@pytest.mark.parametrize("fails", [False, True])
def test_a_component_moved_during_generation_is_moved_back(tmp_path, fails):
    """A pipeline may move modules while it samples (offload, a family's own shuffling); the shared pooled
    module must be where its key says afterwards, also when the generation fails or is cancelled."""
    from toolkit.config_modules import GenerateImageConfig, ModelConfig
    from toolkit.models.archs.sd1 import SD1Model

    model = SD1Model("cpu", ModelConfig(name_or_path="tiny:sd1"))
    unet, vae = FakeModule("cuda:0"), FakeModule("cuda:1")
    model.parts = {"unet": unet, "vae": vae, "tokenizer": object()}
    model.pipeline = object()

    def sample(pipeline, gen, batch=None):
        unet.to("cpu")
        vae.to("meta")
        if fails:
            raise RuntimeError("failed mid-way")
        return "media"

    model._sample = sample
    gen = GenerateImageConfig(prompt="x", width=64, height=64, output_folder=str(tmp_path))
    if fails:
        with pytest.raises(RuntimeError):
            model.generate_media(gen)
    else:
        assert model.generate_media(gen) == "media"
    assert (unet.param.device, vae.param.device) == ("cuda:0", "cuda:1")
    assert unet.moves == ["cpu", "cuda:0"] and vae.moves == ["meta", "cuda:1"]


def test_quantization_is_part_of_identity_and_never_touches_the_plain_copy(tiny_cache):
    pool = ComponentPool()
    with active_pool(pool):
        plain = load_component("diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bfloat16", device="cpu")
        quantized = load_component(
            "diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bfloat16", device="cpu", qtype="int8"
        )
    assert quantized is not plain and pool.counters == {**pool.counters, "hits": 0, "misses": 2}
    to_q = lambda m: m.down_blocks[0].attentions[0].transformer_blocks[0].attn1.to_q.weight  # noqa: E731
    assert type(to_q(plain)).__name__ == "Parameter" and "Int8" in type(to_q(quantized)).__name__
    assert {k.qtype for k in pool.entries} == {None, "int8"}


def test_an_int8_request_runs_and_is_its_own_pool_entry(engine_server):
    from testing.test_pool import sd1

    body = sd1()
    body["model"].update(quantize=True, qtype="int8", quantize_te=False, dtype="bf16")
    out = engine_server.client.generate_wait(body)
    assert out["http_status"] == 200, out
    keys = [e["key"] for e in engine_server.client.health()["pool"]]
    assert any("UNet2DConditionModel" in k and "|int8|" in k for k in keys)
    assert not any("CLIPTextModel" in k and "int8" in k for k in keys)  # quantize_te false: encoder untouched


def test_a_device_move_by_a_holder_is_moved_back(harness):
    run(harness, sd1())
    holder = harness.engine.holder
    vae = holder.parts["vae"]
    placement = holder._placement()
    vae.to(torch.float32)  # a holder touching its module (dtype only: this machine has no second device)
    holder._restore_placement(placement)
    assert all(str(p.device) == "cpu" for p in vae.parameters())
