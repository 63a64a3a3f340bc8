"""A queued compare grid as the engine runs it: its cells' frames read back, tagged with the cell, into the grid's
frames (grid_stream.py), then the grid composed and saved. No torch.

The grid runs as a task on the server's event loop (``GridRun.start``), apart from any HTTP response: the
response that queued it and every ``GET /grid/{id}/frames`` only read its frames. The task waits on the cell
that runs (the first open one in run order) and takes the others' frames as they are, so cells that run at the
same time (requests sharing steps) stream together.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Optional

from extensions_built_in.inference_engine.grid_image import read_cell, save_grid
from extensions_built_in.inference_engine.grid_plan import Cell, GridPlan
from extensions_built_in.inference_engine.grid_stream import GridFrames
from extensions_built_in.inference_engine.protocol import FrameDecoder, FrameEncoder, encode_frame

WAIT_S = 0.25  # how long the task waits on the cell that runs before looking at the others
RECENT_GRIDS = 32  # finished grids kept for GET /grid/{id}/frames, as the engine keeps its latest requests


class CellReader:
    """One cell's frames decoded and tagged with the cell; its outcome noted on the cell."""

    def __init__(self, cell: Cell, req):
        self.cell, self.req, self.decoder = cell, req, FrameDecoder()

    def tag(self, chunk: bytes) -> list[tuple]:
        out = []
        for frame in self.decoder.feed(chunk) if chunk else ():
            header = dict(frame.header, cell=self.cell.index, axes=self.cell.labels)
            if frame.type == "start":
                self.cell.config = frame.header.get("config")
            elif frame.type == "result":
                self.cell.result = {k: v for k, v in frame.header.items() if k not in ("type", "seq", "t")}
            elif frame.type == "error":
                self.cell.error = {"code": frame.header.get("code"), "message": frame.header.get("message")}
            out.append((frame.type, encode_frame(header, frame.payload)))
        return out


class GridRun:
    """A grid once its cells are queued: the plan, the cells' requests, its frames, and whether it was cancelled
    as a whole (``POST /grid/{id}/cancel``, or the client that queued it left)."""

    def __init__(self, engine, grid_id: str, plan: GridPlan, reqs: dict):
        self.engine, self.id, self.plan, self.reqs = engine, grid_id, plan, reqs
        self.frames = GridFrames()
        self.encoder = FrameEncoder(grid_id)
        self.cancelled = False
        self.started = time.monotonic()
        self.current = None  # the request the task waits on: heartbeats say its stage
        self.task: Optional[asyncio.Task] = None
        # Each finished cell's still, read while the next cells sample: a page of 16 1024² cells read back only
        # after the last one added to the wait for the grid (docs/BENCHMARKS.md "Compare grids").
        self.stills: dict = {}

    def start(self) -> None:
        self.frames.append(
            "start",
            None,
            self.encoder.frame(
                "start", config=self.plan.replay(), output={"kind": "grid", "ext": "png"}, latent=None,
                grid=self.plan.describe(),
            ),
        )  # fmt: skip
        self.task = asyncio.get_running_loop().create_task(self.run())

    def open_cells(self) -> list[Cell]:
        return [c for c in self.plan.run_order() if not self.reqs[c.index].stream.drained]

    def cancel(self) -> list[str]:
        """The cells still waiting or running; the grid then ends with those made."""
        self.cancelled = True
        return [c.request_id for c in self.open_cells() if self.engine.cancel(c.request_id)]

    def heartbeat(self) -> bytes:
        req = self.current
        stage, message = (req.stage, req.message) if req is not None else ("queued", "Waiting in queue")
        return self.encoder.frame("status", stage=stage, message=message, heartbeat=True)

    async def run(self) -> None:
        readers = {c.index: CellReader(c, self.reqs[c.index]) for c in self.plan.cells}
        try:
            while open_cells := self.open_cells():
                first = readers[open_cells[0].index]
                self.current = first.req
                self.put(first, first.tag(await first.req.stream.next_chunk(timeout=WAIT_S)))
                for cell in open_cells[1:]:
                    reader = readers[cell.index]
                    self.put(reader, reader.tag(b"".join(reader.req.stream.take())))
            for reader in readers.values():  # frames a cell sent between the last take and its end
                self.put(reader, reader.tag(b"".join(reader.req.stream.take())))
            self.current = None
            for type, data in await self.outcome():
                self.frames.append(type, None, data)
        except Exception as e:  # a bug here must not leave the cells running unread, nor the readers hanging
            self.cancel()
            self.frames.append("error", None, self.encoder.frame("error", code="internal", message=str(e)))
            self.frames.append("end", None, self.encoder.frame("end", ok=False))

    def put(self, reader: CellReader, frames: list[tuple]) -> None:
        for type, data in frames:
            self.frames.append(type, reader.cell.index, data)
        cell = reader.cell
        if cell.result and cell.index not in self.stills:
            self.stills[cell.index] = asyncio.ensure_future(asyncio.to_thread(read_cell, cell))

    async def outcome(self) -> list[tuple]:
        """The grid's last frames: its ``result`` when any cell made an image, then ``error`` when the grid was
        cancelled as a whole or no cell made one, then ``end``."""
        done = [c for c in self.plan.cells if c.result]
        frames = []
        if done:
            try:
                read = {index: await still for index, still in self.stills.items()}
                saved = await asyncio.to_thread(save_grid, self.plan, self.engine.output_folder, self.id, read)
            except Exception as e:  # a full disk, an unwritable folder: the cells' own results stand
                message = f"saving the grid failed: {e}"
                return [("error", self.encoder.frame("error", code="internal", message=message)),
                        ("end", self.encoder.frame("end", ok=False))]  # fmt: skip
            frames.append(("result", self.encoder.frame("result", **self.result_fields(saved))))
        if self.cancelled or not done:
            code = "cancelled" if self.cancelled else failed_code(self.plan)
            frames.append(("error", self.encoder.frame("error", code=code, message=self.outcome_message(len(done)))))
            frames.append(("end", self.encoder.frame("end", ok=False)))
        else:
            frames.append(("end", self.encoder.frame("end", ok=True)))
        return frames

    def result_fields(self, saved: dict) -> dict:
        from PIL import Image

        first = saved["pages"][0]
        with Image.open(first) as im:
            width, height = im.size
        url = self.engine.file_url
        return {
            "path": first,
            "url": url(first),
            "kind": "image",
            "ext": "png",
            "bytes": os.path.getsize(first),
            "width": width,
            "height": height,
            "timings": {"total_s": round(time.monotonic() - self.started, 3)},
            "pages": [{"path": p, "url": url(p), "name": os.path.basename(p)} for p in saved["pages"]],
            "replay": self.plan.replay(),
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
                for c in self.plan.cells
            ],
        }

    def outcome_message(self, done: int) -> str:
        total = len(self.plan.cells)
        if self.cancelled:
            return f"Grid cancelled: {done} of {total} cells made"
        first: Optional[dict] = next((c.error for c in self.plan.cells if c.error), None)
        return f"No cell of the grid made an image ({(first or {}).get('message', 'no result')})"


def failed_code(plan: GridPlan) -> str:
    codes = {(c.error or {}).get("code") for c in plan.cells} - {None}
    return codes.pop() if len(codes) == 1 else "internal"


class GridRuns:
    """The app's grids by id: running ones, and the latest finished ones for readers that come back."""

    def __init__(self):
        self._runs: dict = {}

    def add(self, run: GridRun) -> None:
        self._runs[run.id] = run
        finished = [k for k, r in self._runs.items() if r.frames.closed]
        for key in finished[: max(0, len(finished) - RECENT_GRIDS)]:
            del self._runs[key]

    def get(self, grid_id: str) -> Optional[GridRun]:
        return self._runs.get(grid_id)
