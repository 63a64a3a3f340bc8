"""421 Misdirected Request for a ``Host`` that is not this engine's: the guard against DNS rebinding.

The engine listens on loopback only, yet a web page can still reach it: its script asks ``evil.example:PORT``,
whose DNS answer then changes to 127.0.0.1, and the browser sends the request here with ``Host:
evil.example:PORT`` and lets the page read the answer (same origin, as far as the browser knows). Every honest
client names the engine as ``127.0.0.1``, ``localhost`` or ``[::1]`` (engine.json's ``url``, the UI's proxy, the
cluster's replicas), or the address it bound, so any other name is refused before the token is even looked at,
on every route, ``/health`` included.
"""

from __future__ import annotations

from typing import Optional

from fastapi.responses import JSONResponse

from extensions_built_in.inference_engine import openai_api
from extensions_built_in.inference_engine.openai_params import OpenAIError

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})


def host_name(value: str) -> Optional[str]:
    """The name in a ``Host`` header (``name``, ``name:port``, ``[v6]``, ``[v6]:port``), lower-case; None when
    the header is not of that shape."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
    else:
        name, colon, port = value.partition(":")
        rest = colon + port
    if rest and not (rest.startswith(":") and rest[1:].isdigit()):
        return None
    return name.lower() or None


def own_names(scope) -> set:
    """The loopback names and the address this server's socket has (``scope["server"]``), as a Host names it."""
    server = scope.get("server")
    if not server or not server[0]:
        return set(LOOPBACK_NAMES)
    address = str(server[0]).lower()
    return LOOPBACK_NAMES | {f"[{address}]" if ":" in address else address}


class LoopbackHost:
    """Plain ASGI, like the server's ``RequireToken``, for the same reason (server.py says it)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        given = next((value for key, value in scope["headers"] if key == b"host"), b"")
        name = host_name(given.decode("latin-1"))
        if name is not None and name in own_names(scope):
            return await self.app(scope, receive, send)
        message = "this engine answers to 127.0.0.1, localhost or [::1] only: reach it through the UI's proxy"
        await JSONResponse(refusal_body(scope["path"], message), status_code=421)(scope, receive, send)


def refusal_body(path: str, message: str) -> dict:
    """FastAPI's ``detail``, or OpenAI's error shape under ``/v1`` (as the token check answers there)."""
    if openai_api.is_openai_path(path):
        return OpenAIError(421, message, None, "misdirected_request").body()
    return {"detail": message}
