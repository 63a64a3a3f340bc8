"""LoRA files on a pipeline: loaded through diffusers' own loaders (which convert kohya, AI Toolkit, ComfyUI and
PEFT layouts per family), then checked. diffusers skips keys it cannot place with a log line at most, so a LoRA
trained for another family would load as a silent no-op; here the layers that took the adapter are counted,
and none is an error that names the file and the family."""

from __future__ import annotations

import hashlib
import os
import warnings

# Suffixes of a LoRA tensor after its module path, in the layouts diffusers reads.
LORA_SUFFIXES = (
    ".lora_A.weight",
    ".lora_B.weight",
    ".lora_down.weight",
    ".lora_up.weight",
    ".lora.down.weight",
    ".lora.up.weight",
    ".lora_A.default.weight",
    ".lora_B.default.weight",
    ".alpha",
    ".lora_A.bias",
    ".lora_B.bias",
    ".dora_scale",
    ".diff",
    ".diff_b",
)


class LoraMismatch(ValueError):
    """The file is not a LoRA this pipeline can take: a request error, not an engine fault."""


def adapter_name(path: str) -> str:
    """Stable per file version: a LoRA re-saved at the same path is a new adapter, not a stale hit."""
    stat = os.stat(path)
    digest = hashlib.sha1(f"{os.path.abspath(path)}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    return f"lora_{digest[:12]}"


def file_layers(path: str) -> list[str]:
    """Module paths the file holds LoRA weights for, as written in it."""
    from toolkit.models.components.loading import safetensors_header

    return lora_layers(safetensors_header(path))


def lora_layers(keys) -> list[str]:
    """Module paths behind tensor names that end in a LoRA suffix."""
    layers = set()
    for key in keys:
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
    layers = read_layers(path)
    adapted, error = 0, None
    for source in sources(pipe, path):
        try:
            adapted = _load(pipe, source, adapter, name, arch, load_kwargs)
        except LoraMismatch as e:
            error = error or e
        if adapted:
            break
    if adapted == 0:
        raise error or no_match(name, layers, arch)
    return f"LoRA {name}: {len(layers)} layers in the file, {adapted} adapted in {arch}"


def read_layers(path: str) -> list[str]:
    """The file's LoRA layers; ``LoraMismatch`` when it is no readable LoRA (checked before diffusers sees it)."""
    name = os.path.basename(path)
    try:
        layers = file_layers(path)
    except (OSError, ValueError) as e:
        raise LoraMismatch(f"LoRA {name}: not a readable safetensors file ({e})") from None
    if not layers:
        raise LoraMismatch(
            f"LoRA {name}: no LoRA weights in it (no keys ending in lora_A/lora_B, lora_down/lora_up or alpha)"
        )
    return layers


def sources(pipe, path: str):
    """The file as diffusers reads it; then layouts diffusers has no branch for, read as this pipeline's."""
    for layout in (lambda: path, lambda: _as_denoiser_keys(pipe, path), lambda: _from_bfl_names(pipe, path)):
        source = layout()
        if source is not None:
            yield source


def no_match(name: str, layers: list[str], arch: str) -> LoraMismatch:
    return LoraMismatch(
        f"LoRA {name}: none of its {len(layers)} layers match {arch} (first: {layers[0]!r}); "
        "it was trained for another model family"
    )


def _load(pipe, source, adapter: str, name: str, arch: str, load_kwargs: dict) -> int:
    """Layers adapted by one load; nothing is left behind when it fails or adapts nothing."""
    from toolkit.device import is_oom

    try:
        with warnings.catch_warnings():
            # PEFT warns on every adapter after the first ("Already found a peft_config"): several at once is
            # what model.loras is for.
            warnings.filterwarnings("ignore", message="Already found a `peft_config` attribute")
            pipe.load_lora_weights(source, adapter_name=adapter, **load_kwargs)
    except Exception as e:
        _forget(pipe, adapter)
        if is_oom(e):
            raise  # out of memory is the engine's to handle (an oom frame, a wider plan), not the file's fault
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


# Black Forest Labs' module names (Flux.1 originals, AI Toolkit's Chroma LoRAs) -> diffusers' Flux-style ones.
# Fused layers list the diffusers modules their output rows are split into, in order.
BFL_DOUBLE = {
    "img_attn.qkv": ("attn.to_q", "attn.to_k", "attn.to_v"),
    "txt_attn.qkv": ("attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"),
    "img_attn.proj": ("attn.to_out.0",),
    "txt_attn.proj": ("attn.to_add_out",),
    "img_mlp.0": ("ff.net.0.proj",),
    "img_mlp.2": ("ff.net.2",),
    "txt_mlp.0": ("ff_context.net.0.proj",),
    "txt_mlp.2": ("ff_context.net.2",),
    "img_mod.lin": ("norm1.linear",),
    "txt_mod.lin": ("norm1_context.linear",),
}
BFL_SINGLE = {
    "linear1": ("attn.to_q", "attn.to_k", "attn.to_v", "proj_mlp"),
    "linear2": ("proj_out",),
    "modulation.lin": ("norm.linear",),
}


def _from_bfl_names(pipe, path: str):
    """A LoRA over Black Forest Labs' module names (``diffusion_model.double_blocks.0.img_attn.qkv.lora_A``), for
    a pipeline whose transformer has diffusers' Flux-style blocks. A fused layer's delta B·A splits exactly by
    rows of B: each part keeps A and takes its rows of B. None when the file is not laid out that way."""
    from safetensors.torch import load_file

    transformer = getattr(pipe, "transformer", None)
    if transformer is None or not hasattr(transformer, "single_transformer_blocks"):
        return None
    state = {key.split("diffusion_model.", 1)[-1].removeprefix("transformer."): v for key, v in load_file(path).items()}
    if not any(key.startswith(("double_blocks.", "single_blocks.")) for key in state):
        return None
    modules = dict(transformer.named_modules())
    out = {}
    for key, value in state.items():
        kind, index, rest = key.split(".", 2) if key.startswith(("double_blocks.", "single_blocks.")) else ("", "", key)
        layer, _, suffix = rest.rpartition(".lora_")
        table = BFL_DOUBLE if kind == "double_blocks" else BFL_SINGLE if kind == "single_blocks" else {}
        if layer not in table or suffix not in ("A.weight", "B.weight"):
            return None  # a name this mapping does not know: leave the file to the error that names it
        prefix = f"{'transformer_blocks' if kind == 'double_blocks' else 'single_transformer_blocks'}.{index}."
        targets = [prefix + t for t in table[layer]]
        if any(t not in modules for t in targets):
            return None
        rows = [modules[t].out_features for t in targets]
        if suffix == "B.weight" and sum(rows) != value.shape[0]:
            return None
        parts = value.split(rows) if suffix == "B.weight" else [value] * len(targets)
        for target, part in zip(targets, parts):
            out[f"transformer.{target}.lora_{suffix}"] = part.contiguous()
    return out


def loaded_adapters(pipe) -> set:
    """Every adapter name on any of the pipeline's modules."""
    return {a for adapters in pipe.get_list_adapters().values() for a in adapters}


def _forget(pipe, adapter: str) -> None:
    """A failed load may have registered the adapter on some modules already."""
    if adapter in loaded_adapters(pipe):
        pipe.delete_adapters([adapter])
