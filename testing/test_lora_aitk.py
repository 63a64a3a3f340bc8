"""LoRAs as AI Toolkit saves them, per family it trains (its ``save_weights`` and each model's
``convert_lora_weights_before_save``; docs/LORA_FORMATS.md): ``transformer.`` + diffusers names for Flux, Flex.2,
SD3 and Lumina 2, ``diffusion_model.`` + diffusers names for Z-Image, Qwen-Image, HiDream and LTX-2's attention layers,
``diffusion_model.`` + Wan-AI's own names for Wan, Black Forest Labs' names for Chroma and FLUX.2. Each must sample
exactly as the same LoRA in diffusers' ``transformer.`` PEFT layout."""

import os

import numpy as np
import pytest

from testing.engine_harness import EngineHarness
from testing.lora_files import random_lora
from testing.original_layouts import (
    BFL_LORA_DOUBLE,
    BFL_LORA_SINGLE,
    FLUX2_LORA_DOUBLE,
    FLUX2_LORA_SINGLE,
    bfl_lora,
    wan_original_name,
)
from testing.stream_contract import body_for

RANK = 4
TARGETS = ["to_q", "to_k", "to_v"]
AITK = {  # arch -> AI Toolkit's key for a diffusers PEFT key of the transformer
    "flux": lambda key: f"transformer.{key}",
    "flex2": lambda key: f"transformer.{key}",  # extensions_built_in/flex2: FluxTransformer2DModel, keys unconverted
    "sd3": lambda key: f"transformer.{key}",
    "lumina2": lambda key: f"transformer.{key}",
    "hidream": lambda key: f"diffusion_model.{key}",
    "ltx2": lambda key: f"diffusion_model.{key}",  # attention layers keep diffusers' names in LTX-2's own code
    "ltx2.3": lambda key: f"diffusion_model.{key}",  # AI Toolkit's LTX23Model saves as its LTX2Model does
    "ltx2.5": lambda key: f"diffusion_model.{key}",  # AI Toolkit's LTX25Model saves as its LTX2Model does
    "zimage": lambda key: f"diffusion_model.{key}",
    "qwen_image": lambda key: f"diffusion_model.{key}",
    "wan21": lambda key: f"diffusion_model.{wan_original_name(key)}",
}


def transformer_lora(arch: str, subfolder: str = "transformer") -> dict:
    return random_lora(arch, subfolder, rank=RANK, targets=TARGETS, seed=3, scale=0.3)


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
    h = EngineHarness(
        tmp_path_factory.mktemp("aitk_lora_engine"), lora_roots=[os.path.dirname(next(iter(lora_files.values())))]
    )
    yield h
    h.close()


def final_latents(h, arch: str, lora: str = None, steps: int = 2) -> np.ndarray:
    body = body_for(arch, steps=steps)
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


def test_wan22_a14b_split_files_go_to_their_experts(tmp_path, tiny_cache):
    """AI Toolkit's default for Wan 2.2 A14B: ``<name>_high_noise`` for the first expert, ``<name>_low_noise`` for
    the second, both in Wan-AI's names."""
    from safetensors.torch import save_file

    experts = {"high_noise": transformer_lora("wan22_14b"), "low_noise": transformer_lora("wan22_14b", "transformer_2")}
    files = {}
    for name, state in experts.items():
        files[name] = str(tmp_path / f"run_{name}.safetensors")
        save_file({f"diffusion_model.{wan_original_name(k)}": v for k, v in state.items()}, files[name])
    h = EngineHarness(tmp_path / "engine", lora_roots=[str(tmp_path)])
    try:
        # Enough steps that both experts run (the second takes the steps below the 0.875 boundary).
        base = final_latents(h, "wan22_14b", steps=STEPS_BOTH_EXPERTS)
        high = final_latents(h, "wan22_14b", files["high_noise"], STEPS_BOTH_EXPERTS)
        pipe = h.engine.holder.pipeline
        assert adapted(pipe.transformer) > 0 and adapted(pipe.transformer_2) == 0
        low = final_latents(h, "wan22_14b", files["low_noise"], STEPS_BOTH_EXPERTS)
        pipe = h.engine.holder.pipeline
        assert adapted(pipe.transformer) == 0 and adapted(pipe.transformer_2) > 0
    finally:
        h.close()
    assert np.abs(high - base).max() > 1e-2 and np.abs(low - base).max() > 1e-2 and np.abs(low - high).max() > 1e-2


STEPS_BOTH_EXPERTS = 12


CHROMA_TARGETS = (
    r".*(transformer_blocks|single_transformer_blocks)\.\d+\.(attn\.(to_q|to_k|to_v|add_q_proj|add_k_proj|"
    r"add_v_proj|to_out\.0|to_add_out)|proj_mlp|proj_out|ff\.net\.0\.proj|ff\.net\.2|ff_context\.net\.0\.proj|"
    r"ff_context\.net\.2)"
)


FLUX2_TARGETS = (
    r".*(transformer_blocks\.\d+\.(attn\.(to_q|to_k|to_v|add_q_proj|add_k_proj|add_v_proj|to_out\.0|"
    r"to_add_out)|ff\.linear_in|ff\.linear_out|ff_context\.linear_in|ff_context\.linear_out)|"
    r"single_transformer_blocks\.\d+\.attn\.(to_qkv_mlp_proj|to_out))"
)
BFL_FAMILIES = {  # arch -> (PEFT targets, the BFL tables AI Toolkit's names follow)
    "chroma": (CHROMA_TARGETS, BFL_LORA_DOUBLE, BFL_LORA_SINGLE),
    "flux2": (FLUX2_TARGETS, FLUX2_LORA_DOUBLE, FLUX2_LORA_SINGLE),
}


def bfl_family_lora(arch: str) -> dict:
    """A LoRA over every block layer of a tiny Flux-style transformer whose fused Black Forest Labs layer parts
    share one A (as a LoRA trained on the fused layer does)."""
    import torch
    from peft import LoraConfig, get_peft_model_state_dict

    from toolkit.models.components.loading import import_class
    from toolkit.models.registry import get_model_class
    from toolkit.models.tiny import tiny_checkpoint

    targets, double, single = BFL_FAMILIES[arch]
    model = import_class(get_model_class(arch).components["transformer"].cls).from_pretrained(
        tiny_checkpoint(arch), subfolder="transformer"
    )
    model.add_adapter(LoraConfig(r=RANK, lora_alpha=RANK, init_lora_weights=False, target_modules=targets))
    torch.manual_seed(5)
    state = {k: torch.randn_like(v) * 0.3 for k, v in get_peft_model_state_dict(model).items()}
    for kind, table in (("transformer_blocks", double), ("single_transformer_blocks", single)):
        for i in range(len(getattr(model, kind))):
            for parts in table.values():
                for part in parts[1:]:
                    state[f"{kind}.{i}.{part}.lora_A.weight"] = state[f"{kind}.{i}.{parts[0]}.lora_A.weight"].clone()
    return {k: v.contiguous() for k, v in state.items()}


@pytest.mark.parametrize("arch", sorted(BFL_FAMILIES))
def test_loras_in_black_forest_labs_names_sample_as_their_diffusers_layout(tmp_path, tiny_cache, arch):
    """AI Toolkit writes Chroma and FLUX.2 LoRAs over its BFL-style module trees. diffusers converts FLUX.2's; for
    Chroma's it has no converter, and the engine maps the names itself (toolkit/models/lora.py)."""
    from safetensors.torch import save_file

    state = bfl_family_lora(arch)
    files = {
        "diffusers": {f"transformer.{k}": v for k, v in state.items()},
        "aitk": bfl_lora(state, *BFL_FAMILIES[arch][1:]),
    }
    assert any(".img_attn.qkv." in k for k in files["aitk"]) and any(".linear1." in k for k in files["aitk"])
    for name, tensors in files.items():
        save_file(tensors, str(tmp_path / f"{arch}_{name}.safetensors"))
    h = EngineHarness(tmp_path / "engine", lora_roots=[str(tmp_path)])
    try:
        base = final_latents(h, arch)
        reference = final_latents(h, arch, str(tmp_path / f"{arch}_diffusers.safetensors"))
        converted = final_latents(h, arch, str(tmp_path / f"{arch}_aitk.safetensors"))
    finally:
        h.close()
    assert np.abs(reference - base).max() > 1e-2
    assert np.abs(converted - reference).max() <= 1e-3


def adapted(module) -> int:
    return sum(1 for m in module.modules() if getattr(m, "lora_A", None))
