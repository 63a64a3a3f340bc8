"""The engine's HTTP API: routes, validation, auth and the streaming response. No model code, no torch.

uvicorn runs this on a thread bound to 127.0.0.1 with an ephemeral port; the generating main thread never
waits on it. A ``Host`` other than a loopback name is refused first (421, host_check.py); then every route but
``/health`` needs ``Authorization: Bearer <token>`` (the per-launch token in engine.json), and ``/health``
says only ``{"ok": true}`` without it. Bad input becomes a 4xx whose JSON names the field, in FastAPI's own
``detail`` shape.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import threading
import time

from fastapi import FastAPI, HTTPException, Query, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse

from extensions_built_in.inference_engine import openai_api
from extensions_built_in.inference_engine.assets import MAX_UPLOAD_BYTES, AssetError, AssetQuotaFull, AssetStore
from extensions_built_in.inference_engine.bodies import GenerateBody, UnloadBody
from extensions_built_in.inference_engine.catalog import list_checkpoints, list_loras
from extensions_built_in.inference_engine.engine import Engine, EngineBusy, OutputInUse
from extensions_built_in.inference_engine.host_check import LoopbackHost
from extensions_built_in.inference_engine.openai_params import OpenAIError
from extensions_built_in.inference_engine.outputs import download_name, owned_file
from extensions_built_in.inference_engine.protocol import ERROR_HTTP_STATUS, MEDIA_TYPE
from extensions_built_in.inference_engine.request_checks import BadRequest
from extensions_built_in.inference_engine.request_queue import QueueFull
from extensions_built_in.inference_engine.stream import FrameStream
from extensions_built_in.inference_engine.uploads import NotMultipart, UploadTooLarge, read_form

HEARTBEAT_S = 1.0  # proxies and clients must see bytes at least every 2 s while a request waits or loads
MAX_JSON_BODY = 1024 * 1024  # a generate body is a few KB; 1 MB leaves room for long prompts, not for abuse


# ---------------------------------------------------------------------------------------------- the app
def bad_request(loc, message: str, status: int = 422) -> JSONResponse:
    return JSONResponse({"detail": [{"loc": list(loc), "msg": message, "type": "value_error"}]}, status_code=status)


def create_app(engine: Engine, token: str) -> FastAPI:
    # No /docs or /redoc page: a browser cannot send the bearer token, so the page would 401 on its own schema.
    # The schema itself is served (with the token) for scripts and API tools.
    app = FastAPI(
        title="AI Toolkit inference engine",
        version="1",
        docs_url=None,
        redoc_url=None,
        description="Resident diffusion engine. Every route but /health needs `Authorization: Bearer <token>` "
        "(engine.json); /health without it is only `{ok}`. POST /generate streams binary frames "
        "(docs/PROTOCOL.md). /v1/images/generations, /v1/images/edits and /v1/models are OpenAI's Images API, "
        "errors in OpenAI's shape.",
    )
    app.add_middleware(BodyLimit, limit=MAX_JSON_BODY, exempt=("/assets", "/v1/images/edits"))
    app.add_middleware(RefuseWhenFull, engine=engine)  # after the token check: a stranger learns nothing
    install_guards(app, token)

    @app.get("/health")
    async def health(request: Request):
        """``{"ok": true}`` to anyone, a liveness probe's answer; the rest (pool keys, model and LoRA paths,
        folders) only with the token."""
        if not has_token(request):
            return {"ok": True}
        return await asyncio.to_thread(engine.health)

    @app.get("/metrics", responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}})
    async def metrics():
        """Prometheus text format (metrics.py), behind the token like every route but /health."""
        body, content_type = await asyncio.to_thread(engine.metrics.exposition)
        return Response(body, media_type=content_type)

    @app.get("/models")
    async def models():
        return await asyncio.to_thread(engine.models)

    @app.post("/generate", responses={200: {"content": {MEDIA_TYPE: {}}, "description": "binary frame stream"}})
    async def generate(body: GenerateBody, request: Request, wait: bool = Query(False), detach: bool = Query(False)):
        """``?wait=1``: one JSON object at the end. ``?detach=1``: 202 at once; the run is the engine's (no
        disconnect cancels it) and ``GET /requests/{id}/frames`` streams it, as often as a page reloads."""
        received = time.monotonic()  # time to first byte counts from here (metrics.py)
        if wait and detach:
            return bad_request(("query", "detach"), "wait=1 and detach=1 exclude each other")
        stream = FrameStream(engine.new_request_id(), asyncio.get_running_loop())
        try:
            req = engine.submit(
                body.model.model_dump(exclude_none=True),
                body.sample.model_dump(exclude_none=True),
                body.stream.model_dump(),
                stream,
            )
        except BadRequest as e:
            return bad_request(e.loc, str(e))
        except QueueFull as e:
            return JSONResponse({"detail": str(e)}, status_code=429, headers={"Retry-After": str(e.retry_after_s)})
        if wait:
            return await wait_for_outcome(engine, req, request)
        if detach:
            stream.release(stream.main)
            return JSONResponse(
                {"request_id": req.id, **engine.position_field(req), "frames": f"/requests/{req.id}/frames"},
                status_code=202,
            )
        return frames_response(engine, req, request, stream.main, received)

    @app.get("/requests/{request_id}/frames", responses={200: {"content": {MEDIA_TYPE: {}}}})
    async def request_frames(request_id: str, request: Request):
        """A queued, running or recently finished request's frames: where it stands, then live to its end.
        Leaving never cancels it (``POST /cancel/{id}`` does)."""
        req = engine.find_request(request_id)
        if req is None:
            raise HTTPException(404, f"no queued, running or recent request {request_id!r}")
        return frames_response(engine, req, request, req.stream.attach())

    @app.post("/cancel/{request_id}")
    async def cancel(request_id: str):
        status = engine.cancel(request_id)
        if status is None:
            raise HTTPException(404, f"no queued or running request {request_id!r}")
        return {"request_id": request_id, "status": status}

    @app.get("/queue")
    async def queue():
        return engine.queue_snapshot()

    @app.post("/unload")
    async def unload(body: UnloadBody):
        if not body.all and not body.keys:
            return bad_request(("body", "all"), 'say {"all": true} or list pool keys (GET /health shows them)')
        try:
            return await asyncio.to_thread(engine.run_on_main, lambda: engine.unload(None if body.all else body.keys))
        except KeyError as e:
            return bad_request(("body", "keys"), f"unknown pool key(s): {e.args[0]}")
        except EngineBusy as e:
            return JSONResponse({"detail": str(e)}, status_code=409)

    @app.post("/assets")
    async def upload_asset(request: Request):
        return await receive_asset(engine.assets, request)

    @app.get("/loras")
    async def loras():
        """LoRA files under the engine's LoRA roots, newest first, with the training job, step and family AI
        Toolkit recorded for them (catalog.py)."""
        roots = engine.checks.lora_roots
        return {"roots": roots, "loras": await asyncio.to_thread(list_loras, roots)}

    @app.get("/checkpoints")
    async def checkpoints():
        """Diffusers folders and single-file checkpoints under the engine's model roots, for the model picker."""
        return {
            "roots": engine.model_roots,
            "checkpoints": await asyncio.to_thread(list_checkpoints, engine.model_roots),
        }

    @app.get("/outputs")
    async def outputs(limit: int = Query(100, ge=1, le=10000)):
        return await asyncio.to_thread(engine.list_outputs, limit)

    def output_path(name: str, results_only: bool = False) -> str:
        """A file in the output folder by its bare name (no folders, nothing hidden, no link out of it);
        ``results_only``: not a sidecar or a file being written either (those go with their result)."""
        path = os.path.join(engine.output_folder, os.path.basename(name))
        hidden = name.startswith(".") or (results_only and name.endswith((".json", ".tmp")))
        if os.path.basename(name) != name or hidden or not owned_file(path, engine.output_folder):
            raise HTTPException(404, f"no output named {name!r}")
        return path

    @app.get("/outputs/{name}")
    async def output_file(name: str, download: bool = False):
        """``?download=1``: an attachment named from the prompt and seed (``download_name``)."""
        path = output_path(name)
        return FileResponse(path, filename=download_name(path) if download else None)

    @app.delete("/outputs/{name}", status_code=204)
    async def delete_output(name: str):
        try:
            await asyncio.to_thread(engine.delete_output, output_path(name, results_only=True))
        except OutputInUse as e:
            raise HTTPException(409, str(e)) from None

    openai_api.install(app, engine)
    return app


def install_guards(app: FastAPI, token: str) -> None:
    """The Host check, then the token check, ahead of every other middleware (added last: they run first).
    The engine's app and the cluster's ingress both install them here."""
    app.add_middleware(RequireToken, token=token, open_paths=("/health",))
    app.add_middleware(LoopbackHost)


def has_token(request: Request) -> bool:
    """Whether the request carried the bearer token (``RequireToken`` notes it for the open paths)."""
    return bool(request.scope.get("state", {}).get("authorized"))


class RequireToken:
    """401 unless ``Authorization`` is the bearer token, on every path but ``open_paths``; OpenAI-shaped on /v1.
    An open path is served either way, told in ``scope["state"]["authorized"]`` whether the token came.

    Plain ASGI rather than ``@app.middleware("http")``: Starlette's BaseHTTPMiddleware wraps ``receive`` so that
    ``Request.is_disconnected`` never saw a client leave, and a ``?wait=1`` request (or an OpenAI JSON request)
    whose client had gone ran to its end instead of being cancelled."""

    def __init__(self, app, token: str, open_paths: tuple = ()):
        self.app, self.expected, self.open_paths = app, f"Bearer {token}".encode(), open_paths

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        given = next((value for key, value in scope["headers"] if key == b"authorization"), b"")
        authorized = hmac.compare_digest(given, self.expected)
        if authorized or scope["path"] in self.open_paths:
            scope["state"] = {**scope.get("state", {}), "authorized": authorized}  # this request's own dict
            return await self.app(scope, receive, send)
        message = "missing or wrong bearer token"
        body = openai_api.unauthorized(message) if openai_api.is_openai_path(scope["path"]) else {"detail": message}
        response = JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


class RefuseWhenFull:
    """429 with ``Retry-After`` for a new generation while the queue is at its cap, before its body is read:
    under overload most requests are refused, and each one read, validated and checked only to be refused took
    the event loop from the streams it serves (``Engine.submit`` still refuses the few that race past here)."""

    PATHS = ("/generate", "/v1/images/generations", "/v1/images/edits")

    def __init__(self, app, engine: Engine):
        self.app, self.engine = app, engine

    async def __call__(self, scope, receive, send):
        full = None
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in self.PATHS:
            full = self.engine.refusal_if_full()
        if full is None:
            return await self.app(scope, receive, send)
        headers = {"Retry-After": str(full.retry_after_s)}
        if openai_api.is_openai_path(scope["path"]):
            body = OpenAIError(429, str(full), None, "rate_limit_exceeded", type="requests").body()
        else:
            body = {"detail": str(full)}
        await JSONResponse(body, status_code=429, headers=headers)(scope, receive, send)


class BodyLimit:
    """413 for a request body over ``limit`` bytes, by its Content-Length or, for chunked bodies, while it is
    read (nothing past the limit is buffered). Uploads have their own, larger cap (``exempt``)."""

    def __init__(self, app, limit: int, exempt: tuple = ()):
        self.app, self.limit, self.exempt = app, limit, exempt

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in self.exempt:
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            message = f"request body is over {self.limit} bytes"
            body = OpenAIError(413, message).body() if openai_api.is_openai_path(scope["path"]) else {"detail": message}
            return await JSONResponse(body, status_code=413)(scope, receive, send)
        seen = 0

        async def limited_receive():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:  # FastAPI turns an HTTPException raised while reading the body into its response
                raise HTTPException(413, f"request body is over {self.limit} bytes")
            return message

        await self.app(scope, limited_receive, send)


def frames_response(engine: Engine, req, request: Request, reader, received: float | None = None) -> StreamingResponse:
    return StreamingResponse(
        stream_frames(engine, req, request, reader, received),
        media_type=MEDIA_TYPE,
        headers={"X-Request-Id": req.id, "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"},
    )


async def stream_frames(engine: Engine, req, request: Request, reader, received: float | None = None):
    """The response body: frames as they come, heartbeats while waiting. A vanished client cancels the run only
    when it held the main reader (the ``POST /generate`` that made it, not detached). ``received``: when the
    ``POST /generate`` arrived, for the time-to-first-byte histogram (attaching readers have none)."""
    stream = req.stream
    checked = time.monotonic()
    try:
        while True:
            chunk = await stream.next_chunk(timeout=0.5, reader=reader)
            if chunk:
                if received is not None:
                    engine.metrics.first_byte(time.monotonic() - received)
                    received = None
                yield chunk
            if stream.drained_for(reader):
                return
            # At most twice a second: each check costs this thread ~0.1 ms of GIL per chunk, which a
            # launch-bound sampler (SDXL on an H200) pays in step time. Starlette also cancels on disconnect.
            if not chunk or time.monotonic() - checked > 0.5:
                checked = time.monotonic()
                if await request.is_disconnected():
                    return
            if time.monotonic() - stream.last_emit > HEARTBEAT_S:
                fields = engine.position_field(req)
                stream.emit("status", stage=req.stage, message=req.message, heartbeat=True, **fields)
    finally:
        owner = reader is stream.main
        stream.release(reader)
        if owner and not stream.drained_for(reader):
            engine.cancel(req.id)


async def wait_for_outcome(engine: Engine, req, request: Request) -> JSONResponse:
    """``?wait=1``: one JSON object at the end; the frames are read and dropped as they come."""
    from extensions_built_in.inference_engine.protocol import read_frames

    outcome = {"request_id": req.id}
    try:
        while not req.stream.drained:
            chunk = await req.stream.next_chunk(timeout=0.5)
            for frame in read_frames(chunk) if chunk else ():
                if frame.type in ("result", "error"):
                    outcome[frame.type] = {
                        k: v for k, v in frame.header.items() if k not in ("type", "request_id", "seq", "t")
                    }
            if await request.is_disconnected():
                engine.cancel(req.id)
                return JSONResponse(outcome, status_code=499)
    except asyncio.CancelledError:
        engine.cancel(req.id)
        raise
    if "result" in outcome:
        outcome["timings"] = outcome["result"].get("timings")
        return JSONResponse(outcome)
    code = outcome.get("error", {}).get("code")
    return JSONResponse(outcome, status_code=ERROR_HTTP_STATUS.get(code, 500))


async def receive_asset(store: AssetStore, request: Request) -> JSONResponse:
    """Multipart image upload: size-capped before and while reading, then fully decoded by PIL to verify. The
    cluster's ingress keeps its uploads in its own store the same way."""
    too_large = bad_request(("body", "file"), f"upload is larger than {MAX_UPLOAD_BYTES} bytes", 413)
    try:
        form = await read_form(request, max_files=1, max_fields=4)
    except UploadTooLarge:
        return too_large
    except NotMultipart as e:
        return bad_request(("body",), "expected multipart/form-data with a 'file' field" + (f": {e}" if str(e) else ""))
    upload = form.get("file")
    if not isinstance(upload, UploadFile) and not hasattr(upload, "read"):
        return bad_request(("body", "file"), "missing 'file' field")
    data = await upload.read(MAX_UPLOAD_BYTES + 1)
    if len(data) > MAX_UPLOAD_BYTES:
        return too_large
    try:
        info = await asyncio.to_thread(store.store, data)
    except AssetQuotaFull as e:
        return bad_request(("body", "file"), str(e), 507)
    except AssetError as e:
        return bad_request(("body", "file"), str(e))
    return JSONResponse(info, status_code=201)


# ---------------------------------------------------------------------------------------------- running it
class LoopbackServer:
    """uvicorn on a daemon thread, loopback only, on a port the OS picks. The engine's server and the cluster's
    ingress (extensions_built_in/inference_cluster/ingress.py) both run this way."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, thread_name: str = "engine-http"):
        import uvicorn

        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the engine binds loopback only; reach it through the UI's proxy")
        # timeout_keep_alive: the UI's proxy (undici) reuses idle connections for up to 4 s, and a connection
        # closed by the server just as it is reused fails the request (502s under load, docs/RELIABILITY.md).
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=5,
            lifespan="off",
            timeout_keep_alive=30,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name=thread_name, daemon=True)
        self.host = host

    def start(self, timeout: float = 30.0) -> int:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the engine's HTTP server did not start")
            time.sleep(0.02)
        return self.port

    @property
    def port(self) -> int:
        return self.server.servers[0].sockets[0].getsockname()[1]

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)


class EngineServer(LoopbackServer):
    def __init__(self, engine: Engine, token: str, host: str = "127.0.0.1", port: int = 0):
        super().__init__(create_app(engine, token), host, port)
