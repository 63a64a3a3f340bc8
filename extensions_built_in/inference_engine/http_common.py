"""What the engine's route modules share: the engine as a FastAPI dependency, FastAPI-shaped 4xx bodies, and
whether a request carried the token. No torch."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import JSONResponse

from extensions_built_in.inference_engine.engine import Engine


async def engine_of(request: Request) -> Engine:
    """The app's engine (``create_app`` sets ``app.state.engine``). A coroutine: FastAPI would run a plain
    function on its thread pool, a hop per request for a read."""
    return request.app.state.engine


# A route's ``engine: EngineDep`` parameter: the engine serving this app (not part of the OpenAPI schema).
EngineDep = Annotated[Engine, Depends(engine_of)]


def bad_request(loc, message: str, status: int = 422) -> JSONResponse:
    return JSONResponse({"detail": [{"loc": list(loc), "msg": message, "type": "value_error"}]}, status_code=status)


def has_token(request: Request) -> bool:
    """Whether the request carried the bearer token (server.py's ``RequireToken`` notes it for the open paths)."""
    return bool(request.scope.get("state", {}).get("authorized"))
