"""Ray Serve's side of routing: the request router every handle to the engine replicas uses.

Each call carries a ``route`` keyword (``ReplicaClient`` in replica_client.py sets it):

* ``{"replica": id}``: a call that belongs to one replica (cancel, a request's frames, an output file, one
  replica's health) goes only there; if that replica is gone, to any (which answers 404 for what it never had);
* ``{"generate": True, "model": key, "detached": bool}``: a generation goes where ``placement.choose`` says
  (``routing: residency``) or to a random replica (``routing: random``, the benchmark's baseline);
* anything else (``/models``, ``/loras``, …) to whichever replica Serve finds least busy.

Serve builds this class from its import path inside the process that holds the handle (the cluster job) and
pickles its module by value, so state shared with the ingress goes through ``directory`` (see there).
"""

from __future__ import annotations

import random
import time
from typing import Optional

from ray.serve.request_router import PendingRequest, RequestRouter, RunningReplica

from extensions_built_in.inference_cluster import directory, placement

DEFAULT_REQUEST_S = 10.0
DEFAULT_SWAP_S = 30.0


class ResidencyRouter(RequestRouter):
    def initialize_state(self, policy: str = "residency", request_s=DEFAULT_REQUEST_S, swap_s=DEFAULT_SWAP_S, **_):
        if policy not in ("residency", "random"):
            raise ValueError(f"cluster.routing is 'residency' or 'random', not {policy!r}")
        self.policy = policy
        self.defaults = placement.Timing(float(request_s), float(swap_s))
        self.sends = placement.SendLog()
        self.last_used: dict = {}  # model key -> when a request for it was last routed

    def update_replicas(self, replicas: list[RunningReplica]):
        super().update_replicas(replicas)
        directory.DIRECTORY.publish(r.replica_id.unique_id for r in replicas)

    async def choose_replicas(
        self, candidate_replicas: list[RunningReplica], pending_request: Optional[PendingRequest] = None
    ) -> list[list[RunningReplica]]:
        if not candidate_replicas:
            return []
        route = route_of(pending_request)
        if route.get("replica"):
            addressed = [r for r in candidate_replicas if r.replica_id.unique_id == route["replica"]]
            return [addressed or candidate_replicas]
        if not route.get("generate"):
            return [candidate_replicas]
        if self.policy == "random":
            return [[random.choice(candidate_replicas)]]
        return [[self._for_model(route.get("model"), candidate_replicas)]]

    def _for_model(self, key: Optional[str], replicas: list[RunningReplica]) -> RunningReplica:
        now = time.time()
        views = [self.sends.view(r.replica_id.unique_id, r.routing_stats or {}, now) for r in replicas]
        timing = placement.typical_timing((r.routing_stats or {} for r in replicas), self.defaults)
        chosen = placement.choose(key, views, timing, self.last_used)
        return next(r for r in replicas if r.replica_id.unique_id == chosen.id)

    def on_request_routed(self, pending_request: PendingRequest, replica_id, result) -> None:
        route = route_of(pending_request)
        if not route.get("generate"):
            return
        now = time.time()
        call_id = pending_request.metadata.internal_request_id
        self.sends.sent(replica_id.unique_id, call_id, route.get("model"), bool(route.get("detached")), now)
        if route.get("model"):
            self.last_used[route["model"]] = now

    def on_request_completed(self, replica_id, internal_request_id: str) -> None:
        self.sends.done(replica_id.unique_id, internal_request_id, time.time())


def route_of(pending_request: Optional[PendingRequest]) -> dict:
    if pending_request is None:
        return {}
    return pending_request.kwargs.get("route") or {}
