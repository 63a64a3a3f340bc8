"""The garbage collector's share of a resident engine's time, and the frozen heap that keeps that share small.

A loaded and compiled model leaves half a million Python objects or more (imports, modules, dynamo's graphs and
guards: 600 000 for the small Flux on CPU, where one full collection took 0.3-0.56 s). CPython's oldest-generation
pass walks all of them while holding the GIL, whichever thread triggered it, and reclaims none: the steps, the
saver's PNG and the HTTP thread all wait. Serving engines freeze that heap once warm (SGLang's ``/freeze_gc``,
vLLM after its warm-up, Ray Serve after a replica starts): ``gc.freeze`` moves every live object into a
permanent generation that collections skip. Objects made later are collected as usual, and reference counting
still frees frozen ones; only cycles among frozen objects wait for ``thaw``, which the pool calls before it
collects what an eviction left (toolkit/models/components/pool.py ``free_memory``).
"""

from __future__ import annotations

import gc
import time
from typing import Optional

# No lock: collections never overlap, so only the collector writes these, and a lock taken by a reader could be
# held when an allocation inside it starts a collection on that same thread, whose callback would then wait on it.
_seconds = [0.0, 0.0, 0.0]  # per generation, since the process started (``watch_collector``)
_collections = [0, 0, 0]
_started: Optional[float] = None


def _on_collection(phase: str, info: dict) -> None:
    """``gc.callbacks``: collections never overlap (the GIL and the collector's own flag), so one start mark."""
    global _started
    if phase == "start":
        _started = time.perf_counter()
    elif _started is not None:
        generation = info.get("generation", 2)
        _seconds[generation] += time.perf_counter() - _started
        _collections[generation] += 1
        _started = None


def watch_collector() -> None:
    if _on_collection not in gc.callbacks:
        gc.callbacks.append(_on_collection)


def collector_seconds() -> float:
    """Seconds every collection so far held the process (0 until ``watch_collector``)."""
    return sum(_seconds)


def collector_state() -> dict:
    """``/health``'s ``gc``: collections and seconds per generation, and how many objects are frozen."""
    seconds, collections = list(_seconds), list(_collections)
    return {"collections": collections, "seconds": [round(s, 4) for s in seconds], "frozen": gc.get_freeze_count()}


def freeze() -> float:
    """Collect what is garbage now, frozen objects included (a replaced model's, frozen while it served), then
    freeze the rest; returns the seconds it took (one full collection)."""
    t0 = time.perf_counter()
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return time.perf_counter() - t0


def thaw() -> None:
    """Frozen objects back into the oldest generation: the next ``gc.collect()`` can reclaim cycles among them."""
    gc.unfreeze()


class HeapSettler:
    """Freezes the heap when what is resident changed (a load, an eviction, a compile) and the engine is idle:
    the full collection that precedes the freeze then delays no request's steps or file."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._frozen_at = None
        self.freezes = 0
        self.last_seconds: Optional[float] = None

    def settle(self, resident_state) -> bool:
        """Freezes when ``resident_state`` differs from the last freeze's, or a ``thaw`` undid it."""
        if not self.enabled or (resident_state == self._frozen_at and gc.get_freeze_count()):
            return False
        self.last_seconds = round(freeze(), 4)
        self.freezes += 1
        self._frozen_at = resident_state
        return True
