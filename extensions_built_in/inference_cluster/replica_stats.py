"""What a replica tells the router about itself (Serve's ``record_routing_stats``), from its engine's ``/health``
and ``/queue`` and from the requests it relayed.

The router needs three things per replica: the model it will hold once its line has run (``tail``: the last
waiting request's model, else the running one's, else the resident holder's), how long its line is, and how long
a request and a model swap take there. The engine knows the first two only as arch and path (``/queue``) or as
a full identity (``/health``); the replica adds the routing key of each request it relayed, by request id.
"""

from __future__ import annotations

import statistics
import time
from collections import OrderedDict, deque
from typing import Optional

from extensions_built_in.inference_cluster.model_key import resident_key

SWAP_MIN_S = 0.05  # a load_s under this was the resident holder reused, not a swap
REMEMBERED_REQUESTS = 4096


class RequestKeys:
    """The requests this replica relayed: request id -> routing key, and whether their call has ended (bounded:
    oldest out first).

    An engine still lists a request as running for a moment after its stream's ``end`` (it frees memory first).
    The router counts a request as ended when its call ends; so the stats leave out the rows whose call has
    ended, and router and stats agree on what is still in line."""

    def __init__(self, limit: int = REMEMBERED_REQUESTS):
        self.limit, self._keys, self._ended = limit, OrderedDict(), OrderedDict()

    def remember(self, request_id: Optional[str], key: Optional[str]) -> None:
        if request_id and key:
            _bounded_put(self._keys, request_id, key, self.limit)

    def ended(self, request_id: Optional[str]) -> None:
        if request_id:
            _bounded_put(self._ended, request_id, True, self.limit)

    def has_ended(self, request_id: Optional[str]) -> bool:
        return bool(request_id) and request_id in self._ended

    def get(self, request_id: Optional[str]) -> Optional[str]:
        return self._keys.get(request_id) if request_id else None


def _bounded_put(store: OrderedDict, key, value, limit: int) -> None:
    store[key] = value
    while len(store) > limit:
        store.popitem(last=False)


class RecentTimings:
    """Medians of the latest requests' run time (sampling + saving) and model-load time, from their ``timings``."""

    def __init__(self, window: int = 16):
        self.run_s, self.swap_s = deque(maxlen=window), deque(maxlen=window)

    def add(self, timings: Optional[dict]) -> None:
        if not isinstance(timings, dict) or not timings.get("total_s"):
            return
        load = float(timings.get("load_s") or 0.0)
        self.run_s.append(max(0.0, float(timings["total_s"]) - load))  # total_s counts from leaving the line
        if load >= SWAP_MIN_S:
            self.swap_s.append(load)

    def medians(self) -> dict:
        return {
            "run_s": statistics.median(self.run_s) if self.run_s else None,
            "swap_s": statistics.median(self.swap_s) if self.swap_s else None,
        }


def routing_stats(replica_id: str, health: dict, queue: dict, keys: RequestKeys, timings: RecentTimings) -> dict:
    """The dict the router reads as ``RunningReplica.routing_stats``; ``at`` is when the engine was asked."""
    resident = resident_key(health.get("active"))
    running, pending = queue.get("running"), queue.get("pending") or []
    tail = resident
    for row in ([running] if running else []) + list(pending):
        tail = keys.get(row.get("request_id")) or tail
    return {
        "ok": True,
        "at": time.time(),
        "replica": replica_id,
        "resident": resident,
        "tail": tail,
        "queue": sum(1 for row in pending if not keys.has_ended(row.get("request_id"))),
        "busy": bool(running) and not keys.has_ended(running.get("request_id")),
        **timings.medians(),
    }


def down_stats(replica_id: str, reason: str) -> dict:
    """Stats of a replica whose engine does not answer: the router sends it nothing while others can serve."""
    return {"ok": False, "at": time.time(), "replica": replica_id, "reason": reason}
