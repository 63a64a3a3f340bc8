"""ComponentPool: which loaded components stay resident, shared between model configs.

Identity is computed in the load funnel from exactly the arguments it receives: the class, the *content* of the
source (a digest of the component's config and weight files, see ``loading.content_digest``), dtype, quantization,
offload policy and device. So two configs share a component exactly when they would have loaded the same bytes
the same way: two fine-tunes with one ``extras_name_or_path``, and also Wan 2.1 and Wan 2.2 5B, whose repos
carry the same UMT5 encoder under different names.

A request marks what it uses (``begin_request`` ... ``release_unused``); what it does not use is freed, except
what the ``keep_resident_gb`` keep-warm budget holds, least recently used first out. Counters and per-entry bytes
are what ``/health`` shows and what the tests assert on.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from toolkit.gc_heap import thaw
from toolkit.models.offload import drop_host_copies, on_device
from toolkit.models.pinned import host_buffers, tensor_bytes

GB = 1024**3
HOST_RESERVE_SHARE, HOST_RESERVE_MIN = 0.10, 4 * GB  # host_reserve_bytes


@dataclass(frozen=True)
class ComponentKey:
    cls: str
    content: str  # digest of the component's files: what makes two sources the same
    dtype: Optional[str] = None
    qtype: Optional[str] = None
    offload: Optional[str] = None
    device: Optional[str] = None
    source: str = field(default="", compare=False)  # where it was first loaded from (display only)
    subfolder: Optional[str] = field(default=None, compare=False)

    def __str__(self) -> str:
        parts = [self.cls, self.source + (f"/{self.subfolder}" if self.subfolder else "")]
        parts += [p for p in (self.dtype, self.qtype, self.offload, self.device) if p]
        return "|".join(parts + [f"#{self.content[:10]}"])


@dataclass
class PoolEntry:
    key: ComponentKey
    module: Any
    bytes: int
    last_used: float = field(default_factory=time.time)
    hits: int = 0
    tier: str = "device"  # "device", or "ram": parked in pinned host memory, off the GPU
    load_s: float = 0.0  # how long the miss took (from disk): what a swap must pay for this component
    return_s: Optional[float] = None  # the last return from the RAM tier
    pinned: Optional[dict] = None  # host buffers, allocated once (pinning is slow) and reused on every park

    def describe(self, in_use: bool) -> dict:
        return {
            "key": str(self.key),
            "class": self.key.cls.rpartition(".")[2],
            "source": self.key.source,
            "subfolder": self.key.subfolder,
            "content": self.key.content,
            "dtype": self.key.dtype,
            "device": self.key.device,
            "tier": self.tier,
            "bytes": self.bytes,
            "hits": self.hits,
            "load_s": round(self.load_s, 4),
            "return_s": None if self.return_s is None else round(self.return_s, 4),
            "last_used": self.last_used,
            "in_use": in_use,
        }


def module_bytes(module, on: Optional[str] = None) -> int:
    """Parameter + buffer bytes; 0 for tokenizers and other weightless components. ``on`` counts only what is
    on that device now: a pool entry's key says where a component was loaded, and a visitor loaded on the host
    may be on the GPU (the memory plan's stage records and out-of-memory reports)."""

    total = 0
    for getter in ("parameters", "buffers"):
        fn = getattr(module, getter, None)
        if fn is not None:
            total += sum(tensor_bytes(t) for t in fn() if on is None or on_device(t.device, on))
    return total


class ComponentPool:
    def __init__(self, keep_resident_gb: float = 0.0, keep_in_ram_gb: float = 0.0):
        self.keep_resident_bytes = int(keep_resident_gb * GB)
        self.keep_in_ram_bytes = int(keep_in_ram_gb * GB)
        self.entries: "OrderedDict[ComponentKey, PoolEntry]" = OrderedDict()  # LRU order: oldest first
        self.counters = {"hits": 0, "misses": 0, "evictions": 0, "ram_hits": 0, "parked": 0}
        self._used: set[ComponentKey] = set()
        self._lock = threading.RLock()
        self._inject_oom = 0

    # ------------------------------------------------------------------ the funnel's side
    def get_or_load(self, key: ComponentKey, load: Callable[[], Any], on_event: Optional[Callable] = None) -> Any:
        with self._lock:
            entry = self.entries.get(key)
            if entry is not None:
                if entry.tier == "ram":
                    started = time.perf_counter()
                    _unpark(entry)
                    entry.return_s = time.perf_counter() - started
                    self.counters["ram_hits"] += 1
                self.counters["hits"] += 1
                entry.hits += 1
                self._touch(entry)
                return entry.module
        if self._inject_oom:
            self._inject_oom -= 1
            raise _oom_error(f"injected out-of-memory while loading {key}")
        started = time.perf_counter()
        module = load()
        with self._lock:
            self.counters["misses"] += 1
            entry = PoolEntry(key, module, module_bytes(module), load_s=time.perf_counter() - started)
            self.entries[key] = entry
            self._touch(entry)
        return module

    def _touch(self, entry: PoolEntry) -> None:
        entry.last_used = time.time()
        self.entries.move_to_end(entry.key)
        self._used.add(entry.key)

    # ------------------------------------------------------------------ the engine's side
    def begin_request(self) -> None:
        with self._lock:
            self._used = set()

    def mark_used(self, key: ComponentKey) -> None:
        with self._lock:
            if key in self.entries:
                self._touch(self.entries[key])

    @property
    def used(self) -> set:
        return set(self._used)

    def release_unused(self, keep: Optional[set] = None, stop: Optional[Callable[[], bool]] = None) -> list:
        """Free what the current request did not use, beyond the keep-warm budget (LRU leaves first). ``stop``: asked
        before each entry; True leaves the rest where they are (the engine's next request is waiting: a component's
        first park pins its host copy, ~1 s per GB, and a queued Flux request waited 3.6 s for Wan 2.1's:
        docs/BENCHMARKS.md "First request and queue"). What stays is released after a later request, or evicted when a
        load needs room."""
        keep = set(keep or ()) | self._used
        with self._lock:
            idle = [e for k, e in self.entries.items() if k not in keep]  # oldest first
            budget = self.keep_resident_bytes
            kept_bytes = 0
            victims = []
            for entry in reversed(idle):  # newest idle entries are the ones worth keeping warm
                if budget > 0 and kept_bytes + entry.bytes <= budget:
                    kept_bytes += entry.bytes
                else:
                    victims.append(entry.key)
        return self.evict(victims, stop=stop)

    def evict(self, keys, allow_park: bool = True, stop: Optional[Callable[[], bool]] = None) -> list:
        """Free these entries' device memory: park them in pinned RAM while ``keep_in_ram_gb`` allows, else drop."""
        evicted = []
        with self._lock:
            for key in keys:
                if stop is not None and stop():
                    break
                entry = self.entries.get(key)
                if entry is None or entry.tier == "ram" and allow_park:
                    continue
                if allow_park and self._can_park(entry):
                    _park(entry)
                    self.counters["parked"] += 1
                    evicted.append(key)
                    continue
                self.entries.pop(key)
                _detach_hooks(entry.module)
                entry.module = None
                self.counters["evictions"] += 1
                evicted.append(key)
        if evicted:
            free_memory()
        return evicted

    def unload(self, keys: Optional[list[str]] = None, protect: Optional[set] = None) -> list[str]:
        """``/unload``: everything (``keys`` None) or the named entries, never those ``protect``ed (in use)."""
        protect = protect or set()
        with self._lock:
            if keys is None:
                targets = [k for k in self.entries if k not in protect]
                return [str(k) for k in self.evict(targets, allow_park=False)]
            else:
                by_name = {str(k): k for k in self.entries}
                unknown = [k for k in keys if k not in by_name]
                if unknown:
                    raise KeyError(", ".join(unknown))
                targets = [by_name[k] for k in keys if by_name[k] not in protect]
        return [str(k) for k in self.evict(targets)]

    def evict_for(self, needed_bytes: int, device: str, protect: set) -> list[ComponentKey]:
        """Before a load: free LRU entries the current request does not use until ``needed_bytes`` fit."""
        free = free_device_bytes(device)
        if free is None or free >= needed_bytes:
            return []
        on_device = lambda key, entry: key.device == device and entry.tier == "device"  # noqa: E731
        return self.evict(self._oldest_unused(free, needed_bytes, protect, on_device))

    def evict_host_for(self, needed_bytes: int, protect: set) -> list[ComponentKey]:
        """Before a component that waits in host RAM loads (a GPU engine's visitor or streamed model): drop idle
        entries held there, oldest first, until it fits. A re-plan that moves a model's components to other
        placements loads new copies; beside the old ones they outgrew the host (FLUX.2-dev on a 16 GiB budget
        held 75 GiB of pinned copies, and the OS killed the engine as the next ones loaded: docs/MEASURED.md
        "Pinned host copies and the OS's memory killer")."""
        free = host_available_bytes()
        if free >= needed_bytes:
            return []
        on_host = lambda key, entry: entry.tier == "ram" or key.device == "cpu"  # noqa: E731
        return self.evict(self._oldest_unused(free, needed_bytes, protect, on_host), allow_park=False)

    def _oldest_unused(self, free: int, needed_bytes: int, protect: set, where: Callable) -> list[ComponentKey]:
        victims = []
        with self._lock:
            for key, entry in self.entries.items():  # oldest first
                if free >= needed_bytes:
                    break
                if key in protect or key in self._used or not where(key, entry):
                    continue
                victims.append(key)
                free += entry.bytes
        return victims

    def _can_park(self, entry: PoolEntry) -> bool:
        if not self.keep_in_ram_bytes or not str(entry.key.device).startswith("cuda") or not entry.bytes:
            return False
        parked = sum(e.bytes for e in self.entries.values() if e.tier == "ram")
        return parked + entry.bytes <= self.keep_in_ram_bytes

    def snapshot(self) -> list[dict]:
        with self._lock:
            return [e.describe(k in self._used) for k, e in reversed(self.entries.items())]

    def resident_bytes(self) -> int:
        with self._lock:
            return sum(e.bytes for e in self.entries.values())

    def device_bytes(self, device: str) -> int:
        """Bytes of modules held on ``device`` (loaded there, not parked in RAM)."""
        with self._lock:
            return sum(e.bytes for e in self.entries.values() if e.tier == "device" and e.key.device == device)

    def host_bytes(self) -> int:
        """Bytes of modules held in host memory (visitors' pinned copies, parked entries)."""
        with self._lock:
            return sum(e.bytes for e in self.entries.values() if e.tier == "ram" or e.key.device == "cpu")

    def inject_oom(self, count: int = 1) -> None:
        """Test hook: the next ``count`` loads (misses) raise a CUDA out-of-memory error."""
        self._inject_oom = count


# ------------------------------------------------------------------ the active pool the funnel consults
_active: Optional[ComponentPool] = None
_active_lock = threading.Lock()


@contextlib.contextmanager
def active_pool(pool: Optional[ComponentPool]) -> Iterator[Optional[ComponentPool]]:
    """Loads inside this block go through ``pool``; arch files never see it."""
    global _active
    with _active_lock:
        previous, _active = _active, pool
    try:
        yield pool
    finally:
        with _active_lock:
            _active = previous


def current_pool() -> Optional[ComponentPool]:
    return _active


# ------------------------------------------------------------------ memory
def _tensors(module):
    yield from module.named_parameters()
    yield from module.named_buffers()


def _park(entry: PoolEntry) -> None:
    """GPU -> pinned host memory. The buffers are pinned once, on the first park, and reused afterwards."""
    import torch

    tensors = dict(_tensors(entry.module))
    entry.pinned = host_buffers(tensors, entry.pinned)
    for name, t in tensors.items():
        entry.pinned[name].copy_(t.data, non_blocking=True)
    torch.cuda.synchronize()
    for name, t in tensors.items():
        t.data = entry.pinned[name]
    entry.tier = "ram"


def _unpark(entry: PoolEntry) -> None:
    """Pinned host memory -> GPU at copy-engine speed, no disk involved."""
    import torch

    device = torch.device(entry.key.device)
    for _, t in _tensors(entry.module):
        t.data = t.data.to(device, non_blocking=True)
    torch.cuda.synchronize(device)
    entry.tier = "device"


def _detach_hooks(module) -> None:
    """Offload hooks hold references to the module and its pinned CPU copies (accelerate's ``_hf_hook`` from
    model CPU offload, diffusers' ``_diffusers_hook`` registries from group offloading): an evicted module that
    kept them would keep that memory. Both are removed, with ``forward`` put back, before it is dropped."""
    if hasattr(module, "_hf_hook"):
        from accelerate.hooks import remove_hook_from_module

        remove_hook_from_module(module, recurse=True)

    drop_host_copies(module)
    modules = module.modules() if callable(getattr(module, "modules", None)) else [module]
    for sub in list(modules):
        registry = getattr(sub, "_diffusers_hook", None)
        if registry is not None:
            for name in list(registry.hooks):
                registry.remove_hook(name, recurse=False)
            del sub._diffusers_hook


def free_memory() -> None:
    """What an eviction left, collected: cycles among frozen objects too (toolkit/gc_heap.py ``thaw``; the
    engine freezes the heap again once idle)."""
    thaw()
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def free_device_bytes(device: Optional[str]) -> Optional[int]:
    """Free memory this process may use on ``device``: the card's, within ``engine.vram_budget_gb``."""
    if not device or not str(device).startswith("cuda"):
        return None
    import torch

    from toolkit.device import free_within_budget, vram_budget

    return free_within_budget(
        torch.cuda.mem_get_info(torch.device(device))[0],
        vram_budget(device),
        torch.cuda.memory_reserved(torch.device(device)),
    )


def plannable_bytes(device: str, own_bytes: int) -> int:
    """GPU memory a memory plan may count on: what is free within the budget, plus what this process holds that a
    new plan could reuse or free (``own_bytes``: the pool's modules on this device, and the allocator's cached
    blocks), less a margin for fragmentation."""
    import torch

    from toolkit.device import vram_budget

    dev = torch.device(device)
    cached = torch.cuda.memory_reserved(dev) - torch.cuda.memory_allocated(dev)
    total = free_device_bytes(device) + cached + own_bytes
    budget = vram_budget(device)
    if budget is not None:  # whatever the accounting above, never more than the budget
        total = min(total, budget)
    return plannable_share(total)


def plannable_share(total: int) -> int:
    """Of ``total`` free bytes, what a plan may fill: 2 % and 256 MiB are left for the allocator's fragmentation."""
    return max(0, int(total * 0.98) - 256 * 1024**2)


_host_budget: Optional[int] = None  # engine.host_ram_budget_gb in bytes (set_host_ram_budget); None: the machine's


def set_host_ram_budget(gb: float) -> Optional[int]:
    """``engine.host_ram_budget_gb``: plan and evict as on a machine with this much RAM. The cards people own sit
    in machines of 32-64 GB, where a plan that parks 40 GB of weights in pinned memory is killed by the OS; a
    larger machine can run as one of those. Nothing caps allocations (no cgroup): the plan and the pool count
    against the budget, less what this process holds now. Returns the budget in bytes; None without one."""
    global _host_budget
    _host_budget = int(gb * GB) if gb else None
    return _host_budget


def host_available_bytes(own_pinned: int = 0) -> int:
    """Host RAM for offloaded weights: what the OS has available less ``host_reserve_bytes``, plus pinned copies
    this process already holds; under ``engine.host_ram_budget_gb`` at most what the budget leaves beside this
    process's resident memory (its pinned copies included, so they are added back the same way)."""
    import psutil

    memory = psutil.virtual_memory()
    available = max(0, memory.available - host_reserve_bytes(memory.total)) + own_pinned
    if _host_budget is None:
        return available
    resident = psutil.Process().memory_info().rss
    return min(available, max(0, _host_budget - host_reserve_bytes(_host_budget) - resident) + own_pinned)


def host_reserve_bytes(total: Optional[int] = None) -> int:
    """Host RAM no plan and no load counts on. Pinned copies cannot be swapped out, and loading one stages it in
    ordinary memory first; FLUX.2-dev's 16 GiB plan filled all but ~3 GiB of what was free, and its next request's
    load was killed by the OS (docs/MEASURED.md "Pinned host copies and the OS's memory killer"). A tenth of the
    RAM, at least 4 GiB: the OS, this process's own heap, the UI and whatever else the machine runs. ``total``: the
    RAM's (read if None)."""
    if total is None:
        import psutil

        total = psutil.virtual_memory().total
    return max(HOST_RESERVE_MIN, int(total * HOST_RESERVE_SHARE))


def _oom_error(message: str) -> Exception:
    import torch

    return torch.cuda.OutOfMemoryError(message)
