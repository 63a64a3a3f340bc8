"""LoRAs as AI Toolkit saves them, per family it trains (its ``save_weights`` and each model's
``convert_lora_weights_before_save``; docs/LORA_FORMATS.md): ``transformer.`` + diffusers names for Flux,
``diffusion_model.`` + diffusers names for Z-Image and Qwen-Image, ``diffusion_model.`` + Wan-AI's own names for
Wan. Each must sample exactly as the same LoRA in diffusers' ``transformer.`` PEFT layout."""
import os

import numpy as np
import pytest

from testing.engine_harness import EngineHarness
from testing.original_layouts import wan_original_name
from testing.test_inference_engine import body_for

RANK = 4
TARGETS = ["to_q", "to_k", "to_v"]
AITK = {  # arch -> AI Toolkit's key for a diffusers PEFT key of the transformer
    "flux": lambda key: f"transformer.{key}",
    "zimage": lambda key: f"diffusion_model.{key}",
    "qwen_image": lambda key: f"diffusion_model.{key}",
    "wan21": lambda key: f"diffusion_model.{wan_original_name(key)}",
}


def transformer_lora(arch: str) -> dict:
    import torch
    from peft import LoraConfig, get_peft_model_state_dict

    from toolkit.models.registry import get_model_class
    from toolkit.models.tiny import tiny_checkpoint
    from toolkit.models.v2.mixin import import_class

    component = get_model_class(arch).components["transformer"]
    model = import_class(component.cls).from_pretrained(tiny_checkpoint(arch), subfolder="transformer")
    model.add_adapter(LoraConfig(r=RANK, lora_alpha=RANK, init_lora_weights=False, target_modules=TARGETS))
    torch.manual_seed(3)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn_like(p) * 0.3)
    return {k: v.contiguous() for k, v in get_peft_model_state_dict(model).items()}


@pytest.fixture(scope="module")
def lora_files(tmp_path_factory, tiny_cache):
    from safetensors.torch import save_file

    folder = tmp_path_factory.mktemp("aitk_loras")
    files = {}
    for arch, rename in AITK.items():
        state = transformer_lora(arch)
        files[arch, "diffusers"] = str(folder / f"{arch}_diffusers.safetensors")
        save_file({f"transformer.{k}": v for k, v in state.items()}, files[arch, "diffusers"])
        files[arch, "aitk"] = str(folder / f"{arch}_aitk.safetensors")
        save_file({rename(k): v for k, v in state.items()}, files[arch, "aitk"])
    return files


@pytest.fixture(scope="module")
def engine(lora_files, tmp_path_factory):
    h = EngineHarness(tmp_path_factory.mktemp("aitk_lora_engine"),
                      lora_roots=[os.path.dirname(next(iter(lora_files.values())))])
    yield h
    h.close()


def final_latents(h, arch: str, lora: str = None) -> np.ndarray:
    body = body_for(arch, steps=2)
    body["stream"] = {"latents": "raw"}
    if lora:
        body["model"]["lora_path"] = lora
    frames = list(h.client.generate(body))
    assert not [f.header for f in frames if f.type == "error"], [f.header for f in frames if f.type == "error"]
    return np.asarray([f for f in frames if f.type == "latent"][-1].array(), dtype=np.float32)


@pytest.mark.parametrize("arch", sorted(AITK))
def test_ai_toolkit_loras_sample_as_their_diffusers_layout(engine, lora_files, arch):
    base = final_latents(engine, arch)
    reference = final_latents(engine, arch, lora_files[arch, "diffusers"])
    assert np.abs(reference - base).max() > 1e-2  # the LoRA does something
    assert np.abs(final_latents(engine, arch, lora_files[arch, "aitk"]) - reference).max() <= 1e-3
