"""GridFrames: one compare grid's frames, kept for every reader that attaches, as FrameStream keeps one request's.

A grid runs as a task of the server's event loop (grid_run.py), not inside one HTTP response, so that it belongs
to the engine once queued: the response that queued it reads it, a page that reloads attaches again with
``GET /grid/{id}/frames``, and the grid is composed and saved at the end whoever still reads. A reader that
attaches gets what a page needs to draw the grid as it stands: the grid's frames, every cell's ``start``,
``result``, ``error`` and ``end``, and each cell's newest ``status``, ``progress`` and ``latent`` (no latents once
the grid has ended); then every frame as it comes. A reader's unsent latent frame of a cell is replaced by that
cell's next one (latest wins), so a slow reader holds at most one latent per cell. Everything here runs on the
event loop's thread: no lock.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Optional

KEPT_LATEST = ("status", "progress", "latent")  # per cell, the newest only


class GridReader:
    def __init__(self):
        self.frames: deque = deque()  # (type, cell, bytes)
        self.wakeup = asyncio.Event()


class GridFrames:
    def __init__(self):
        self._kept: list = []  # (order, type, cell, bytes)
        self._order = 0
        self._readers: list[GridReader] = []
        self.closed = False  # the grid's ``end`` is in
        self.last_emit = time.monotonic()

    def append(self, type: str, cell: Optional[int], data: bytes) -> None:
        """One encoded frame; ``cell`` None for the grid's own."""
        if self.closed:
            return
        for reader in self._readers:
            if type == "latent":
                for i, (kind, owner, _) in enumerate(reader.frames):
                    if kind == "latent" and owner == cell:
                        del reader.frames[i]
                        break
            reader.frames.append((type, cell, data))
            reader.wakeup.set()
        if cell is not None and type in KEPT_LATEST:
            self._kept = [k for k in self._kept if not (k[1] == type and k[2] == cell)]
        self._kept.append((self._order, type, cell, data))
        self._order += 1
        self.last_emit = time.monotonic()
        if cell is None and type == "end":
            self.closed = True
            # a finished grid is drawn from its results: the cells' latents (up to 64, each a denoiser's latent)
            # would only hold memory while the grid is kept for late readers
            self._kept = [k for k in self._kept if k[1] != "latent"]

    def attach(self) -> GridReader:
        """A reader: the grid as it stands, then everything from now on."""
        reader = GridReader()
        reader.frames.extend((t, c, d) for _, t, c, d in sorted(self._kept, key=lambda k: k[0]))
        if not self.closed:
            self._readers.append(reader)
        reader.wakeup.set()
        return reader

    def release(self, reader: GridReader) -> None:
        if reader in self._readers:
            self._readers.remove(reader)

    def drained_for(self, reader: GridReader) -> bool:
        return self.closed and not reader.frames

    async def next_chunk(self, reader: GridReader, timeout: float) -> bytes:
        """Everything buffered for ``reader``, as one chunk; b"" when ``timeout`` passed with nothing new."""
        if not reader.frames:
            reader.wakeup.clear()
            try:
                await asyncio.wait_for(reader.wakeup.wait(), timeout)
            except asyncio.TimeoutError:
                return b""
        data = b"".join(d for _, _, d in reader.frames)
        reader.frames.clear()
        return data
