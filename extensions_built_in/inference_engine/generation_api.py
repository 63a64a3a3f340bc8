"""Routes that queue and run work on the main thread: ``POST /generate`` and its frame stream,
``GET /requests/{id}/frames``, ``POST /cancel/{id}``, ``GET /queue``, ``POST /queue/{id}/move``,
``POST /queue/cancel``, ``POST /unload``. No torch.

The frame stream is read here: frames as they come, heartbeats while a request waits or loads, and a client
that leaves cancels the run it started (docs/PROTOCOL.md).
"""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from extensions_built_in.inference_engine.bodies import GenerateBody, UnloadBody
from extensions_built_in.inference_engine.engine import Engine, EngineBusy
from extensions_built_in.inference_engine.http_common import EngineDep, bad_request
from extensions_built_in.inference_engine.protocol import ERROR_HTTP_STATUS, MEDIA_TYPE
from extensions_built_in.inference_engine.request_checks import BadRequest
from extensions_built_in.inference_engine.request_queue import QueueFull
from extensions_built_in.inference_engine.stream import FrameStream

HEARTBEAT_S = 1.0  # proxies and clients must see bytes at least every 2 s while a request waits or loads

router = APIRouter()


@router.post("/generate", responses={200: {"content": {MEDIA_TYPE: {}}, "description": "binary frame stream"}})
async def generate(
    body: GenerateBody, request: Request, engine: EngineDep, wait: bool = Query(False), detach: bool = Query(False)
):
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


@router.get("/requests/{request_id}/frames", responses={200: {"content": {MEDIA_TYPE: {}}}})
async def request_frames(request_id: str, request: Request, engine: EngineDep):
    """A queued, running or recently finished request's frames: where it stands, then live to its end.
    Leaving never cancels it (``POST /cancel/{id}`` does)."""
    req = engine.find_request(request_id)
    if req is None:
        raise HTTPException(404, f"no queued, running or recent request {request_id!r}")
    return frames_response(engine, req, request, req.stream.attach())


@router.post("/cancel/{request_id}")
async def cancel(request_id: str, engine: EngineDep):
    status = engine.cancel(request_id)
    if status is None:
        raise HTTPException(404, f"no queued or running request {request_id!r}")
    return {"request_id": request_id, "status": status}


@router.get("/queue")
async def queue(engine: EngineDep):
    return engine.queue_snapshot()


class MoveBody(BaseModel):
    """``POST /queue/{id}/move``: the 1-based place in line the request should take (past the end: last)."""

    model_config = ConfigDict(extra="forbid")
    position: int = Field(..., ge=1, le=1_000_000)


class CancelAllBody(BaseModel):
    """``POST /queue/cancel``: ``running: false`` leaves the running request alone."""

    model_config = ConfigDict(extra="forbid")
    running: bool = True


@router.post("/queue/cancel")
async def cancel_all(engine: EngineDep, body: CancelAllBody | None = None):
    """Every waiting request cancelled, and the running one unless ``running`` is false."""
    return engine.cancel_all(include_running=(body or CancelAllBody()).running)


@router.post("/queue/{request_id}/move")
async def move_in_queue(request_id: str, body: MoveBody, engine: EngineDep):
    place = engine.move(request_id, body.position)
    if place is None:
        if engine.running_request(request_id) is not None:
            return JSONResponse({"detail": f"request {request_id!r} is running: only waiting ones move"}, 409)
        raise HTTPException(404, f"no waiting request {request_id!r}")
    return {"request_id": request_id, "position": place}


@router.post("/unload")
async def unload(body: UnloadBody, engine: EngineDep):
    if not body.all and not body.keys:
        return bad_request(("body", "all"), 'say {"all": true} or list pool keys (GET /health shows them)')
    try:
        return await asyncio.to_thread(engine.run_on_main, lambda: engine.unload(None if body.all else body.keys))
    except KeyError as e:
        return bad_request(("body", "keys"), f"unknown pool key(s): {e.args[0]}")
    except EngineBusy as e:
        return JSONResponse({"detail": str(e)}, status_code=409)


# ---------------------------------------------------------------------------------------------- the stream
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
            # launch-bound sampler (SDXL's, on a fast GPU) pays in step time. Starlette also cancels on disconnect.
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
