"""A pipeline's text-encoder outputs kept for its recent prompts, so a request repeating one skips encoding.

A seed sweep, a re-roll from the UI or a script's batch repeats the prompt and changes the rest; ComfyUI runs none of
the text encoding again in that case, because its node outputs are cached. Here encoding is also what a memory plan
makes expensive: on a 24 GiB card HiDream's four encoders visit and stream, 1.67 s of a 5.98 s warm request
(docs/BENCHMARKS.md "Memory plan"), and an encoder not called is not moved either.

The cache wraps the pipeline's ``encode_prompt`` for one generation. Its key is everything the call could
depend on: every argument (tensors and images by content), the pipeline's own simple settings that its
``__call__`` sets before encoding (``_guidance_scale``, ``_clip_skip``: some families read them inside), and the
LoRAs that reach a text encoder. The cache belongs to the pipeline's modules, not to the pipeline: pipelines
built around the same modules share it, and other modules (a re-plan loads another encoder) start empty.
Arguments it cannot key (a generator, an unknown object) are never cached. Entries live in host memory and are
copied back to where they were made on a hit (the caller may change them in place).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import weakref
from collections import OrderedDict
from typing import Any

MAX_ENTRY_BYTES = 256 * 1024**2  # LTX-2's Gemma 3 hands back all 49 hidden states: ~400 MB per prompt
MAX_BYTES = 1024**3  # per model, in host memory (HiDream's four encoders: ~40 MB a prompt)
SETTINGS = {"entries": 16}  # engine.prompt_cache (0: off)
STATS = {"hits": 0, "misses": 0}


class Uncacheable(Exception):
    pass


def configure(entries: int) -> None:
    if int(entries) < 0:
        raise ValueError("engine.prompt_cache must be 0 (off) or a number of prompts to keep per model")
    SETTINGS["entries"] = int(entries)


def stats() -> dict:
    """For ``/health``: plain numbers, read without torch."""
    return dict(STATS, entries_per_model=SETTINGS["entries"])


@contextlib.contextmanager
def prompt_cache(pipeline, context: Any = ()):
    """``pipeline.encode_prompt`` answered from the cache for the duration; ``context``: what else decides the
    encoders' output (the holder's LoRAs)."""
    encode = getattr(pipeline, "encode_prompt", None)
    if not SETTINGS["entries"] or encode is None:
        yield
        return
    cache = _cache_of(pipeline)
    own = "encode_prompt" in vars(pipeline)

    def cached_encode(*args, **kwargs):
        return cache.call(encode, (context, _settings(pipeline), args, kwargs), args, kwargs)

    pipeline.encode_prompt = cached_encode
    try:
        yield
    finally:
        if own:
            pipeline.encode_prompt = encode
        else:
            del pipeline.encode_prompt


class _Cache:
    def __init__(self, modules: tuple):
        self.modules = tuple(weakref.ref(m) for m in modules)
        self.entries: OrderedDict = OrderedDict()  # key -> (bytes, outputs)
        self.lock = threading.Lock()  # requests sharing steps encode on threads of their own (step_batching.py)

    def alive(self) -> bool:
        return all(r() is not None for r in self.modules)

    def same_modules(self, modules: tuple) -> bool:
        return len(modules) == len(self.modules) and all(r() is m for r, m in zip(self.modules, modules))

    def call(self, encode, key_parts, args, kwargs):
        import torch.utils._pytree as pytree

        try:
            key = key_of(key_parts)
        except Uncacheable:
            return encode(*args, **kwargs)
        with self.lock:
            hit = self.entries.get(key)
            if hit is not None:
                STATS["hits"] += 1
                self.entries.move_to_end(key)
        if hit is not None:
            return pytree.tree_map(_restore, hit[1])
        STATS["misses"] += 1
        out = encode(*args, **kwargs)
        size = sum(t.numel() * t.element_size() for t in pytree.tree_leaves(out) if _is_tensor(t))
        if size <= MAX_ENTRY_BYTES:
            kept = pytree.tree_map(_keep, out)
            with self.lock:
                self.entries[key] = (size, kept)
                while len(self.entries) > SETTINGS["entries"] or sum(n for n, _ in self.entries.values()) > MAX_BYTES:
                    self.entries.popitem(last=False)
        return out


_caches: dict = {}  # the modules' ids -> their cache
_caches_lock = threading.Lock()


def _cache_of(pipeline) -> _Cache:
    """The cache of the pipeline's modules, whichever pipeline holds them: the engine builds a pipeline per set of
    LoRAs around the same pooled modules, and a compare grid's checkpoints would each have started empty."""
    modules = tuple(m for m in pipeline.components.values() if hasattr(m, "parameters"))
    key = tuple(id(m) for m in modules)
    with _caches_lock:
        cache = _caches.get(key)
        if cache is None or not cache.same_modules(modules):
            for stale in [k for k, c in _caches.items() if not c.alive()]:
                del _caches[stale]
            cache = _caches[key] = _Cache(modules)
    return cache


# Set by the denoising loop, after encoding: read by nothing that encodes (SD 1.5's ``_num_timesteps`` is unset
# before its first request and set after it, which kept the first request's prompt from ever hitting).
LOOP_STATE = {"_num_timesteps", "_current_timestep", "_interrupt"}


def _settings(pipeline) -> tuple:
    """The pipeline's simple private attributes: what ``__call__`` set for this request (guidance, clip skip)."""
    simple = (str, int, float, bool, type(None))
    return tuple(
        sorted(
            (k, v) for k, v in vars(pipeline).items() if k[:1] == "_" and k not in LOOP_STATE and isinstance(v, simple)
        )
    )


def key_of(value) -> Any:
    """A hashable stand-in for ``value``: tensors, arrays and images by their bytes."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *map(key_of, value))
    if isinstance(value, dict):
        return ("dict", *sorted((str(k), key_of(v)) for k, v in value.items()))
    name = type(value).__name__
    if _is_tensor(value):
        flat = value.detach().to("cpu").contiguous().reshape(-1).view(dtype=_bytes_dtype())
        return ("tensor", tuple(value.shape), str(value.dtype), str(value.device), _digest(flat.numpy().tobytes()))
    if name == "ndarray":
        return ("array", value.shape, str(value.dtype), _digest(value.tobytes()))
    if hasattr(value, "tobytes") and hasattr(value, "mode") and hasattr(value, "size"):  # a PIL image
        return ("image", value.mode, value.size, _digest(value.tobytes()))
    if name in ("device", "dtype"):
        return (name, str(value))
    raise Uncacheable(name)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data).hexdigest()


def _bytes_dtype():
    import torch

    return torch.uint8


def _is_tensor(value) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


class _Kept:
    """A tensor in host memory and where it was made (a leaf to pytree, which would walk into a tuple)."""

    def __init__(self, tensor):
        self.tensor, self.device = tensor.detach().to("cpu", copy=True), tensor.device


def _keep(value):
    return _Kept(value) if _is_tensor(value) else value


def _restore(value):
    return value.tensor.to(value.device, copy=True) if isinstance(value, _Kept) else value
