"""``low_vram`` without copying weights off the GPU.

diffusers' model CPU offload (accelerate's ``CpuOffload`` hooks) moves a model off the GPU with ``module.to("cpu")``
before the next one runs, and re-creates its hooks at the end of every pipeline call. Each move copies every weight into
freshly allocated host memory, at 1.1 GB/s (docs/BENCHMARKS.md "Memory plan"), and real-size Flux with ``low_vram``
spent 31 of its 32 s per image moving the transformer and T5 back and forth (docs/MEASURED.md
"Model CPU offload's copies into fresh host memory"). The weights never change (LoRAs stay unmerged adapters), so each
tensor gets one pinned host copy, made once; moving a model off the GPU points its tensors back at those copies and
drops the GPU ones (no copy at all), and moving it on is a pinned copy (~55 GB/s, the same section).

Quantized weights (torchao tensor subclasses: a float8 or int8 payload plus scales) move too, so an 8-bit model
can visit (FLUX.2-dev's 32B transformer is 34 GiB in 8 bits: it cannot stay on a 24 GiB card). Their ``.data``
cannot be re-pointed across devices (torchao: "Attempted to set the storage of a tensor on device cuda:0 to a
storage on different device cpu", the ``low_vram`` + ``quantize`` crash of issue #13), so the parameter itself is
replaced: a host copy is a subclass tensor rebuilt from pinned copies of its inner tensors, and a move to the GPU
rebuilds one from device copies of those.

diffusers still decides *when* (its offload sequence, its ``maybe_free_model_hooks``) and accelerate's hooks
still trigger the moves; this module changes *how* a model moves, by replacing the two methods of each hook.
"""

from __future__ import annotations

import types
from typing import Any, Callable, Optional

from toolkit.models.pinned import empty_like_all, host_buffers

PINNED_ATTR = "_aitk_host_copies"
RECIPE_ATTR = "_aitk_rebuild"
SENDS_BACK_ATTR = "_aitk_sends_back"  # a model that stays: its forward pre-hook that sends the previous one back


def _tensors(module) -> dict:
    return {name: t for name, (_, _, t) in _slots(module).items()}


def _slots(module) -> dict:
    """Name -> (owning module, attribute, tensor) for every parameter and buffer, each tensor once (as
    ``named_parameters`` dedupes tied weights), in one walk of the module tree. A streamed block moves twice per
    step: ``named_parameters`` plus ``named_buffers`` (two walks, each building sets) cost a Qwen-Image block
    ~1 ms of CPU per move here, on a step that waits for its CPU."""
    slots, seen = {}, set()
    for prefix, owner in module.named_modules():
        for table in (owner._parameters, owner._buffers):
            for attr, t in table.items():
                if t is not None and id(t) not in seen:
                    seen.add(id(t))
                    slots[f"{prefix}.{attr}" if prefix else attr] = (owner, attr, t)
    return slots


def _plain(module) -> bool:
    return not any(_subclass(t) for t in _tensors(module).values())


def _subclass(t) -> bool:
    """A torchao tensor (a parameter made of one keeps the subclass's type). Asked of the type: ``t.data`` on a
    torchao tensor is a detach through its Python dispatch (~50 us each, 128 per Qwen-Image block round trip)."""
    return hasattr(type(t), "__tensor_flatten__")


def _rebuilt(t, convert: Callable):
    """The subclass tensor ``t`` with each inner tensor (payload, scales) passed through ``convert``. What
    rebuilding needs besides them is read once and kept on ``t`` (a host copy, rebuilt on every move): its
    flattening, size and stride each go through torchao's ``__torch_function__``; a plain attribute does not."""
    recipe = getattr(t, RECIPE_ATTR, None)
    if recipe is None:
        recipe = (*t.__tensor_flatten__(), t.size(), t.stride())
    names, context, size, stride = recipe
    rebuilt = type(t).__tensor_unflatten__({name: convert(getattr(t, name)) for name in names}, context, size, stride)
    setattr(rebuilt, RECIPE_ATTR, recipe)
    return rebuilt


def _replace(owner, attr: str, value) -> None:
    """Put a quantized tensor in its owner's place. A parameter is marked as one the way ``nn.Parameter`` marks a
    tensor subclass, without its detaches (two trips through torchao's dispatch per tensor; and, inside the
    pipeline's ``inference_mode``, "Cannot set version_counter for inference tensor"): ``value`` is always a
    tensor just rebuilt around copies, or a host copy, with no graph to detach from."""
    if attr in owner._parameters:
        value._is_param = True  # isinstance(value, nn.Parameter) for a subclass; requires_grad stays False
        owner._parameters[attr] = value
    else:
        owner._buffers[attr] = value


def _host_copies(tensors: dict, allocate: Callable) -> dict:
    """Quantized tensors' host copies: each rebuilt around host copies of its payload and scales, all allocated
    together (one page-locked block for the lot)."""
    parts = {name: tensor_parts(t) for name, t in tensors.items()}
    hosts = iter(allocate([part for name in tensors for part in parts[name]]))

    def copied(inner):
        return next(hosts).copy_(inner)  # ``_rebuilt`` walks the parts in ``tensor_parts``' order

    return {name: _rebuilt(t, copied) for name, t in tensors.items()}


def move_to_host(
    module, allocate: Callable = empty_like_all, only: Optional[Callable[[str], bool]] = None, write_back: bool = False
) -> None:
    """Point every tensor of ``module`` (or those whose names pass ``only``) at its host copy; a copy is made only
    for tensors that have none yet (the first move, or an adapter added since). ``allocate`` makes host tensors
    shaped like a list of tensors (page-locked views into one block, ``toolkit/models/pinned.py``).
    ``write_back``: the device values go into existing copies too, for tensors that may have changed in place
    while they lived on the device (a LoRA hot-swapped into a streamed denoiser's kept blocks); a visit's round
    trip changes nothing and skips it."""
    slots = {name: slot for name, slot in _slots(module).items() if only is None or only(name)}
    previous = getattr(module, PINNED_ATTR, None) or {}
    plain = {name: t for name, (_, _, t) in slots.items() if not _subclass(t)}
    in_scope = {n: c for n, c in previous.items() if (only is None or only(n)) and not _subclass(c)}
    copies = host_buffers(plain, in_scope, allocate)
    for name, t in plain.items():
        if write_back or copies[name] is not in_scope.get(name):
            copies[name].copy_(t.data)
        t.data = copies[name]
    quantized = {name: slot for name, slot in slots.items() if _subclass(slot[2])}
    new = _host_copies({name: t for name, (_, _, t) in quantized.items() if name not in previous}, allocate)
    for name, (owner, attr, _) in quantized.items():
        copies[name] = previous[name] if name in previous else new[name]
        _replace(owner, attr, copies[name])
    if only is not None:  # the copies of tensors outside this move are kept, not dropped as stale
        copies = {name: c for name, c in previous.items() if not only(name)} | copies
    setattr(module, PINNED_ATTR, copies)


def move_to_device(module, device, only: Optional[Callable[[str], bool]] = None) -> None:
    """The module's host copies (or those whose names pass ``only``) onto ``device``, asynchronously on the
    current stream (ordered before the kernels that use them)."""
    copies = getattr(module, PINNED_ATTR, None)
    slots = {name: slot for name, slot in _slots(module).items() if only is None or only(name)}
    if copies is None or any(name not in copies for name in slots):
        # the first move, or tensors added since (a LoRA loaded into a streamed denoiser): host copies first
        missing = set(slots) - set(copies or {})
        move_to_host(module, only=lambda name: name in missing)
        copies = getattr(module, PINNED_ATTR)
    quantized = []
    for name, (owner, attr, t) in slots.items():
        if _subclass(copies[name]):
            quantized.append((owner, attr, copies[name]))
        else:
            t.data = copies[name].to(device, non_blocking=True, copy=True)
    with _inference_off():  # rebuilt outside the pipeline's inference mode, as the parameters they replace were
        for owner, attr, copy in quantized:
            _replace(owner, attr, _rebuilt(copy, lambda x: x.to(device, non_blocking=True, copy=True)))


def _inference_off():
    import torch

    return torch.inference_mode(False)


def tensor_parts(t) -> list:
    """The plain tensors holding ``t``'s data: itself, or a quantized tensor's payload and scales."""
    if _subclass(t):
        recipe = getattr(t, RECIPE_ATTR, None)  # a moved tensor's (``_rebuilt``): no trip through torchao
        return [getattr(t, name) for name in (recipe or t.__tensor_flatten__())[0]]
    return [t.data]


def _on_host(module) -> bool:
    """The module's tensors are its host copies (or, before any move, on the CPU)."""
    first = next(iter(_tensors(module).items()), None)
    if first is None:
        return True
    copies = getattr(module, PINNED_ATTR, None)
    if copies is None or first[0] not in copies:
        return first[1].device.type == "cpu"
    return _address(first[1]) == _address(copies[first[0]])


def _address(t) -> int:
    """Where a tensor's data is: a subclass's first inner tensor (a rebuilt parameter is a new object around
    the same payload)."""
    return tensor_parts(t)[0].data_ptr()


def on_device(tensor_device, execution_device) -> bool:
    """``cuda:0`` is on ``cuda``: comparing the two with ``==`` says no, and every denoiser call moved the whole
    model onto the GPU again (0.52 s/step instead of 0.17 for Flux: docs/MEASURED.md
    "An offload chain that compared cuda:0 with cuda")."""
    import torch

    execution_device = torch.device(execution_device)
    return tensor_device.type == execution_device.type and (
        execution_device.index is None or tensor_device.index == execution_device.index
    )


def _patch_hook(cpu_offload, allocate: Callable, stays: bool = False) -> None:
    """Replace one accelerate ``CpuOffload`` hook's moves (its ``init_hook`` offloads, ``pre_forward`` onloads).
    A model that ``stays`` (resident, quantized or streamed by group offloading) is never moved by its hook; the
    hook only sends the previous model in the chain back to the host before it runs (``_hook_staying_model``), so
    a text encoder that visited is gone before the resident denoiser's first step."""
    from accelerate.utils import send_to_device

    def init_hook(self, module):
        if not stays:
            move_to_host(module, allocate)
        return module

    def pre_forward(self, module, *args, **kwargs):
        send_previous_back(self)
        if _on_host(module) or not on_device(next(iter(_tensors(module).values())).device, self.execution_device):
            move_to_device(module, self.execution_device)
        return send_to_device(args, self.execution_device), send_to_device(kwargs, self.execution_device)

    cpu_offload.init_hook = types.MethodType(init_hook, cpu_offload)
    if not stays:  # a staying model's hook wraps no forward (``_hook_staying_model``)
        cpu_offload.pre_forward = types.MethodType(pre_forward, cpu_offload)


def send_previous_back(cpu_offload) -> None:
    """The model before this one in the offload chain goes back to the host, if it is not there already."""
    from accelerate.utils.memory import clear_device_cache

    previous = getattr(cpu_offload.prev_module_hook, "model", None)
    if previous is not None and not _on_host(previous):
        cpu_offload.prev_module_hook.offload()  # the previous model's hook: also patched
        # As accelerate does: hand the freed blocks back, or the next model's differently sized tensors
        # fragment a tight budget (an `oom` at 24 GiB with 1.9 GiB reserved but unusable: docs/MEASURED.md
        # "Fragmentation after a model moves off the GPU").
        clear_device_cache()


def enable_low_vram(pipeline, device, visitors: Optional[set] = None, allocate: Callable = empty_like_all) -> None:
    """Model CPU offload in diffusers' order (``model_cpu_offload_seq``) with accelerate's hooks, for the
    components named in ``visitors`` (when None: every model of plain tensors, as ``low_vram`` alone asks),
    moving weights through pinned host copies. The others stay where they are and only make the visitor before
    them leave. A quantized model visits only when named: a memory plan's 8-bit visitor.

    This replaces ``pipeline.enable_model_cpu_offload`` on the instance, because diffusers calls it again after
    every pipeline call (``maybe_free_model_hooks``), and its own version first moves the whole pipeline to the
    CPU: for each visitor that is a pointer swap here, never a copy."""
    import torch
    from accelerate.hooks import CpuOffload, UserCpuOffloadHook, add_hook_to_module

    execution_device = torch.device(device)

    handles: list = []

    def enable(*args: Any, **kwargs: Any) -> None:
        pipeline.remove_all_hooks()
        while handles:
            handles.pop().remove()
        models = {name: m for name, m in pipeline.components.items() if _is_module(m)}
        visiting = {name for name, m in models.items() if (_plain(m) if visitors is None else name in visitors)}
        for name in visiting:
            move_to_host(models[name], allocate)
        hooks, previous = [], None
        chain = [name for name in pipeline.model_cpu_offload_seq.split("->") if name in models]
        for name in chain + [n for n in visiting if n not in chain]:
            # Patched before it is added: adding runs init_hook, whose stock version copies the model to the CPU.
            hook = CpuOffload(execution_device=execution_device, prev_module_hook=previous if name in chain else None)
            _patch_hook(hook, allocate, stays=name not in visiting)
            if name in visiting:
                add_hook_to_module(models[name], hook, append=True)
            else:
                handles.append(_hook_staying_model(models[name], hook))
            user_hook = UserCpuOffloadHook(models[name], hook)
            hooks.append(user_hook)
            previous = user_hook if name in chain else previous
        pipeline._all_hooks = hooks
        pipeline._offload_device = execution_device
        pipeline._offload_gpu_id = execution_device.index or 0

    pipeline.enable_model_cpu_offload = enable
    enable()


def _hook_staying_model(module, hook):
    """A model that stays on the GPU only sends the model before it back, from a torch pre-hook, which
    ``Module.__call__`` runs whatever becomes of ``forward``: group offloading's lazy prefetch hook (on CUDA streams)
    puts ``forward`` back as it found it when it removes itself after its first call. An accelerate wrapper added on top
    was dropped then, and on SD3's first request on 16 GiB CLIP-G stayed on the GPU through sampling behind a streamed
    T5 (1.29 GiB: docs/MEASURED.md "A visitor left on the GPU by a self-removing prefetch hook"); a wrapper added later
    kept the removed hook running on every call. ``_hf_hook`` is set as accelerate sets it: diffusers reads the
    pipeline's execution device there."""
    module._hf_hook = hook
    handle = module.register_forward_pre_hook(lambda m, args: send_previous_back(hook))
    module.__dict__[SENDS_BACK_ATTR] = handle
    return handle


def _is_module(value) -> bool:
    import torch

    return isinstance(value, torch.nn.Module)


def drop_host_copies(module) -> Optional[dict]:
    """Eviction: the pinned copies go with the module (pinned memory is scarce and slow to allocate), and its
    pre-hook that would keep the previous model in the chain alive."""
    if not hasattr(module, "__dict__"):
        return None
    sends_back = module.__dict__.pop(SENDS_BACK_ATTR, None)
    if sends_back is not None:
        sends_back.remove()
    return module.__dict__.pop(PINNED_ATTR, None)
