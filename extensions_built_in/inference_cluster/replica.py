"""A Serve replica: one engine job (engine_process.py) and the calls that reach it.

The ingress hands over a client's request as it came (method, path, query, headers, body); the replica adds its
engine's token, sends it over loopback and hands back the engine's answer unchanged. Streams are the engine's
own bytes, cut only at frame boundaries (frame_cutter.py), so a stream through the cluster is the engine's
stream. When its client leaves, the ingress cancels the call and Serve cancels this generator, which closes the
connection to the engine, which cancels the generation as it does for any client that leaves.

Every method takes the ``route`` keyword the router reads (router.py); the replica itself only learns from it
which model key each request id has, for its routing stats (replica_stats.py).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import AsyncIterator, Optional

import httpx
import ray
from ray import serve

from extensions_built_in.inference_cluster.engine_process import EngineProcess, engine_job_config
from extensions_built_in.inference_cluster.frame_cutter import FrameCutter
from extensions_built_in.inference_cluster.replica_stats import RecentTimings, RequestKeys, down_stats, routing_stats
from extensions_built_in.inference_engine.protocol import MEDIA_TYPE, read_frames

STREAM_READ_TIMEOUT_S = 30.0  # an engine sends bytes at least every 2 s while a request lives (heartbeats)
CONTROL_TIMEOUT_S = 10.0
DROPPED_HEADERS = {"host", "authorization", "content-length", "connection", "transfer-encoding", "keep-alive"}
CTRL_FIELDS = ("ctrl_img", "ctrl_img_1", "ctrl_img_2", "ctrl_img_3")


class EngineGone(RuntimeError):
    """The engine stopped answering in the middle of a call (it died, or its connection broke)."""


class EngineReplica:
    async def __init__(self, settings: dict):
        context = serve.get_replica_context()
        self.id = context.replica_id.unique_id
        rank = getattr(context.rank, "rank", None)
        self.folder = os.path.join(settings["job_folder"], f"replica-{self.id if rank is None else rank}")
        name = f"{settings['name']}_replica{'' if rank is None else rank}"
        self.engine = EngineProcess(
            self.folder, engine_job_config(name, self.folder, settings["engine"], settings["device"])
        )
        self.stopping = False
        self.engine.start()
        info = await self.engine.wait_ready(float(settings.get("start_timeout_s", 600)))
        self.http = httpx.AsyncClient(
            base_url=info["url"],
            headers={"Authorization": f"Bearer {info['token']}"},
            timeout=httpx.Timeout(CONTROL_TIMEOUT_S, read=STREAM_READ_TIMEOUT_S),
        )
        self.keys, self.timings = RequestKeys(), RecentTimings()

    # ------------------------------------------------------------------ relaying
    async def call(self, request: dict, route: dict, assets: Optional[dict] = None) -> dict:
        """A whole answer: ``{status, headers, body, replica}``."""
        body, refused = await self._attach_assets(request["body"], assets)
        if refused is not None:
            return refused
        try:
            response = await self.http.request(
                request["method"], request["path"], params=request["query"], headers=request["headers"], content=body
            )
        except httpx.HTTPError as e:
            raise EngineGone(f"the engine of replica {self.id} did not answer: {type(e).__name__}: {e}") from None
        self._learn_from_json(request["path"], route, response)
        return self._answer(response, response.content)

    async def stream(self, request: dict, route: dict, assets: Optional[dict] = None) -> AsyncIterator:
        """First ``{status, headers, replica}`` (a frame stream's first frames in it, as ``first``), then the body as
        it comes (frame streams in whole frames)."""
        body, refused = await self._attach_assets(request["body"], assets)
        if refused is not None:
            yield {k: v for k, v in refused.items() if k != "body"}
            yield refused["body"]
            return
        http_request = self.http.build_request(
            request["method"], request["path"], params=request["query"], headers=request["headers"], content=body
        )
        try:
            response = await self.http.send(http_request, stream=True)
        except httpx.HTTPError as e:
            raise EngineGone(f"the engine of replica {self.id} did not answer: {type(e).__name__}: {e}") from None
        request_id = response.headers.get("x-request-id")
        try:
            self.keys.remember(request_id, route.get("model"))
            head = self._answer(response)
            if _is_json(response):  # small and whole: ?wait=1's and ?detach=1's answer names the request
                yield head
                body = await response.aread()
                self._learn_from_json(request["path"], route, response)
                yield body
                return
            chunks, gone = self._relay(response), None
            if _is_framed(response):
                # The engine sends its ``start`` frame at once: it rides with the head, one Ray item fewer before
                # the client's first byte (on 2 cores each item is milliseconds). An engine that dies before it
                # still gets the head out first, so the client's stream ends in ``error`` like any other break.
                try:
                    head["first"] = await anext(chunks, b"")
                except EngineGone as e:
                    gone = e
            yield head
            if gone is not None:
                raise gone
            async for chunk in chunks:
                yield chunk
        finally:
            if not route.get("detached"):
                self.keys.ended(request_id)
            await response.aclose()

    async def _relay(self, response: httpx.Response) -> AsyncIterator[bytes]:
        framed = _is_framed(response)
        cutter = FrameCutter() if framed else None
        try:
            async for chunk in response.aiter_raw():
                out = cutter.feed(chunk) if cutter else chunk
                if out:
                    if framed and b'"type":"result"' in out:
                        self._learn_from_frames(out)
                    yield out
        except httpx.HTTPError as e:
            raise EngineGone(f"the engine of replica {self.id} broke off the stream: {type(e).__name__}: {e}") from None
        if cutter is not None and cutter.pending:
            raise EngineGone(f"the engine of replica {self.id} ended its stream inside a frame")

    def _answer(self, response: httpx.Response, body: Optional[bytes] = None) -> dict:
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in DROPPED_HEADERS]
        answer = {"status": response.status_code, "headers": headers, "replica": self.id}
        return answer if body is None else answer | {"body": body}

    async def _attach_assets(self, body: bytes, assets: Optional[dict]) -> tuple[bytes, Optional[dict]]:
        """Control images the ingress holds, uploaded to this engine and named by the id it gives them. A refused
        upload is the answer (its status and detail, as the engine gave them)."""
        if not assets:
            return body, None
        parsed = json.loads(body)
        for field, (filename, data) in assets.items():
            response = await self.http.post("/assets", files={"file": (filename, data)})
            if response.status_code != 201:
                return body, self._answer(response, response.content)
            parsed["sample"][field] = response.json()["id"]
        return json.dumps(parsed).encode(), None

    def _learn_from_json(self, path: str, route: dict, response: httpx.Response) -> None:
        if path != "/generate" or not _is_json(response):
            return
        try:
            answer = response.json()
        except ValueError:
            return
        self.keys.remember(answer.get("request_id"), route.get("model"))
        if not route.get("detached"):
            self.keys.ended(answer.get("request_id"))
        self.timings.add(answer.get("timings"))

    def _learn_from_frames(self, chunk: bytes) -> None:
        for frame in read_frames(chunk):
            if frame.type == "result":
                self.timings.add(frame.header.get("timings"))

    # ------------------------------------------------------------------ the cluster's own calls
    async def describe(self, route: dict) -> dict:
        """This replica for the cluster's ``/health``: its engine's health plus where it runs."""
        response = await self.http.get("/health")
        return response.json() | {
            "replica": self.id,
            "folder": self.folder,
            "engine_pid": self.engine.pid,
            "worker_pid": os.getpid(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "measured": self.timings.medians(),
        }

    async def stop_engine(self, route: dict) -> dict:
        """The cluster is stopping: the engine ends its streams with its own ``error`` frame, then exits."""
        self.stopping = True
        await asyncio.to_thread(self.engine.stop)
        return {"replica": self.id, "stopped": True}

    # ------------------------------------------------------------------ Serve's hooks
    async def check_health(self) -> None:
        """Raising makes Serve replace this replica (after a few failures in a row)."""
        if self.stopping:
            return
        if not self.engine.alive():
            raise EngineGone(f"the engine of replica {self.id} exited ({self.engine.proc.returncode})")
        response = await self.http.get("/health")
        response.raise_for_status()

    async def record_routing_stats(self) -> dict:
        try:
            health, queue = await asyncio.gather(self.http.get("/health"), self.http.get("/queue"))
            return routing_stats(self.id, health.json(), queue.json(), self.keys, self.timings)
        except (httpx.HTTPError, ValueError) as e:
            return down_stats(self.id, f"{type(e).__name__}: {e}")

    def __del__(self):
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.stop()


def _is_framed(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith(MEDIA_TYPE)


def _is_json(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("application/json")
