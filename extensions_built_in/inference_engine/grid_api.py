"""``POST /grid``, ``GET /grid/{id}/frames``, ``POST /grid/{id}/cancel`` and ``GET /grid/jobs``: a compare grid
run as ordinary engine requests, one per cell, and their frames read back into one stream. No torch.

Every cell goes through ``Engine.submit`` as ``POST /generate`` sends a request (its own id, queue place, cancel
by ``POST /cancel/{id}``), queued at once in the plan's run order (grid_plan.py), after every cell has passed the
engine's own checks: a bad axis value is a 422 naming it before anything is queued. The grid then runs as the
engine's (grid_run.py) and the stream is in the frame format of ``POST /generate`` (docs/PROTOCOL.md "The grid
stream"): the grid's own ``start`` (its plan), each cell's frames as they come with ``cell`` (its index) and
``axes`` (its labels) added, and at the end the grid's ``result`` (the pages and the replay body) and ``end``.
The response that queued the grid owns it, as ``POST /generate``'s owns its run: if it ends first, the cells
still to come are cancelled (``?detach=1``: nobody owns it). ``GET /grid/{id}/frames`` reads a running or recent
grid from where it stands, as often as a page reloads.
"""

from __future__ import annotations

import asyncio
import copy
import time

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from extensions_built_in.inference_engine.grid_jobs import training_jobs
from extensions_built_in.inference_engine.grid_plan import GridBody, GridError, GridPlan, axis_loc, plan_grid
from extensions_built_in.inference_engine.grid_run import GridRun, GridRuns
from extensions_built_in.inference_engine.grid_stream import GridReader
from extensions_built_in.inference_engine.http_common import EngineDep, bad_request
from extensions_built_in.inference_engine.protocol import MEDIA_TYPE
from extensions_built_in.inference_engine.request_checks import BadRequest
from extensions_built_in.inference_engine.request_queue import QueueFull
from extensions_built_in.inference_engine.stream import FrameStream

HEARTBEAT_S = 1.0  # as generation_api.py: bytes at least every 2 s while cells wait or load

router = APIRouter()


def runs(app) -> GridRuns:
    if not hasattr(app.state, "grids"):
        app.state.grids = GridRuns()
    return app.state.grids


@router.post("/grid", responses={200: {"content": {MEDIA_TYPE: {}}, "description": "binary frame stream"}})
async def grid(body: GridBody, request: Request, engine: EngineDep, detach: bool = Query(False)):
    """A compare grid (docs/PROTOCOL.md "The grid stream"). ``?detach=1``: 202 at once; the grid is the
    engine's (no disconnect cancels it) and ``GET /grid/{id}/frames`` streams it."""
    try:
        plan = await asyncio.to_thread(plan_grid, body, engine.checks.loras.entries)
        await asyncio.to_thread(check_cells, engine, plan)
    except GridError as e:
        return bad_request(e.loc, str(e))
    room = engine.queue.max_pending - len(engine.queue) if engine.queue.max_pending else len(plan.cells)
    if len(plan.cells) > room:
        retry = str(engine._retry_after_s())
        detail = f"the grid's {len(plan.cells)} cells do not fit the queue ({room} places free)"
        return JSONResponse({"detail": detail}, status_code=429, headers={"Retry-After": retry})
    loop, reqs = asyncio.get_running_loop(), {}
    try:
        for cell in plan.run_order():
            body_copy = copy.deepcopy(cell.body)
            stream = FrameStream(engine.new_request_id(), loop)
            reqs[cell.index] = engine.submit(body_copy["model"], body_copy["sample"], body_copy["stream"], stream)
            cell.request_id = stream.request_id
    except (BadRequest, QueueFull) as e:
        for req in reqs.values():
            engine.cancel(req.id)
        if isinstance(e, QueueFull):
            return JSONResponse({"detail": str(e)}, status_code=429, headers={"Retry-After": str(e.retry_after_s)})
        return bad_request(e.loc, str(e))
    run = GridRun(engine, engine.new_request_id(), plan, reqs)
    run.start()
    runs(request.app).add(run)
    if detach:
        return JSONResponse(
            {"grid_id": run.id, "cells": len(plan.cells), "frames": f"/grid/{run.id}/frames"}, status_code=202
        )
    return frames_response(run, request, run.frames.attach(), owner=True)


@router.get("/grid/jobs")
async def jobs(engine: EngineDep):
    """Training jobs with their saved LoRAs by step and their own sample prompts (grid_jobs.py)."""
    return {"jobs": training_jobs(await asyncio.to_thread(engine.checks.loras.entries))}


@router.get("/grid/{grid_id}/frames", responses={200: {"content": {MEDIA_TYPE: {}}}})
async def grid_frames(grid_id: str, request: Request):
    """A running or recent grid's frames: as it stands, then live to its end. Leaving never cancels it."""
    run = runs(request.app).get(grid_id)
    if run is None:
        raise HTTPException(404, f"no running or recent grid {grid_id!r}")
    return frames_response(run, request, run.frames.attach(), owner=False)


@router.post("/grid/{grid_id}/cancel")
async def cancel_grid(grid_id: str, request: Request):
    """Every cell of the grid still waiting or running; the stream then ends with the cells done so far."""
    run = runs(request.app).get(grid_id)
    if run is None:
        raise HTTPException(404, f"no running or recent grid {grid_id!r}")
    return {"grid_id": grid_id, "cancelled": run.cancel() if not run.frames.closed else []}


def check_cells(engine, plan: GridPlan) -> None:
    """Each cell through the checks ``Engine.submit`` runs first, before any is queued; a refusal names the axis
    value that caused it."""
    for cell in plan.cells:
        body = copy.deepcopy(cell.body)
        sample = {k: v for k, v in body["sample"].items() if k not in ("batch_count", "batch_seeds")}
        try:
            engine.checks.resolve(body["model"], sample, body["stream"])
        except BadRequest as e:
            loc = tuple(e.loc[1:] if e.loc and e.loc[0] == "body" else e.loc)
            raise GridError(axis_loc(cell, plan.axes, loc), str(e)) from None


# ---------------------------------------------------------------------------------------------- the response
def frames_response(run: GridRun, request: Request, reader: GridReader, owner: bool) -> StreamingResponse:
    return StreamingResponse(
        read_frames(run, request, reader, owner),
        media_type=MEDIA_TYPE,
        headers={"X-Request-Id": run.id, "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"},
    )


async def read_frames(run: GridRun, request: Request, reader: GridReader, owner: bool):
    """The response body: the grid's frames as they come, a heartbeat after a second without one. When the
    response that queued the grid (not detached) ends before the grid, the cells still to come are cancelled."""
    checked = sent = time.monotonic()
    try:
        while True:
            chunk = await run.frames.next_chunk(reader, timeout=0.5)
            if chunk:
                sent = time.monotonic()
                yield chunk
            if run.frames.drained_for(reader):
                return
            if time.monotonic() - sent > HEARTBEAT_S:
                sent = time.monotonic()
                yield run.heartbeat()
            if time.monotonic() - checked > 0.5:
                checked = time.monotonic()
                if await request.is_disconnected():
                    return
    finally:
        run.frames.release(reader)
        if owner and not run.frames.closed:
            run.cancel()
