"""Real-size random-init checkpoints for any family, from its tiny checkpoint plus the real configs.

The tiny checkpoint (``toolkit/models/tiny.py``) already has everything a family's pipeline needs that is not a
weight: tokenizers, scheduler, processors, ``model_index.json``. This takes those as they are and builds every
weighted component again at the real architecture's size: the tiny ``config.json`` updated with the values in
``testing/bench/real_configs`` (each one names the model card it comes from). Text encoders are built at real
width *and* depth, because a memory plan depends on their size.

    build_real("qwen_image", folder, "cuda", torch.bfloat16)          # on the GPU machine
    parameter_counts("qwen_image")                                     # on any machine: meta tensors, no memory
    build_real("qwen_image", folder, "cpu", torch.float32, depth=1)   # CPU check: real widths, one layer each

``depth=1`` keeps every real width but one layer per stack, so a CPU run of the whole pipeline proves the
configs agree with each other (text width into the denoiser, latent channels into the VAE) before GPU time is
spent on them.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import shutil
from typing import Optional

import torch

# Keys that count layers, in diffusers and transformers configs: what ``depth`` caps.
DEPTH_KEYS = (
    "num_layers",
    "num_single_layers",
    "num_hidden_layers",
    "n_layers",
    "n_refiner_layers",
    "num_refiner_layers",
    "depth",
    "num_encoder_layers",
    "num_decoder_layers",
    "num_blocks",
    "num_mmdit_layers",
    "num_single_dit_layers",
    "approximator_layers",
    "layers_per_block",
    "transformer_layers_per_block",
    "reverse_transformer_layers_per_block",  # a distilled SDXL's up path (SSD-1B), one list per up block
    "nerf_depth",  # Chroma Radiance's per-patch MLP blocks (each generates 151M weights' worth from a token)
    "num_lyric_encoder_hidden_layers",
    "num_timbre_encoder_hidden_layers",
    "num_attention_pooler_hidden_layers",
)
# Feed-forward inner widths: no other component reads them, so a one-layer CPU build narrows them to
# ``SHALLOW_FF_WIDTH`` (the meta-tensor parameter counts still check the real values). On a two-core machine the
# real ones made the largest one-layer builds 5-11 GB of float32 and several minutes each.
FF_WIDTH_KEYS = ("intermediate_size", "d_ff", "ffn_dim")
SHALLOW_FF_WIDTH = 1024
WEIGHT_FILES = (".safetensors", ".bin")
EXPERT_PREFIX = "linked-"  # a linked component's weight files (_link_files)


def real_configs(arch: str) -> dict:
    from testing.bench.real_configs import REAL

    if arch not in REAL:
        raise KeyError(f"no real-size config for {arch!r}; known: {', '.join(sorted(REAL))}")
    return REAL[arch]


def merged(base: dict, overrides: dict) -> dict:
    """``base`` with ``overrides`` applied recursively (sub-configs such as ``text_config`` are dicts)."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def capped(config: dict, depth: Optional[int]) -> dict:
    """Every layer count at most ``depth`` and feed-forward widths narrowed; per-layer lists that no longer match
    are dropped (their configs rebuild them from the count)."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            value = capped(value, depth)
        elif depth and key in DEPTH_KEYS and isinstance(value, int) and not isinstance(value, bool):
            value = min(value, depth)
        elif depth and key in DEPTH_KEYS and isinstance(value, list) and _counts(value):
            value = _capped_counts(value, depth)  # a UNet's per-block counts (per layer, for an asymmetric up path)
        elif depth and key in FF_WIDTH_KEYS and isinstance(value, int):
            value = min(value, SHALLOW_FF_WIDTH)
        elif depth and key == "mlp_ratio" and isinstance(value, (int, float)):
            value = min(value, 1.0)
        out[key] = value
    layers = out.get("num_hidden_layers")
    if isinstance(out.get("layer_types"), list) and layers is not None and len(out["layer_types"]) != layers:
        out.pop("layer_types")
    if isinstance(out.get("per_layer_config"), dict) and layers is not None:  # Gemma 4: overrides by layer index
        out["per_layer_config"] = {k: v for k, v in out["per_layer_config"].items() if int(k) < layers}
    return out


def _counts(value) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) or isinstance(v, list) and _counts(v) for v in value)


def _capped_counts(value: list, depth: int) -> list:
    return [_capped_counts(v, depth) if isinstance(v, list) else min(v, depth) for v in value]


def component_config(tiny_folder: str, subfolder: str, overrides: dict, depth: Optional[int] = None) -> dict:
    """The tiny config with the real values. With ``depth`` the tiny vocabulary stays: a shallow CPU check is
    about widths agreeing, and a real-size embedding table would be most of its memory."""
    with open(os.path.join(tiny_folder, subfolder, "config.json")) as f:
        base = json.load(f)
    return capped(merged(base, _without(overrides, "vocab_size") if depth else overrides), depth)


def _without(config: dict, key: str) -> dict:
    return {k: _without(v, key) if isinstance(v, dict) else v for k, v in config.items() if k != key}


def construct(cls_path: str, config: dict, device: str = "cpu", dtype=None):
    """The module with random weights on ``device`` in ``dtype`` (default: torch's). The class's module is
    imported before the device and dtype take effect: under ``torch.device("meta")`` a first import made
    module-level tensors meta for the rest of the process (diffusers' ``FLUX_MAG_RATIOS``: every later MagCache
    request failed with "Tensor.item() cannot be called on meta tensors")."""
    import torch

    from testing.bench.real_size import _build
    from toolkit.models.components.loading import import_class

    cls = import_class(cls_path)
    if hasattr(cls, "from_config"):  # diffusers
        make = lambda: cls.from_config(config)  # noqa: E731
    else:  # transformers
        make = lambda: cls(cls.config_class.from_dict(config))  # noqa: E731
    return initialised(_build(make, device, dtype or torch.get_default_dtype()))


def initialised(module):
    """``module`` with the stacked weights its own class leaves empty given small random values. A class may declare
    a parameter with ``torch.empty`` and leave it to ``from_pretrained`` (Nucleus-Image's fused expert stacks,
    experts x in x out): random-init, it holds whatever memory it landed on, and a real-size output came back NaN.
    Only parameters with three or more dimensions over 1, held directly by a module without ``reset_parameters``,
    are drawn from N(0, 0.02): torch's layers initialise themselves, and a norm's gain shaped (C, 1, 1, 1) (Wan's
    VAE) or a modulation table keeps what its class gave it (a gain drawn near 0 flattened Wan's decoded frames)."""
    import torch

    with torch.no_grad():
        for sub in module.modules():
            if hasattr(sub, "reset_parameters"):
                continue
            for param in sub._parameters.values():
                if param is not None and param.is_floating_point() and sum(d > 1 for d in param.shape) >= 3:
                    param.normal_(0.0, 0.02)
    return module


def shallow_overrides(arch: str, role: str) -> dict:
    from testing.bench.real_configs import SHALLOW

    return SHALLOW.get(arch, {}).get(role, {})


def weighted_components(arch: str) -> dict:
    from toolkit.models.registry import get_model_class

    return {role: c for role, c in get_model_class(arch).components.items() if c.has_weights}


def parameter_counts(arch: str) -> dict:
    """Parameters per role at the real config, counted on the meta device (nothing allocated)."""
    return {role: sum(p.numel() for p in module.parameters()) for role, module in _meta_modules(arch)}


@functools.lru_cache(maxsize=None)
def largest_parameters(arch: str) -> dict:
    """Per role, the elements of its largest parameter at the real config: what a memory plan holds twice while
    a streamed or 8-bit component runs (``toolkit/memory_plan.py``)."""
    return {role: max(p.numel() for p in module.parameters()) for role, module in _meta_modules(arch)}


def _meta_modules(arch: str):
    from toolkit.models.tiny import tiny_checkpoint

    tiny_folder = tiny_checkpoint(arch)
    for role, comp in weighted_components(arch).items():
        config = component_config(tiny_folder, comp.subfolder, real_configs(arch).get(role, {}))
        yield role, construct(comp.cls, config, "meta")


def build_real(
    arch: str,
    folder: str,
    device: str,
    dtype,
    depth: Optional[int] = None,
    seed: int = 0,
    spill: Optional[dict] = None,
) -> dict:
    """Save the real-size checkpoint of ``arch`` into ``folder`` (a diffusers folder); returns GiB per role.
    One component is in memory at a time. ``spill``: role -> another folder to save that component in, linked
    from ``folder`` (FLUX.2-dev's 104 GiB of bf16 does not fit the one-GPU machine's 64 GiB of disk; its 45 GiB
    encoder fits its RAM-backed ``/dev/shm``)."""
    from toolkit.models.tiny import tiny_checkpoint

    tiny_folder = tiny_checkpoint(arch)
    shutil.copytree(
        tiny_folder,
        folder,
        dirs_exist_ok=True,
        ignore=lambda d, names: [n for n in names if n.endswith(WEIGHT_FILES) or n.endswith(".index.json")],
    )
    _real_processors(arch, folder)
    sizes, saved = {}, {}
    for role, comp in weighted_components(arch).items():
        config = component_config(tiny_folder, comp.subfolder, real_configs(arch).get(role, {}), depth)
        if depth:
            config = merged(config, shallow_overrides(arch, role))
        same = saved.setdefault((comp.cls, json.dumps(config, sort_keys=True)), role)
        if same != role:  # same class, config and seed: the same weights (Wan 2.2 14B's two experts)
            sizes[role] = sizes[same]
            _link_files(
                os.path.join(folder, weighted_components(arch)[same].subfolder), os.path.join(folder, comp.subfolder)
            )
            continue
        torch.manual_seed(seed)
        module = construct(comp.cls, config, device, dtype)
        target = _component_folder(folder, comp.subfolder, (spill or {}).get(role), arch)
        module.save_pretrained(target, safe_serialization=True, max_shard_size="10GB")
        sizes[role] = round(sum(p.numel() * p.element_size() for p in module.parameters()) / 2**30, 2)
        del module
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return sizes


def _component_folder(folder: str, subfolder: str, elsewhere: Optional[str], arch: str) -> str:
    """Where a component is saved: in the checkpoint, or in ``elsewhere`` with the checkpoint's subfolder a link
    to it (loaders follow it as they would a hub snapshot's links)."""
    inside = os.path.join(folder, subfolder)
    if not elsewhere:
        return inside
    target = os.path.abspath(os.path.join(elsewhere, arch, subfolder))
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.islink(inside):
        os.unlink(inside)
    if os.path.isdir(inside):
        shutil.move(inside, target)  # the configs copied from the tiny checkpoint go along
    else:
        os.makedirs(target)
    os.symlink(target, inside)
    return target


def remove_real(folder: str) -> None:
    """Delete a built checkpoint and whatever it spilled elsewhere (``build_real``'s ``spill``)."""
    if os.path.isdir(folder):
        for name in os.listdir(folder):
            path = os.path.join(folder, name)
            if os.path.islink(path) and os.path.isdir(path):
                shutil.rmtree(os.path.realpath(path), ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)


def _link_files(source: str, target: str) -> None:
    """``target`` holds links to ``source``'s files: a second copy of identical random weights would only take
    disk (two 28 GB Wan 2.2 14B experts do not fit the one-GPU machine's 64 GB beside their encoder). The weight
    links get names of their own, listed in an index of the target's, because the engine's pool knows a component
    by its weight files' names and contents and would otherwise load the two experts as one module (the first
    run of Wan 2.2 14B I2V did: one expert's memory on the full card). Loaded, they are two modules, as from a
    real checkpoint; the second reads its files from the page cache."""
    from safetensors import safe_open

    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    weight_map, index_name = {}, None
    for name in sorted(os.listdir(source)):
        path = os.path.join(os.path.abspath(source), name)
        if name.endswith(".safetensors.index.json"):
            index_name = name
        elif name.endswith(".safetensors"):
            linked = f"{EXPERT_PREFIX}{name}"
            os.symlink(path, os.path.join(target, linked))
            with safe_open(path, framework="pt") as f:
                weight_map.update(dict.fromkeys(f.keys(), linked))
        else:
            os.symlink(path, os.path.join(target, name))
    index_name = index_name or next(n for n in os.listdir(source) if n.endswith(".safetensors")) + ".index.json"
    with open(os.path.join(target, index_name), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)


def _real_processors(arch: str, folder: str) -> None:
    """Roles without weights that still have a real config (an image processor's input size)."""
    from toolkit.models.registry import get_model_class

    for role, comp in get_model_class(arch).components.items():
        path = os.path.join(folder, comp.subfolder, "preprocessor_config.json")
        if comp.has_weights or role not in real_configs(arch) or not os.path.isfile(path):
            continue
        with open(path) as f:
            config = merged(json.load(f), real_configs(arch)[role])
        with open(path, "w") as f:
            json.dump(config, f, indent=2)
