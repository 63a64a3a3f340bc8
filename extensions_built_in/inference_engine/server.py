"""The engine's HTTP app: its guards and caps, and the uvicorn thread it runs on. No model code, no torch.

uvicorn runs this on a thread bound to 127.0.0.1 with an ephemeral port; the generating main thread never
waits on it. A ``Host`` other than a loopback name is refused first (421, host_check.py); then every route but
``/health`` needs ``Authorization: Bearer <token>`` (the per-launch token in engine.json), and ``/health``
says only ``{"ok": true}`` without it. Bad input becomes a 4xx whose JSON names the field, in FastAPI's own
``detail`` shape. The routes, one module per concern: catalog_api.py (health, metrics, what can be loaded),
generation_api.py (generate, the frame stream, cancel, queue, unload), outputs_api.py (results and uploads),
openai_api.py (OpenAI's Images API).
"""

from __future__ import annotations

import hmac
import threading
import time

from fastapi import FastAPI, HTTPException
from fastapi.responses import JSONResponse

from extensions_built_in.inference_engine import catalog_api, generation_api, grid_api, openai_api, outputs_api
from extensions_built_in.inference_engine.engine import Engine
from extensions_built_in.inference_engine.host_check import LoopbackHost
from extensions_built_in.inference_engine.openai_params import OpenAIError

MAX_JSON_BODY = 1024 * 1024  # a generate body is a few KB; 1 MB leaves room for long prompts, not for abuse
# OpenAI's: openai_api.install
ROUTERS = (catalog_api.router, generation_api.router, grid_api.router, outputs_api.router)


# ---------------------------------------------------------------------------------------------- the app
def create_app(engine: Engine, token: str) -> FastAPI:
    """The routes (one module per concern, each route a module-level function reaching the engine through
    ``app.state.engine``: http_common.py ``EngineDep``) behind the guards and the caps."""
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
    app.state.engine = engine
    # Added last, run first: the Host check, the token, then the queue's cap, then the body's.
    app.add_middleware(BodyLimit, limit=MAX_JSON_BODY, exempt=("/assets", "/v1/images/edits"))
    app.add_middleware(RefuseWhenFull, engine=engine)  # after the token check: a stranger learns nothing
    install_guards(app, token)
    for router in ROUTERS:
        app.include_router(router)
    openai_api.install(app)
    return app


def install_guards(app: FastAPI, token: str) -> None:
    """The Host check, then the token check, ahead of every other middleware (added last: they run first).
    The engine's app and the cluster's ingress both install them here."""
    app.add_middleware(RequireToken, token=token, open_paths=("/health",))
    app.add_middleware(LoopbackHost)


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
