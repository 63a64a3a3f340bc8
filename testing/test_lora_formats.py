"""LoRA files as trainers write them: one random LoRA for the tiny SD 1.5 UNet, saved in each layout users bring
(diffusers' ``unet.``-prefixed PEFT keys, bare PEFT keys, kohya's ``lora_unet_*`` with ``lora_down`` / ``lora_up``
/ ``alpha``, which is also what AI Toolkit writes for SD 1.5), must change the image exactly as the PEFT original
does; for SDXL, AI Toolkit's kohya keys over Stability's LDM block names do the same. A LoRA for another family is
refused by name, several LoRAs apply at once, and a refused request leaves the engine serving."""

import numpy as np
import pytest
from PIL import Image

from testing.engine_harness import EngineHarness
from testing.stream_contract import body_for
from testing.test_pool import sd1

RANK = 4


def peft_lora(seed: int, arch: str = "sd1") -> dict:
    """PEFT state dict of a random rank-4 LoRA on a tiny UNet's attention projections."""
    from diffusers import UNet2DConditionModel
    from peft import LoraConfig, get_peft_model_state_dict

    from testing.lora_files import randomize_adapters
    from toolkit.models.tiny import tiny_checkpoint

    unet = UNet2DConditionModel.from_pretrained(tiny_checkpoint(arch), subfolder="unet")
    unet.add_adapter(
        LoraConfig(
            r=RANK, lora_alpha=RANK, init_lora_weights=False, target_modules=["to_q", "to_k", "to_v", "to_out.0"]
        )
    )
    randomize_adapters(unet, seed)
    return {k: v.contiguous() for k, v in get_peft_model_state_dict(unet).items()}


def kohya(state: dict, module_name=lambda module: module) -> dict:
    """kohya-ss layout: ``lora_unet_`` + the module path with dots as underscores, ``lora_down`` / ``lora_up``,
    and an ``alpha`` per module (alpha = rank: scale 1, as the PEFT original)."""
    import torch

    out = {}
    for key, value in state.items():
        module, _, suffix = key.rpartition(".lora_")
        name = "lora_unet_" + module_name(module).replace(".", "_")
        out[f"{name}.lora_down.weight" if suffix.startswith("A") else f"{name}.lora_up.weight"] = value
        out[f"{name}.alpha"] = torch.tensor(float(RANK))
    return out


FORMATS = {
    "diffusers": lambda s: {f"unet.{k}": v for k, v in s.items()},
    "peft": lambda s: dict(s),
    "kohya": kohya,
}


def flux_lora() -> dict:
    """A LoRA for the tiny Flux transformer (diffusers layout): the wrong family for SD 1.5."""
    from diffusers import FluxTransformer2DModel
    from peft import LoraConfig, get_peft_model_state_dict

    from toolkit.models.tiny import tiny_checkpoint

    model = FluxTransformer2DModel.from_pretrained(tiny_checkpoint("flux"), subfolder="transformer")
    model.add_adapter(LoraConfig(r=RANK, lora_alpha=RANK, target_modules=["to_q", "to_k", "to_v"]))
    return {f"transformer.{k}": v.contiguous() for k, v in get_peft_model_state_dict(model).items()}


@pytest.fixture(scope="module")
def lora_files(tmp_path_factory, tiny_cache):
    from safetensors.torch import save_file

    folder = tmp_path_factory.mktemp("lora_formats")
    files = {}
    for seed in (1, 2):
        state = peft_lora(seed)
        for name, convert in FORMATS.items():
            files[f"{name}{seed}"] = str(folder / f"{name}{seed}.safetensors")
            save_file(convert(state), files[f"{name}{seed}"])
    files["flux"] = str(folder / "flux.safetensors")
    save_file(flux_lora(), files["flux"])
    (folder / "empty.safetensors").write_bytes(b"not a safetensors file")
    files["broken"] = str(folder / "empty.safetensors")
    return files


@pytest.fixture(scope="module")
def engine(lora_files, tmp_path_factory):
    import os

    h = EngineHarness(tmp_path_factory.mktemp("lora_engine"), lora_roots=[os.path.dirname(lora_files["flux"])])
    yield h
    h.close()


def generate(h, **model) -> dict:
    body = sd1(seed=5)
    body["model"].update(model)
    return h.client.generate_wait(body)


def image(out) -> np.ndarray:
    assert out["http_status"] == 200 and "result" in out, out
    return np.asarray(Image.open(out["result"]["path"]), dtype=np.int16)


def test_each_layout_changes_the_image_exactly_as_the_peft_original(engine, lora_files):
    base = image(generate(engine))
    reference = image(generate(engine, lora_path=lora_files["diffusers1"]))
    assert np.abs(reference - base).max() > 10  # the LoRA does something
    for name in FORMATS:
        assert np.array_equal(image(generate(engine, lora_path=lora_files[f"{name}1"])), reference), name


def test_several_loras_apply_together_each_with_its_multiplier(engine, lora_files):
    one = image(generate(engine, lora_path=lora_files["diffusers1"]))
    two = image(generate(engine, lora_path=lora_files["diffusers2"], lora_multiplier=0.7))
    both = image(
        generate(engine, loras=[{"path": lora_files["diffusers1"]}, {"path": lora_files["kohya2"], "multiplier": 0.7}])
    )
    swapped = image(
        generate(engine, lora_path=lora_files["kohya2"], lora_multiplier=0.7, loras=[{"path": lora_files["peft1"]}])
    )
    assert np.abs(both - one).max() > 10 and np.abs(both - two).max() > 10
    # The same two deltas listed the other way round: equal up to float summation order over the steps.
    assert np.abs(both - swapped).max() <= 3 and np.abs(both - swapped).mean() < 1


def test_sdxl_ai_toolkit_layout_over_ldm_block_names_samples_as_the_peft_original(engine):
    import json
    import os

    from safetensors.torch import load_file, save_file

    from testing.original_layouts import ldm_unet_module
    from toolkit.models.tiny import tiny_checkpoint

    folder = os.path.join(tiny_checkpoint("sdxl"), "unet")
    unet_state = load_file(os.path.join(folder, "diffusion_pytorch_model.safetensors"))
    with open(os.path.join(folder, "config.json")) as f:
        depth = json.load(f)["layers_per_block"]
    state = peft_lora(4, "sdxl")
    ldm = kohya(state, lambda module: ldm_unet_module(module, unet_state, depth))
    assert any(k.startswith("lora_unet_input_blocks_") for k in ldm) and not any("down_blocks" in k for k in ldm)
    files = {"diffusers": {f"unet.{k}": v for k, v in state.items()}, "aitk": ldm}
    latents = {}
    for name, tensors in files.items():
        path = os.path.join(engine.engine.checks.lora_roots[0], f"sdxl_{name}.safetensors")
        save_file(tensors, path)
        body = body_for("sdxl", steps=2)
        body["model"]["lora_path"] = path
        body["stream"] = {"latents": "raw"}
        frames = list(engine.client.generate(body))
        assert not [f.header for f in frames if f.type == "error"], [f.header for f in frames if f.type == "error"]
        latents[name] = np.asarray([f for f in frames if f.type == "latent"][-1].array(), dtype=np.float32)
    assert np.abs(latents["aitk"] - latents["diffusers"]).max() <= 1e-3


@pytest.mark.parametrize(
    "name,words",
    [
        ("flux", ["none of its", "layers match sd1", "another model family"]),
        ("broken", ["not a readable safetensors file"]),
    ],
)
def test_a_lora_the_family_cannot_take_is_refused_by_name_and_the_engine_serves_on(engine, lora_files, name, words):
    out = generate(engine, lora_path=lora_files[name])
    assert out["http_status"] == 422 and out["error"]["code"] == "bad_request", out
    assert (
        all(w in out["error"]["message"] for w in words)
        and lora_files[name].rsplit("/", 1)[1] in out["error"]["message"]
    ), out["error"]
    clean = image(generate(engine))
    assert np.array_equal(clean, image(generate(engine, lora_path=lora_files["diffusers1"], lora_multiplier=0.0)))
