"""LoRA files on a pipeline: loaded through diffusers' own loaders (which convert kohya, AI Toolkit, ComfyUI and
PEFT layouts per family), then checked. diffusers skips keys it cannot place with a log line at most, so a LoRA
trained for another family would load as a silent no-op; here the layers that took the adapter are counted,
and none is an error that names the file and the family."""
from __future__ import annotations

import hashlib
import os

# Suffixes of a LoRA tensor after its module path, in the layouts diffusers reads.
LORA_SUFFIXES = (".lora_A.weight", ".lora_B.weight", ".lora_down.weight", ".lora_up.weight", ".lora.down.weight",
                 ".lora.up.weight", ".lora_A.default.weight", ".lora_B.default.weight", ".alpha", ".lora_A.bias",
                 ".lora_B.bias", ".dora_scale", ".diff", ".diff_b")


class LoraMismatch(ValueError):
    """The file is not a LoRA this pipeline can take: a request error, not an engine fault."""


def adapter_name(path: str) -> str:
    """Stable per file version: a LoRA re-saved at the same path is a new adapter, not a stale hit."""
    stat = os.stat(path)
    digest = hashlib.sha1(f"{os.path.abspath(path)}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    return f"lora_{digest[:12]}"


def file_layers(path: str) -> list[str]:
    """Module paths the file holds LoRA weights for, as written in it."""
    from toolkit.models.v2.mixin import safetensors_header

    layers = set()
    for key in safetensors_header(path):
        for suffix in LORA_SUFFIXES:
            if key.endswith(suffix):
                layers.add(key[: -len(suffix)])
                break
    return sorted(layers)


def adapted_layers(pipe, adapter: str) -> int:
    """Layers of the pipeline's modules that carry ``adapter`` (PEFT's LoRA layers keep one per name)."""
    count = 0
    for component in pipe.components.values():
        modules = getattr(component, "modules", None)
        if modules is None:
            continue
        count += sum(1 for m in modules() if adapter in (getattr(m, "lora_A", None) or {}))
    return count


def load_lora(pipe, path: str, adapter: str, arch: str, **load_kwargs) -> str:
    """Load one LoRA file as ``adapter`` (``load_kwargs`` go to diffusers' loader: a family may route a file to a
    second denoiser); returns what to tell the user. Raises ``LoraMismatch`` (and leaves nothing behind) when the
    file cannot be read as a LoRA for this pipeline or none of its layers matched."""
    name = os.path.basename(path)
    try:
        layers = file_layers(path)
    except (OSError, ValueError) as e:
        raise LoraMismatch(f"LoRA {name}: not a readable safetensors file ({e})") from None
    if not layers:
        raise LoraMismatch(f"LoRA {name}: no LoRA weights in it (no keys ending in lora_A/lora_B, "
                           "lora_down/lora_up or alpha)")
    adapted = _load(pipe, path, adapter, name, arch, load_kwargs)
    bare = _as_denoiser_keys(pipe, path) if adapted == 0 else None
    if bare:
        adapted = _load(pipe, bare, adapter, name, arch, load_kwargs)
    if adapted == 0:
        raise LoraMismatch(f"LoRA {name}: none of its {len(layers)} layers match {arch} (first: {layers[0]!r}); "
                           "it was trained for another model family")
    return f"LoRA {name}: {len(layers)} layers in the file, {adapted} adapted in {arch}"


def _load(pipe, source, adapter: str, name: str, arch: str, load_kwargs: dict) -> int:
    """Layers adapted by one load; nothing is left behind when it fails or adapts nothing."""
    try:
        pipe.load_lora_weights(source, adapter_name=adapter, **load_kwargs)
    except Exception as e:
        _forget(pipe, adapter)
        raise LoraMismatch(f"LoRA {name} does not fit {arch}: {type(e).__name__}: {str(e)[:300]}") from None
    adapted = adapted_layers(pipe, adapter)
    if adapted == 0:
        _forget(pipe, adapter)
    return adapted


def _as_denoiser_keys(pipe, path: str):
    """Bare PEFT keys (``down_blocks.0...to_q.lora_A.weight``, or PEFT's ``base_model.model.`` ones) name the
    denoiser's modules, but diffusers' loaders read them only under the denoiser's prefix. None unless every key
    starts with one of the denoiser's own top-level modules."""
    from safetensors.torch import load_file

    prefix = "unet" if getattr(pipe, "unet", None) is not None else "transformer"
    denoiser = getattr(pipe, prefix, None)
    if denoiser is None:
        return None
    children = {name for name, _ in denoiser.named_children()}
    state = {key.removeprefix("base_model.model."): value for key, value in load_file(path).items()}
    if not all(key.split(".", 1)[0] in children for key in state):
        return None
    return {f"{prefix}.{key}": value for key, value in state.items()}


def _forget(pipe, adapter: str) -> None:
    """A failed load may have registered the adapter on some modules already."""
    if adapter in {a for adapters in pipe.get_list_adapters().values() for a in adapters}:
        pipe.delete_adapters([adapter])
