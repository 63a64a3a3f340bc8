"""Random LoRAs for a family's denoiser, for tests and benchmarks: PEFT's own keys and shapes over the denoiser as
its checkpoint's config builds it on the meta device (no weights read or allocated), so the same code makes a
rank-4 LoRA for a tiny checkpoint and a rank-32 one for a real-size Flux.1-dev (testing/bench/grid_bench.py)."""

from __future__ import annotations

import json
import os
from typing import Optional


def denoiser_module(arch: str, checkpoint: Optional[str] = None, subfolder: Optional[str] = None):
    """The family's denoiser (``unet`` or ``transformer``, or ``subfolder``) on the meta device, from the config in
    ``checkpoint`` (default: the family's tiny one)."""
    from testing.bench.real_build import construct
    from toolkit.models.registry import get_model_class
    from toolkit.models.tiny import tiny_checkpoint

    components = get_model_class(arch).components
    subfolder = subfolder or ("unet" if "unet" in components else "transformer")
    with open(os.path.join(checkpoint or tiny_checkpoint(arch), subfolder, "config.json")) as f:
        config = json.load(f)
    return construct(components[subfolder].cls, config, "meta")


def block_linears(model, within: str = "transformer_blocks.") -> list[str]:
    """Every linear layer inside the model's transformer blocks (a UNet's attention blocks hold them too): the
    layers AI Toolkit's LoRA trains by default, attention, feed-forward and modulation projections."""
    import torch

    return [name for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and within in name]


def random_lora(
    arch: str,
    subfolder: Optional[str] = None,
    checkpoint: Optional[str] = None,
    rank: int = 4,
    targets=("to_q", "to_k", "to_v"),
    seed: int = 3,
    scale: float = 0.3,
    dtype=None,
) -> dict:
    """PEFT state dict (``lora_A`` / ``lora_B`` keys, no prefix) of a random LoRA on the denoiser's ``targets``
    (module names or name suffixes, or a regex, as PEFT's ``target_modules``; ``"blocks"``: ``block_linears``),
    each tensor N(0, ``scale``²) drawn in the module order from ``seed``."""
    import torch
    from peft import LoraConfig, get_peft_model_state_dict

    model = denoiser_module(arch, checkpoint, subfolder)
    if targets == "blocks":
        targets = block_linears(model)
    targets = targets if isinstance(targets, str) else list(targets)
    with torch.device("meta"):  # the adapter's own layers too
        model.add_adapter(LoraConfig(r=rank, lora_alpha=rank, init_lora_weights=False, target_modules=targets))
    generator = torch.Generator().manual_seed(seed)
    return {
        key: (torch.randn(value.shape, generator=generator) * scale).to(dtype or torch.float32).contiguous()
        for key, value in get_peft_model_state_dict(model).items()
    }


def randomize_adapters(model, seed: int, scale: float = 0.5) -> None:
    """Every LoRA weight PEFT added to ``model`` (``init_lora_weights=False``) drawn again as N(0, ``scale``²) from
    torch's generator seeded with ``seed``, in parameter order: a LoRA whose effect a test can see."""
    import torch

    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn_like(p) * scale)
