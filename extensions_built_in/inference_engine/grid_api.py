"""``POST /grid``, ``POST /grid/{id}/cancel`` and ``GET /grid/jobs``: a compare grid run as ordinary engine
requests, one per cell, and their frames read back into one stream. No torch.

Every cell goes through ``Engine.submit`` as ``POST /generate`` sends a request (its own id, queue place, cancel
by ``POST /cancel/{id}``), queued at once in the plan's run order (grid_plan.py), after every cell has passed the
engine's own checks: a bad axis value is a 422 naming it before anything is queued. The stream is in the frame
format of ``POST /generate`` (docs/PROTOCOL.md "The grid stream"): the grid's own ``start`` (its plan), each
cell's frames as they come with ``cell`` (its index) and ``axes`` (its labels) added, and at the end the grid's
``result`` (the pages and the replay body) and ``end``. Cells are read only as the response is read, so a slow
client makes the cells' own streams drop latent frames, as a slow ``POST /generate`` client does. A client that
leaves cancels the cells still to come.
"""

from __future__ import annotations

import asyncio
import copy
import os
import time
from typing import Optional

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, StreamingResponse

from extensions_built_in.inference_engine.grid_image import save_grid
from extensions_built_in.inference_engine.grid_jobs import training_jobs
from extensions_built_in.inference_engine.grid_plan import Cell, GridBody, GridError, GridPlan, axis_loc, plan_grid
from extensions_built_in.inference_engine.http_common import EngineDep, bad_request
from extensions_built_in.inference_engine.protocol import MEDIA_TYPE, FrameDecoder, FrameEncoder, encode_frame
from extensions_built_in.inference_engine.request_checks import BadRequest
from extensions_built_in.inference_engine.request_queue import QueueFull
from extensions_built_in.inference_engine.stream import FrameStream

HEARTBEAT_S = 1.0  # as generation_api.py: bytes at least every 2 s while cells wait or load
WAIT_S = 0.25  # how long the reader waits on the cell that runs before looking at the others

router = APIRouter()


class GridRun:
    """A grid being streamed: its plan, its cells' requests, and whether the whole grid was cancelled."""

    def __init__(self, grid_id: str, plan: GridPlan):
        self.id, self.plan = grid_id, plan
        self.reqs: dict = {}  # cell index -> Request
        self.cancelled = False
        self.started = time.monotonic()

    def open_cells(self) -> list[Cell]:
        return [c for c in self.plan.run_order() if not self.reqs[c.index].stream.drained]


def runs(app) -> dict:
    if not hasattr(app.state, "grids"):
        app.state.grids = {}
    return app.state.grids


@router.post("/grid", responses={200: {"content": {MEDIA_TYPE: {}}, "description": "binary frame stream"}})
async def grid(body: GridBody, request: Request, engine: EngineDep):
    """A compare grid (docs/PROTOCOL.md "The grid stream")."""
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
    run = GridRun(engine.new_request_id(), plan)
    loop = asyncio.get_running_loop()
    try:
        for cell in plan.run_order():
            body_copy = copy.deepcopy(cell.body)
            stream = FrameStream(engine.new_request_id(), loop)
            run.reqs[cell.index] = engine.submit(body_copy["model"], body_copy["sample"], body_copy["stream"], stream)
            cell.request_id = stream.request_id
    except (BadRequest, QueueFull) as e:
        for req in run.reqs.values():
            engine.cancel(req.id)
        if isinstance(e, QueueFull):
            return JSONResponse({"detail": str(e)}, status_code=429, headers={"Retry-After": str(e.retry_after_s)})
        return bad_request(e.loc, str(e))
    runs(request.app)[run.id] = run
    return StreamingResponse(
        grid_frames(engine, run, request),
        media_type=MEDIA_TYPE,
        headers={"X-Request-Id": run.id, "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"},
    )


@router.get("/grid/jobs")
async def jobs(engine: EngineDep):
    """Training jobs with their saved LoRAs by step and their own sample prompts (grid_jobs.py)."""
    return {"jobs": training_jobs(await asyncio.to_thread(engine.checks.loras.entries))}


@router.post("/grid/{grid_id}/cancel")
async def cancel_grid(grid_id: str, request: Request, engine: EngineDep):
    """Every cell of the grid still waiting or running; the stream then ends with the cells done so far."""
    run = runs(request.app).get(grid_id)
    if run is None:
        raise HTTPException(404, f"no running grid {grid_id!r}")
    run.cancelled = True
    cancelled = [c.request_id for c in run.open_cells() if engine.cancel(c.request_id)]
    return {"grid_id": grid_id, "cancelled": cancelled}


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


# ---------------------------------------------------------------------------------------------- the stream
class CellReader:
    """One cell's frames decoded and tagged with the cell."""

    def __init__(self, cell: Cell, req):
        self.cell, self.req, self.decoder = cell, req, FrameDecoder()

    def tag(self, chunk: bytes) -> bytes:
        out = []
        for frame in self.decoder.feed(chunk) if chunk else ():
            header = dict(frame.header, cell=self.cell.index, axes=self.cell.labels)
            if frame.type == "start":
                self.cell.config = frame.header.get("config")
            elif frame.type == "result":
                self.cell.result = {k: v for k, v in frame.header.items() if k not in ("type", "seq", "t")}
            elif frame.type == "error":
                self.cell.error = {"code": frame.header.get("code"), "message": frame.header.get("message")}
            out.append(encode_frame(header, frame.payload))
        return b"".join(out)


async def grid_frames(engine, run: GridRun, request: Request):
    """The response body: the grid's start, the cells' frames (the running cell waited on, the others taken as
    they are), heartbeats, then the grid's result and end."""
    encoder = FrameEncoder(run.id)
    plan = run.plan
    readers = {c.index: CellReader(c, run.reqs[c.index]) for c in plan.cells}
    yield encoder.frame(
        "start",
        config=plan.replay(),
        output={"kind": "grid", "ext": "png"},
        latent=None,
        grid=plan.describe(),
    )
    last_emit = checked = time.monotonic()
    finished = False
    try:
        while True:
            open_cells = run.open_cells()
            if not open_cells:
                break
            first = readers[open_cells[0].index]
            parts = [first.tag(await first.req.stream.next_chunk(timeout=WAIT_S))]
            parts += [readers[c.index].tag(b"".join(readers[c.index].req.stream.take())) for c in open_cells[1:]]
            data = b"".join(parts)
            if data:
                last_emit = time.monotonic()
                yield data
            if time.monotonic() - last_emit > HEARTBEAT_S:
                last_emit = time.monotonic()
                yield encoder.frame(
                    "status", stage=first.req.stage, message=first.req.message, heartbeat=True, cell=first.cell.index
                )
            if time.monotonic() - checked > 0.5:
                checked = time.monotonic()
                if await request.is_disconnected():
                    return
        for reader in readers.values():  # frames a cell sent between the last take and its end
            rest = reader.tag(b"".join(reader.req.stream.take()))
            if rest:
                yield rest
        finished = True
        for frame in await grid_outcome(engine, run, encoder):
            yield frame
    finally:
        runs(request.app).pop(run.id, None)
        if not finished:
            for cell in plan.cells:
                req = run.reqs[cell.index]
                if not req.stream.drained:
                    engine.cancel(req.id)


async def grid_outcome(engine, run: GridRun, encoder: FrameEncoder) -> list[bytes]:
    """The grid's last frames: its ``result`` when any cell made an image, then ``error`` when the grid was
    cancelled as a whole or no cell made one, then ``end``."""
    plan = run.plan
    done = [c for c in plan.cells if c.result]
    frames = []
    if done:
        try:
            saved = await asyncio.to_thread(save_grid, plan, engine.output_folder, run.id)
        except Exception as e:  # a full disk, an unwritable folder: the cells' own results stand
            frames.append(encoder.frame("error", code="internal", message=f"saving the grid failed: {e}"))
            frames.append(encoder.frame("end", ok=False))
            return frames
        frames.append(encoder.frame("result", **result_fields(engine, run, saved)))
    if run.cancelled or not done:
        code = "cancelled" if run.cancelled else failed_code(plan)
        frames.append(encoder.frame("error", code=code, message=outcome_message(run, len(done))))
        frames.append(encoder.frame("end", ok=False))
    else:
        frames.append(encoder.frame("end", ok=True))
    return frames


def result_fields(engine, run: GridRun, saved: dict) -> dict:
    from PIL import Image

    plan, first = run.plan, saved["pages"][0]
    with Image.open(first) as im:
        width, height = im.size
    pages = [{"path": p, "url": engine.file_url(p), "name": os.path.basename(p)} for p in saved["pages"]]
    return {
        "path": first,
        "url": engine.file_url(first),
        "kind": "image",
        "ext": "png",
        "bytes": os.path.getsize(first),
        "width": width,
        "height": height,
        "timings": {"total_s": round(time.monotonic() - run.started, 3)},
        "pages": pages,
        "replay": plan.replay(),
        "replay_path": saved["replay_path"],
        "cells": [
            {
                "cell": c.index,
                "request_id": c.request_id,
                "axes": c.labels,
                "path": (c.result or {}).get("path"),
                "url": (c.result or {}).get("url"),
                "error": c.error,
            }
            for c in plan.cells
        ],
    }


def failed_code(plan: GridPlan) -> str:
    codes = {(c.error or {}).get("code") for c in plan.cells} - {None}
    return codes.pop() if len(codes) == 1 else "internal"


def outcome_message(run: GridRun, done: int) -> str:
    total = len(run.plan.cells)
    if run.cancelled:
        return f"Grid cancelled: {done} of {total} cells made"
    first: Optional[dict] = next((c.error for c in run.plan.cells if c.error), None)
    return f"No cell of the grid made an image ({(first or {}).get('message', 'no result')})"
