"""The live replicas as the router sees them, for the ingress in the same process.

Serve gives the replica list to the request router (``update_replicas``) and to nothing public, but the ingress
needs it to ask every replica (``/health``, ``/queue``, ``/outputs``, ``/unload``). The router writes it here.
It lives in its own module because Serve pickles the router's module by value (a copy of its globals would be
written to, not this one) while other modules it uses are imported as they are.
"""

from __future__ import annotations

import threading
import time


class ReplicaDirectory:
    """Thread-safe: the router's loop thread writes, the ingress's server thread reads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._ids: tuple = ()
        self.updated = 0.0

    def publish(self, replica_ids) -> None:
        with self._lock:
            self._ids = tuple(sorted(replica_ids))
            self.updated = time.time()

    def ids(self) -> tuple:
        with self._lock:
            return self._ids


DIRECTORY = ReplicaDirectory()
