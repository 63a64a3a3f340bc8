"""The cluster's HTTP API: the engine's own routes (docs/PROTOCOL.md), each answered by the right replica.

Clients cannot tell the cluster from an engine: same routes, same Host and token rules (the engine's
``install_guards`` and ``BodyLimit``), same frames. What each route does here:

* a generation (``/generate``, ``/v1/images/*``) goes where the router places its model (router.py), and its
  stream is relayed as the replica sends it; the ingress notes which replica runs which request id;
* what belongs to one request (its frames, cancel, its output files) goes to the replica that ran it, else to
  each replica in turn until one knows it;
* ``/health``, ``/queue``, ``/outputs`` and ``/unload`` ask every replica and merge (merge.py);
* ``POST /assets`` is kept here, in the cluster's own assets folder, and a generation naming one of these ids
  carries the image to whichever replica runs it, which uploads it to its engine (replica.py): an upload works
  on any replica, including one started after it;
* the rest (``/models``, ``/loras``, ``/checkpoints``, ``/openapi.json``, other ``/v1`` reads) any replica.

A replica that dies mid-stream ends its client's stream with an ``error`` frame (code ``internal``) and ``end``
(frame_cutter.py); Serve replaces the replica. No torch here.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import AsyncIterator, Optional

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from extensions_built_in.inference_cluster import merge
from extensions_built_in.inference_cluster.frame_cutter import closing_frames, last_frame
from extensions_built_in.inference_cluster.metrics import IngressMetrics, outcome_of_frames, outcome_of_json
from extensions_built_in.inference_cluster.model_key import model_key
from extensions_built_in.inference_cluster.replica_client import ReplicaClient
from extensions_built_in.inference_engine import openai_api
from extensions_built_in.inference_engine.assets import MAX_UPLOAD_BYTES, AssetError, AssetStore, is_asset_id
from extensions_built_in.inference_engine.http_common import bad_request, has_token
from extensions_built_in.inference_engine.model_aliases import ModelAliases
from extensions_built_in.inference_engine.openai_params import OpenAIError
from extensions_built_in.inference_engine.outputs_api import receive_asset
from extensions_built_in.inference_engine.protocol import MEDIA_TYPE
from extensions_built_in.inference_engine.request_checks import BadRequest
from extensions_built_in.inference_engine.server import MAX_JSON_BODY, BodyLimit, install_guards

UPLOAD_PATHS = ("/assets", "/v1/images/edits")
MAX_FORWARDED_BODY = MAX_UPLOAD_BYTES + 1024 * 1024  # the engine caps an edit's files at 32 MB; the form adds a little
FORWARDED_HEADERS = ("content-type", "accept", "x-aitk-public-base", "x-aitk-engine-job")
# Every sample field that names an uploaded file: control images, and a start image, its mask or a start video.
CTRL_FIELDS = ("ctrl_img", "ctrl_img_1", "ctrl_img_2", "ctrl_img_3", "init_image", "mask", "init_video")


class Cluster:
    """What the routes share: the replicas, the cluster's uploads, the engine aliases (for OpenAI's ``model``)."""

    def __init__(self, replicas: ReplicaClient, assets: AssetStore, aliases: ModelAliases, expected: int, routing: str):
        self.replicas, self.assets, self.aliases = replicas, assets, aliases
        self.expected, self.routing = expected, routing
        self.metrics = IngressMetrics()  # GET /metrics


def create_ingress_app(cluster: Cluster, token: str) -> FastAPI:
    # The schema is the engine's (GET /openapi.json is relayed): this app's own routes are only relays.
    app = FastAPI(title="AI Toolkit inference cluster", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(BodyLimit, limit=MAX_JSON_BODY, exempt=UPLOAD_PATHS)
    app.add_middleware(BodyLimit, limit=MAX_FORWARDED_BODY)
    install_guards(app, token)
    replicas = cluster.replicas

    @app.get("/health")
    async def health(request: Request):
        """As the engine's: ``{"ok"}`` (any replica up) to anyone, every replica's detail with the token."""
        merged = merge.health(await replicas.each("describe"), cluster.expected, cluster.routing)
        return merged if has_token(request) else {"ok": merged["ok"]}

    @app.get("/metrics")
    async def metrics(request: Request):
        answers = await replicas.each("call", forwarded(request, b""))
        texts = [(rid, a["body"].decode() if _is_ok(a) else None) for rid, a in answers]
        body, content_type = cluster.metrics.exposition(texts, cluster.expected)
        return Response(body, media_type=content_type)

    @app.post("/generate")
    async def generate(request: Request, wait: bool = Query(False), detach: bool = Query(False)):
        received = time.monotonic()  # time to first byte through the ingress counts from here (metrics.py)
        body = await request.body()
        parsed = _json(body)
        model = parsed.get("model") if isinstance(parsed, dict) else None
        route = {"generate": True, "model": model_key(model), "detached": detach and not wait}
        try:
            assets = await held_assets(cluster.assets, parsed)
        except BadRequest as e:
            return bad_request(e.loc, str(e))
        return await relay(cluster, request, body, route, assets=assets, received=received)

    @app.post("/grid")
    async def grid(request: Request, detach: bool = Query(False)):
        """A compare grid runs on one replica, chosen as a generation of its base model is: its cells then share
        that replica's resident model (LoRAs swapped on it, cells batched on it)."""
        body = await request.body()
        parsed = _json(body)
        model = parsed.get("model") if isinstance(parsed, dict) else None
        try:
            assets = await held_assets(cluster.assets, parsed)
        except BadRequest as e:
            return bad_request(e.loc, str(e))
        return await relay(
            cluster, request, body, {"generate": True, "model": model_key(model), "detached": detach}, assets=assets
        )

    app.add_api_route("/grid/jobs", relay_read(cluster), methods=["GET"])

    @app.get("/grid/{grid_id}/frames")
    async def grid_frames(grid_id: str, request: Request):
        return await relay_to_owner(cluster, request, grid_id)

    @app.post("/grid/{grid_id}/cancel")
    async def grid_cancel(grid_id: str, request: Request):
        return await relay_to_owner(cluster, request, grid_id)

    @app.get("/requests/{request_id}/frames")
    async def request_frames(request_id: str, request: Request):
        return await relay_to_owner(cluster, request, request_id)

    @app.post("/cancel/{request_id}")
    async def cancel(request_id: str, request: Request):
        return await relay_to_owner(cluster, request, request_id)

    @app.get("/queue")
    async def queue(request: Request):
        answers = await replicas.each("call", forwarded(request, b""))
        return merge.queue([(rid, json.loads(a["body"])) for rid, a in answers if _is_ok(a)])

    @app.post("/assets")
    async def upload_asset(request: Request):
        return await receive_asset(cluster.assets, request)

    @app.get("/outputs")
    async def outputs(request: Request, limit: int = Query(100, ge=1, le=10000)):
        answers = await replicas.each("call", forwarded(request, b""))
        return merge.outputs([json.loads(a["body"]) for _, a in answers if _is_ok(a)], limit)

    @app.api_route("/outputs/{name}", methods=["GET", "DELETE"])
    async def output_file(name: str, request: Request):
        return await relay_to_owner(cluster, request, name[:32])

    @app.post("/unload")
    async def unload(request: Request):
        answers = await replicas.each("call", forwarded(request, await request.body()))
        status, body = merge.unload(
            [(rid, a["status"], json.loads(a["body"])) for rid, a in answers if not isinstance(a, BaseException)]
        )
        return JSONResponse(body, status_code=status)

    @app.post("/v1/images/generations")
    async def openai_generations(request: Request):
        body = await request.body()
        parsed = _json(body)
        route = {"generate": True, "model": openai_model_key(cluster.aliases, parsed)}
        return await relay(cluster, request, body, route)

    @app.post("/v1/images/edits")
    async def openai_edits(request: Request):
        # The model is a form field: the form is left to the engine, and the edit goes to the least busy replica.
        return await relay(cluster, request, await request.body(), {"generate": True, "model": None})

    @app.api_route("/v1/{rest:path}", methods=["GET", "POST", "DELETE"])
    async def openai_other(rest: str, request: Request):
        return await relay(cluster, request, await request.body(), {})

    for path in ("/models", "/loras", "/checkpoints", "/upscalers", "/openapi.json"):
        app.add_api_route(path, relay_read(cluster), methods=["GET"])
    return app


# ---------------------------------------------------------------------------------------------- relaying
def forwarded(request: Request, body: bytes) -> dict:
    """The client's request as a replica sends it on: the engine's token replaces the cluster's there. Result
    URLs (OpenAI's ``response_format: url``) point at the ingress, unless a proxy in front said where it is."""
    headers = {k: v for k, v in request.headers.items() if k in FORWARDED_HEADERS}
    headers.setdefault("x-aitk-public-base", str(request.base_url).rstrip("/"))
    return {
        "method": request.method,
        "path": request.url.path,
        "query": list(request.query_params.multi_items()),
        "headers": headers,
        "body": body,
    }


def relay_read(cluster: Cluster):
    async def read(request: Request):
        return await relay(cluster, request, b"", {})

    return read


async def relay_to_owner(cluster: Cluster, request: Request, request_id: str) -> Response:
    """A call about one request: its replica first; a 404 there (or an unknown id) asks the next replica."""
    targets = cluster.replicas.targets(request_id if is_asset_id(request_id) else None) or [None]
    body = await request.body()
    for i, replica in enumerate(targets):
        response = await relay(cluster, request, body, {"replica": replica}, last=i == len(targets) - 1)
        if response.status_code != 404:
            break
    return response


async def relay(
    cluster: Cluster, request: Request, body: bytes, route: dict, assets=None, last=True, received=None
) -> Response:
    """Open the replica's stream, answer with its status and headers, and relay its body as it comes.
    ``received``: when a ``POST /generate`` arrived; its outcome and first byte go to the metrics."""
    stream = cluster.replicas.stream(forwarded(request, body), route, assets)
    try:
        head = await stream.__anext__()
    except Exception as e:  # the replica died or its engine does not answer: nothing was sent yet
        stream.cancel()
        return unavailable(request.url.path, e)
    replica = head["replica"]
    request_id = dict(head["headers"]).get("x-request-id")
    cluster.replicas.book.remember(request_id, replica)
    headers = [(k, v) for k, v in head["headers"] if k.lower() != "content-type"] + [("x-aitk-replica", replica)]
    media_type = dict((k.lower(), v) for k, v in head["headers"]).get("content-type")
    if head["status"] == 404 and not last:
        stream.cancel()
        return Response(status_code=404)
    if media_type and media_type.startswith("application/json"):
        return await whole_json(cluster, request, stream, head, headers, metered=received is not None)
    watch = Watch(cluster.metrics, received) if received is not None and head["status"] == 200 else None
    body_iter = relayed_body(stream, media_type or "", request_id, replica, watch, head.get("first", b""))
    return StreamingResponse(body_iter, status_code=head["status"], headers=dict(headers), media_type=media_type)


async def whole_json(cluster: Cluster, request: Request, stream, head: dict, headers: list, metered=False) -> Response:
    """A JSON answer read whole (it is small), so ``?wait=1`` and ``?detach=1`` teach the book their request id.
    ``?wait=1`` sends nothing until its end: a client that leaves meanwhile cancels the replica's call (and so the
    run), as the engine does for its own clients."""
    collecting = asyncio.ensure_future(_collect(stream))
    try:
        while not collecting.done():
            await asyncio.wait({collecting}, timeout=0.5)
            if not collecting.done() and await request.is_disconnected():
                return Response(status_code=499)
        body = collecting.result()
    except Exception as e:
        return unavailable(request.url.path, e)
    finally:
        collecting.cancel()
        stream.cancel()
    parsed = _json(body)
    if isinstance(parsed, dict):
        cluster.replicas.book.remember(parsed.get("request_id"), head["replica"])
    if metered and head["status"] != 202:  # ?wait=1 (a ?detach=1 run's outcome is its own frames' business)
        cluster.metrics.finished(outcome_of_json(parsed, head["status"]))
    return Response(body, status_code=head["status"], headers=dict(headers), media_type="application/json")


async def _collect(stream) -> bytes:
    return b"".join([chunk async for chunk in stream])


class Watch:
    """One streamed generation's first byte and outcome, for the metrics."""

    def __init__(self, metrics: IngressMetrics, received: float):
        self.metrics, self.received, self.started = metrics, received, False

    def chunk(self) -> None:
        if not self.started:
            self.started = True
            self.metrics.first_byte(time.monotonic() - self.received)


async def relayed_body(
    stream, media_type: str, request_id: Optional[str], replica: str, watch: Optional[Watch] = None, first: bytes = b""
) -> AsyncIterator[bytes]:
    """The replica's chunks unchanged. If the replica dies mid-stream: a frame stream ends with ``error`` +
    ``end``, an OpenAI event stream with its ``error`` event, anything else breaks off. When the client goes,
    the call must be cancelled here: a Serve stream nobody reads any more is not cancelled by itself, and the
    engine's run would go on. ``first``: what came with the head (replica.py)."""
    last = b""
    try:
        async for chunk in _after(first, stream):
            if watch is not None:
                watch.chunk()
            last = chunk
            yield chunk
        if watch is not None:
            watch.metrics.finished(outcome_of_frames(last))
    except asyncio.CancelledError:
        raise
    except Exception as e:
        message = f"replica {replica} failed mid-stream: {_reason(e)}"
        if media_type.startswith(MEDIA_TYPE):
            if watch is not None:
                watch.metrics.finished("internal")
            yield closing_frames(request_id or "", last_frame(last), message)
        elif media_type.startswith("text/event-stream"):
            yield openai_api.sse("error", {"type": "error", **OpenAIError(500, message).body()})
        else:  # a file: the connection breaks off, so the client sees it incomplete rather than a short file
            raise
    finally:
        stream.cancel()


async def _after(first: bytes, stream) -> AsyncIterator[bytes]:
    if first:
        yield first
    async for chunk in stream:
        yield chunk


def unavailable(path: str, error: BaseException) -> JSONResponse:
    message = f"no replica could take the request: {_reason(error)}"
    headers = {"Retry-After": "5"}
    if openai_api.is_openai_path(path):
        return JSONResponse(OpenAIError(503, message).body(), status_code=503, headers=headers)
    return JSONResponse({"detail": message}, status_code=503, headers=headers)


# ---------------------------------------------------------------------------------------------- request reading
async def held_assets(store: AssetStore, parsed) -> Optional[dict]:
    """``{field: (file name, bytes)}`` for control and start images or videos uploaded to the cluster (ids in its
    assets folder); other references go to the engine as they are."""
    sample = parsed.get("sample") if isinstance(parsed, dict) else None
    if not isinstance(sample, dict):
        return None
    held = {}
    for field in CTRL_FIELDS:
        ref = sample.get(field)
        if isinstance(ref, str) and is_asset_id(ref):
            try:
                path = store.resolve(ref)
            except AssetError as e:
                raise BadRequest(("body", "sample", field), str(e)) from None
            held[field] = (os.path.basename(path), await asyncio.to_thread(_read, path))
    return held or None


def openai_model_key(aliases: ModelAliases, parsed) -> Optional[str]:
    """An OpenAI ``model`` (alias or ``arch:name_or_path``) as the routing key of the config it names."""
    if not isinstance(parsed, dict):
        return None
    try:
        return model_key(aliases.resolve(parsed.get("model")).model)
    except (LookupError, ValueError):
        return None  # the engine answers with OpenAI's error


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _json(body: bytes):
    try:
        return json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        return None


def _is_ok(answer) -> bool:
    return not isinstance(answer, BaseException) and answer["status"] == 200


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[-1] if text else ''}"[:500]
