"""The residency rule: which replica a generate request for a model should go to. Pure, so it is tested alone.

A replica that will hold the model when the request's turn comes (its ``tail``) runs it with no load at all;
any other replica first swaps the model in. So the request goes to the holder with the shortest line, unless
that line is long enough that waiting in it takes longer than swapping elsewhere:

    holder.load x request_s  >  swap_s + other.load x request_s   ->  the other replica

``load`` counts the requests waiting or running on a replica, ``request_s`` is a typical request's run time and
``swap_s`` a typical model load, both medians of what the replicas measured (config defaults until they have).
No holder at all: the replica with the shortest line; among equals, the one whose model was asked for longest
ago (an empty replica first), so a swap evicts what is least likely to be wanted again.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable, Optional


@dataclass(frozen=True)
class ReplicaView:
    id: str
    load: int  # requests waiting or running there, as far as the router knows
    tail: Optional[str]  # the model key it will hold once its line has run (None: nothing)
    ok: bool = True  # its engine answered the latest stats call


@dataclass(frozen=True)
class Timing:
    request_s: float
    swap_s: float


def choose(key: Optional[str], views: list[ReplicaView], timing: Timing, last_used: dict) -> ReplicaView:
    candidates = [v for v in views if v.ok] or views
    holders = [v for v in candidates if key is not None and v.tail == key]
    others = [v for v in candidates if v not in holders]
    fallback = min(others, key=lambda v: (v.load, _recency(v.tail, last_used))) if others else None
    if not holders:
        return fallback
    holder = min(holders, key=lambda v: v.load)
    if fallback is not None and swap_is_faster(holder, fallback, timing):
        return fallback
    return holder


def swap_is_faster(holder: ReplicaView, other: ReplicaView, timing: Timing) -> bool:
    return holder.load * timing.request_s > timing.swap_s + other.load * timing.request_s


def typical_timing(measured: Iterable[dict], defaults: Timing) -> Timing:
    """Medians of the replicas' own ``run_s`` and ``swap_s``; the configured values where none has measured."""
    stats = list(measured)
    runs = [s["run_s"] for s in stats if s.get("run_s") is not None]
    swaps = [s["swap_s"] for s in stats if s.get("swap_s") is not None]
    return Timing(
        statistics.median(runs) if runs else defaults.request_s,
        statistics.median(swaps) if swaps else defaults.swap_s,
    )


@dataclass
class Send:
    at: float
    key: Optional[str]
    detached: bool
    done: Optional[float] = None


class SendLog:
    """What the router sent each replica that the replica's latest stats may not reflect yet, so its view of a
    line is right between two stats calls (a second or more apart, while requests take a fraction of one on
    small models): requests sent since count as waiting until done, requests the stats counted and which ended
    since do not. A detached request's call ends at once while it runs on: it counts until stats newer than its
    send. A send is forgotten once stats taken after its end (or, detached, after it) have come."""

    FORGET_S = 600.0

    def __init__(self):
        self._sends: dict = {}  # replica id -> {call id: Send}

    def sent(self, replica: str, call_id: str, key: Optional[str], detached: bool, now: float) -> None:
        self._sends.setdefault(replica, {})[call_id] = Send(now, key, detached)

    def done(self, replica: str, call_id: str, now: float) -> None:
        send = self._sends.get(replica, {}).get(call_id)
        if send is not None and not send.detached:
            send.done = now

    def view(self, replica: str, stats: dict, now: float) -> ReplicaView:
        at = float(stats.get("at") or 0.0)
        sends = self._forget(replica, at, now)
        since = [s for s in sends if s.at > at]
        ended_since = sum(1 for s in sends if s.at <= at and s.done is not None and s.done > at)
        load = max(0, int(stats.get("queue") or 0) + int(bool(stats.get("busy"))) - ended_since)
        load += sum(1 for s in since if s.done is None)
        # The latest send the stats may not know the end of decides the tail: a replica learns a ``?wait=1``
        # request's id only at its end, so until then its stats name the model before it.
        tail = sends[-1].key if sends else stats.get("tail")
        return ReplicaView(replica, load, tail, bool(stats.get("ok", True)))

    def _forget(self, replica: str, at: float, now: float) -> list:
        """Drop what the stats already reflect, and anything older than ``FORGET_S``; the rest, oldest first."""
        sends = self._sends.get(replica, {})
        for call_id, s in list(sends.items()):
            reflected = (s.done is not None and s.done <= at) or (s.detached and s.at <= at)
            if reflected or now - s.at > self.FORGET_S:
                del sends[call_id]
        return sorted(sends.values(), key=lambda s: s.at)


def _recency(tail: Optional[str], last_used: dict) -> float:
    return last_used.get(tail, -math.inf) if tail is not None else -math.inf
