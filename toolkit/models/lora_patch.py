"""``engine.lora_patch``: a request's LoRAs added into the resident denoiser's weights for as long as they are
wanted, and the original weights copied back, bit for bit, when they change.

Unmerged adapters (toolkit/models/base_model.py ``apply_lora``) leave the base weights alone, but every step pays
for them: each LoRA layer reads its input again and reads and writes its output twice more, which on SDXL's narrow,
memory-bound layers at 1024² is most of a plain layer's cost again (docs/BENCHMARKS.md "Compare grids"). ComfyUI
and Forge patch the weights while a LoRA is in use; their users expect a LoRA to cost nothing per step. Patching here
keeps the pool's promise that a shared denoiser is the checkpoint it was loaded from: each weight a LoRA touches is
copied first (``Patched``: beside it on the GPU where the plan leaves room, else to the host), and every change of
LoRAs starts by copying those back, so a plain request after any number of LoRA switches runs the checkpoint's exact
weights. No rounding builds up, unlike ``unfuse_lora``, which subtracts the delta again in the weights' precision.

The file's layers are found by diffusers' own loaders (every layout ``load_lora`` reads), each layer's delta comes
from PEFT (``get_delta_weight``), and the adapters are then unloaded, so the denoiser has its original modules again
and a compiled one keeps its graphs: only values change, in place. What cannot be patched this way runs as adapters
(the caller's path) with a status line saying why: a denoiser streamed, offloaded or quantized (its weights are not
all resident in their own dtype), a LoRA that reaches a text encoder (the prompt cache is keyed by the LoRAs only
then), DoRA, LoRA biases or embeddings (not a plain delta on a weight)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from toolkit.models.lora import adapter_name, load_lora, loaded_adapters

STATE = "_aitk_lora_patch"  # on each denoiser module: its Patched
PARTIAL = (("a patch that did not finish", 0.0),)  # a key no request has: restored before anything else


# Left free on the device beside the plan's peak when the originals stay there: the plan's peak is an estimate.
DEVICE_MARGIN = 2 * 2**30


@dataclass(eq=False)
class Patched:
    """A denoiser's patch: which LoRAs are in its weights (``key``), and the originals of the weights they changed,
    each as (parameter, copy). Copies on the host are kept for the module's lifetime (the originals never change,
    and a pinned copy is slow to make); copies left on the device, where the plan has room, go as soon as they
    are copied back (``restore``), so no memory the planner cannot see outlives the holder that made them."""

    key: tuple = ()
    files: tuple = ()  # (file name, multiplier) of each LoRA in the weights, for /health
    host: dict = field(default_factory=dict)  # id(parameter) -> (parameter, pinned host copy)
    device: dict = field(default_factory=dict)  # id(parameter) -> (parameter, copy beside it), this patch only

    def copies(self) -> list:
        return [*self.host.values(), *self.device.values()]


def patch_loras(model, pipe, loras: list) -> bool:
    """Make the denoisers' weights hold ``loras`` ((path, multiplier) pairs) and nothing else. False when they
    cannot be patched (the reason in the status); the caller then applies them as adapters, after ``restore``."""
    denoisers = _denoisers(model)
    if not denoisers:
        return False
    if why := _not_patchable(model, denoisers):
        if loras:
            model.print_and_status_update(f"{model.arch}: LoRAs stay unmerged adapters ({why})", "loading")
        return False
    key = tuple((adapter_name(path), float(weight)) for path, weight in loras)
    if all(_state(m).key == key for m in denoisers.values()) and not loaded_adapters(pipe):
        return True  # already in the weights (or nothing wanted and nothing there)
    restore(model)
    if loaded_adapters(pipe):
        pipe.unload_lora_weights()  # adapters from a request that could not patch: the original modules again
    if not loras:
        return True
    # PEFT freezes the layers it wraps; the flags come back with the modules, or a compiled denoiser's guards on
    # them would trace it again
    trainable = [(p, p.requires_grad) for m in denoisers.values() for p in m.parameters()]
    for (path, _), (name, _) in zip(loras, key):
        model.print_and_status_update(f"Loading {model.arch}: LoRA {os.path.basename(path)}", "loading")
        model.print_and_status_update(
            load_lora(pipe, path, name, model.arch, **model.lora_load_kwargs(path)), "loading"
        )
    if why := _not_patchable_adapters(pipe, denoisers):
        _unload(pipe, trainable)
        model.print_and_status_update(f"{model.arch}: LoRAs stay unmerged adapters ({why})", "loading")
        return False
    multipliers = dict(key)
    on_device = _room_on_device(model) >= _touched_bytes(denoisers, multipliers) + DEVICE_MARGIN
    for module in denoisers.values():
        _state(module).key = PARTIAL  # before any weight changes: a failure midway is still copied back
        _add_deltas(module, multipliers, on_device)
        _state(module).key = key
        _state(module).files = tuple((os.path.basename(path), float(weight)) for path, weight in loras)
    _unload(pipe, trainable)
    kept = sum(c.numel() * c.element_size() for m in denoisers.values() for _, c in _state(m).copies()) / 2**30
    where = "beside them on the GPU" if on_device else "on the host"
    model.print_and_status_update(
        f"{model.arch}: LoRAs added into the weights; the originals ({kept:.2f} GiB) wait {where} and are "
        "copied back when the LoRAs change",
        "loading",
    )
    return True


def restore(model, only_device_copies: bool = False) -> None:
    """The denoisers' original weights back (exact copies), where a patch changed them; copies kept on the device
    are freed. ``only_device_copies``: only where such copies exist (a holder leaving: what it kept on the GPU goes
    with it; a host-kept patch waits for the next request, which may not want it undone)."""
    import torch

    for module in model.parts.values():  # only a patched denoiser has a state
        state = getattr(module, STATE, None)
        if state is None or not state.key or (only_device_copies and not state.device):
            continue
        copies = state.copies()
        with torch.no_grad():
            for param, original in copies:
                param.copy_(original, non_blocking=original.is_pinned())
        if any(p.is_cuda for p, _ in copies):
            torch.cuda.synchronize()  # the host copies are read until the copy ends
        state.key, state.files, state.device = (), (), {}


def describe(holder, enabled: bool) -> dict:
    """``/health``'s ``lora_patch``: whether it is on, which LoRAs the resident denoiser's weights hold now, and
    the bytes of originals kept for them on the GPU and on the host (read from the server's thread: snapshots only)."""
    patched, kept = [], {"device": 0, "host": 0}
    for module in list(holder.parts.values()) if holder is not None else ():
        state = getattr(module, STATE, None)
        if state is None:
            continue
        patched += [{"file": name, "multiplier": multiplier} for name, multiplier in state.files]
        for where, copies in (("device", state.device), ("host", state.host)):
            kept[where] += sum(c.numel() * c.element_size() for _, c in list(copies.values()))
    return {"enabled": enabled, "patched": patched, "originals_bytes": kept}


def _denoisers(model) -> dict:
    """The roles loaded from ``name_or_path`` (``Component.source == "main"``): the denoiser(s) a LoRA trains."""
    return {
        role: model.parts[role]
        for role, comp in model.components.items()
        if comp.source == "main" and comp.has_weights and model.parts.get(role) is not None
    }


def _not_patchable(model, denoisers: dict) -> Optional[str]:
    """Why the denoisers' weights cannot take a patch, or None."""
    plan = getattr(model, "plan", None)
    for role, module in denoisers.items():
        placement = plan.placements.get(role, "gpu") if plan is not None else "gpu"
        if placement != "gpu":
            return f"the {role} is placed '{placement}', not all resident in its own dtype"
        if any(not p.dtype.is_floating_point or p.element_size() < 2 for p in module.parameters()):
            return f"the {role} has quantized weights"
    return None


def _not_patchable_adapters(pipe, denoisers: dict) -> Optional[str]:
    from peft.tuners.lora import LoraLayer

    outside = sorted(role for role, adapters in pipe.get_list_adapters().items() if adapters and role not in denoisers)
    if outside:
        return f"a LoRA reaches the {', '.join(outside)}"
    for module in denoisers.values():
        for layer in module.modules():
            if isinstance(layer, LoraLayer):
                if any(layer.use_dora.values()):
                    return "a DoRA LoRA"
                if any(getattr(layer, "lora_bias", {}).values()):
                    return "a LoRA with biases"
                if getattr(layer, "lora_embedding_A", None):
                    return "a LoRA on an embedding"  # its deltas are not in lora_A, which _add_deltas reads
    return None


def _touched(module, multipliers: dict):
    """(LoRA layer, the adapters of ``multipliers`` it has, its base weight) for each layer a LoRA reaches."""
    from peft.tuners.lora import LoraLayer

    for layer in module.modules():
        if isinstance(layer, LoraLayer) and (names := [name for name in multipliers if name in layer.lora_A]):
            yield layer, names, layer.get_base_layer().weight


def _touched_bytes(denoisers: dict, multipliers: dict) -> int:
    return sum(w.numel() * w.element_size() for m in denoisers.values() for _, _, w in _touched(m, multipliers))


def _room_on_device(model) -> int:
    """Bytes the plan leaves free on the GPU beside its peak (0 on the CPU, or with no plan)."""
    plan = getattr(model, "plan", None)
    if plan is None or not str(getattr(model, "device", "cpu")).startswith("cuda"):
        return 0
    return max(0, plan.available - plan.peak)


def _add_deltas(module, multipliers: dict, on_device: bool) -> None:
    """Each LoRA layer's deltas, times their multipliers, added into its base weight (in float32, then rounded
    once to the weight's dtype); the weight's original copied first, beside it or to the host."""
    import torch

    state = _state(module)
    with torch.no_grad():
        for layer, names, weight in list(_touched(module, multipliers)):
            if id(weight) not in state.host and id(weight) not in state.device:
                _keep_original(state, weight, on_device)
            total = weight.float()
            for name in names:
                total.add_(layer.get_delta_weight(name).float(), alpha=multipliers[name])
            weight.copy_(total)


def _keep_original(state: Patched, weight, on_device: bool) -> None:
    """The weight's original beside it when there is room (the plan said so, and the allocator agrees), else on the
    host."""
    from toolkit.device import is_oom

    if on_device:
        try:
            state.device[id(weight)] = (weight, weight.detach().clone())
            return
        except Exception as e:
            if not is_oom(e):
                raise
    state.host[id(weight)] = (weight, _host_copy(weight))


def _host_copy(weight):
    import torch

    if weight.is_cuda:
        copy = torch.empty(weight.shape, dtype=weight.dtype, device="cpu", pin_memory=True)
        copy.copy_(weight)
        return copy
    return weight.detach().clone()


def _unload(pipe, trainable: list) -> None:
    pipe.unload_lora_weights()
    for param, flag in trainable:
        param.requires_grad_(flag)


def _state(module) -> Patched:
    state = getattr(module, STATE, None)
    if state is None:
        state = Patched()
        setattr(module, STATE, state)
    return state
