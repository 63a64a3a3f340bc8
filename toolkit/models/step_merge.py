"""One denoiser call from several requests' calls, and each request's part of its output (step_batching.py).

What carries the batch (the main input, per-row tensors, a per-sample list) is concatenated along dim 0; a timestep
becomes one per row; everything else must agree, or the calls do not merge (``Incompatible``) and run apart.
"""

from __future__ import annotations

TIMESTEP_NAMES = ("timestep", "timesteps", "t", "guidance")  # scalars a model broadcasts over its batch
MAIN_INPUTS = ("hidden_states", "sample", "x", "latents", "latent_model_input", "img")


class Incompatible(Exception):
    """Two calls' arguments cannot be one call's."""


def batch_size(args: tuple, kwargs: dict) -> int:
    """Rows a call carries: the length of its main input (a tensor's dim 0, or a per-sample list's length)."""
    import torch

    main = args[0] if args else next((kwargs[k] for k in MAIN_INPUTS if k in kwargs), None)
    if torch.is_tensor(main) and main.dim() > 0:
        return main.shape[0]
    if isinstance(main, list):
        return len(main)
    raise Incompatible("no batch input")


def merge(calls: list) -> tuple[tuple, dict, list[int]]:
    """One call's arguments from several (each with ``args``, ``kwargs`` and its forward's parameter ``names``):
    (args, kwargs, rows per call)."""
    sizes = [batch_size(c.args, c.kwargs) for c in calls]
    per_sample_lists = isinstance(calls[0].args[0] if calls[0].args else _main_kwarg(calls[0].kwargs), list)
    if len({len(c.args) for c in calls}) != 1 or len({tuple(sorted(c.kwargs)) for c in calls}) != 1:
        raise Incompatible("different arguments")
    names = calls[0].names
    args = tuple(
        _merge_value([c.args[i] for c in calls], sizes, names[i] if i < len(names) else "", per_sample_lists)
        for i in range(len(calls[0].args))
    )
    each = _text_padded([c.kwargs for c in calls])
    kwargs = {k: _merge_value([kw[k] for kw in each], sizes, k, per_sample_lists) for k in calls[0].kwargs}
    return args, kwargs, sizes


def _text_padded(kwargs: list[dict]) -> list[dict]:
    """Prompts of different token lengths, for a denoiser that takes a text mask (Qwen-Image's
    ``encoder_hidden_states_mask``): each padded with masked zeros to the longest, as diffusers' own pipeline pads
    a batch of prompts. A mask of None means every token counts. Otherwise the calls as they are."""
    import torch

    texts = [kw.get("encoder_hidden_states") for kw in kwargs]
    if "encoder_hidden_states_mask" not in kwargs[0] or not all(torch.is_tensor(t) and t.dim() == 3 for t in texts):
        return kwargs
    longest = max(t.shape[1] for t in texts)
    if all(t.shape[1] == longest for t in texts):
        return kwargs
    padded = []
    for kw, text in zip(kwargs, texts):
        mask = kw["encoder_hidden_states_mask"]
        if mask is None:
            mask = torch.ones(text.shape[:2], dtype=torch.long, device=text.device)
        extra = longest - text.shape[1]
        padded.append(
            kw
            | {
                "encoder_hidden_states": torch.nn.functional.pad(text, (0, 0, 0, extra)),
                "encoder_hidden_states_mask": torch.nn.functional.pad(mask, (0, extra)),
            }
        )
    return padded


def _main_kwarg(kwargs: dict):
    return next((kwargs[k] for k in MAIN_INPUTS if k in kwargs), None)


def _merge_value(values: list, sizes: list[int], name: str, per_sample_lists: bool):
    import torch

    first = values[0]
    if torch.is_tensor(first):
        return _merge_tensors(values, sizes, name)
    if isinstance(first, dict):
        if any(not isinstance(v, dict) or v.keys() != first.keys() for v in values):
            raise Incompatible(name)
        return {k: _merge_value([v[k] for v in values], sizes, k, per_sample_lists) for k in first}
    if isinstance(first, list) and per_sample_lists:
        if any(not isinstance(v, list) or len(v) != n for v, n in zip(values, sizes)):
            raise Incompatible(name)
        return [item for v in values for item in v]
    if isinstance(first, (list, tuple)) and any(torch.is_tensor(item) for item in first):
        if any(type(v) is not type(first) or len(v) != len(first) for v in values):
            raise Incompatible(name)
        return type(first)(_merge_value(list(items), sizes, name, per_sample_lists) for items in zip(*values))
    if all(_same(v, first) for v in values[1:]):
        return first
    raise Incompatible(name)


def _merge_tensors(values: list, sizes: list[int], name: str):
    import torch

    if any(not torch.is_tensor(v) for v in values):
        raise Incompatible(name)
    first = values[0]
    if first.dim() > 0 and all(v.shape[0] == n and v.shape[1:] == first.shape[1:] for v, n in zip(values, sizes)):
        return torch.cat(values)
    # Per row even when they agree: comparing two CUDA scalars waits for the GPU, every round, and a model that
    # takes a timestep per call takes one per row (diffusers' pipelines pass both)
    if name in TIMESTEP_NAMES and all(v.dim() == 0 or v.shape == (1,) for v in values):
        return torch.cat([v.reshape(1).expand(n) for v, n in zip(values, sizes)])
    if all(v.shape == first.shape and (v is first or torch.equal(v, first)) for v in values[1:]):
        return first
    raise Incompatible(name)


def _same(a, b) -> bool:
    try:
        return a is b or bool(a == b)
    except Exception:
        return False


def split(out, sizes: list[int]) -> list:
    """Each call's part of a merged call's output."""
    import torch

    total = sum(sizes)
    if torch.is_tensor(out):
        if out.dim() > 0 and out.shape[0] == total:
            return list(out.split(sizes))
        return [out] * len(sizes)
    if isinstance(out, list) and len(out) == total:
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        return [out[s : s + n] for s, n in zip(starts, sizes)]
    if isinstance(out, dict):  # diffusers' output classes are ordered dicts of their fields
        fields = {k: split(v, sizes) for k, v in out.items()}
        return [type(out)(**{k: parts[i] for k, parts in fields.items()}) for i in range(len(sizes))]
    if isinstance(out, tuple):
        items = [split(v, sizes) for v in out]
        return [tuple(parts[i] for parts in items) for i in range(len(sizes))]
    return [out] * len(sizes)
