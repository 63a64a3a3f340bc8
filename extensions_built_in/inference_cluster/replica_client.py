"""The ingress's way to the replicas: calls through Serve's handle, addressed or routed, and the book of which
replica runs which request.

Every call carries the ``route`` the router reads (router.py). Calls that must reach every replica (``/health``,
``/queue``, ``/outputs``, ``/unload``) go to each live replica by id, from the router's directory; a replica that
does not answer within ``EACH_TIMEOUT_S`` is reported as such instead of holding up the answer.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Optional

from extensions_built_in.inference_cluster import directory

EACH_TIMEOUT_S = 10.0
BOOK_SIZE = 10000  # request ids remembered (a request's frames, cancel and files find their replica by it)


class RequestBook:
    """request id -> replica id, newest last; the oldest are forgotten (their calls then ask every replica)."""

    def __init__(self, size: int = BOOK_SIZE):
        self.size, self._where = size, OrderedDict()

    def remember(self, request_id: Optional[str], replica: Optional[str]) -> None:
        if request_id and replica:
            self._where[request_id] = replica
            self._where.move_to_end(request_id)
            while len(self._where) > self.size:
                self._where.popitem(last=False)

    def replica_of(self, request_id: str) -> Optional[str]:
        return self._where.get(request_id)


class ReplicaClient:
    def __init__(self, handle):
        self.handle = handle
        self.streaming = handle.options(stream=True)
        self.book = RequestBook()

    def live(self) -> tuple:
        return directory.DIRECTORY.ids()

    def targets(self, request_id: Optional[str]) -> list:
        """Replica ids to try for a request, the one that ran it first; every live one when it is unknown."""
        known = self.book.replica_of(request_id) if request_id else None
        return ([known] if known else []) + [r for r in self.live() if r != known]

    async def call(self, request: dict, route: dict, assets: Optional[dict] = None) -> dict:
        return await self.handle.call.remote(request, route=route, assets=assets)

    def stream(self, request: dict, route: dict, assets: Optional[dict] = None):
        return self.streaming.stream.remote(request, route=route, assets=assets)

    async def each(self, method: str, *args, timeout: float = EACH_TIMEOUT_S) -> list[tuple[str, object]]:
        """``(replica id, answer or the exception)`` from every live replica, asked at once."""
        ids = self.live()
        method_of = getattr(self.handle, method)
        calls = [asyncio.wait_for(_awaitable(method_of.remote(*args, route={"replica": rid})), timeout) for rid in ids]
        answers = await asyncio.gather(*calls, return_exceptions=True)
        return list(zip(ids, answers))

    async def wait_for_replicas(self, count: int, timeout: float) -> None:
        """Until the router knows ``count`` replicas (a first call makes Serve build the router)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await self.handle.describe.remote(route={})
        while len(self.live()) < count:
            if loop.time() > deadline:
                raise TimeoutError(f"the router knows {len(self.live())} of {count} replicas after {timeout:g} s")
            await asyncio.sleep(0.1)


async def _awaitable(response):
    return await response
