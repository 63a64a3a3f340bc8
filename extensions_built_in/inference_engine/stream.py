"""FrameStream: one request's frames, written by the generating thread and read by the HTTP response.

The generating (main) thread must never wait on a client, and a slow client must not grow memory without
bound. So frames go into a small ordered buffer where ``latent`` frames are droppable: a new latent frame
replaces an older one that is still unsent (latest wins), while every other frame is kept in order. ``seq`` is
stamped under the same lock that orders the buffer, so delivered ``seq`` values always increase (with gaps
where a latent frame was dropped).

A stream has one reader per HTTP response reading it: the ``POST /generate`` response (the main reader), and one
per ``GET /requests/{id}/frames`` that attached later. A reader that attaches gets the frames a page needs to
draw the run as it stands (``start``, the latest ``status``, ``progress`` and ``latent``, every ``result``, and
the ``error``/``end`` if it is over), then every frame from then on. A run whose main reader is dropped
(``?detach=1``) belongs to the engine: nobody's disconnect cancels it.

Neither torch nor HTTP here: the engine calls ``emit``; the server awaits ``next_chunk``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from typing import Any, Callable, Optional

from extensions_built_in.inference_engine.protocol import FrameEncoder

KEPT_LATEST = ("status", "progress", "latent")  # an attaching reader needs only the newest of each
KEPT_ALL = ("start", "result", "error", "end")


class Reader:
    """One response's unsent frames, and the event that wakes it."""

    def __init__(self, loop: Optional[asyncio.AbstractEventLoop]):
        self.frames: deque = deque()  # (type, bytes)
        self.wakeup = asyncio.Event() if loop is not None else None


class FrameStream:
    def __init__(self, request_id: str, loop: Optional[asyncio.AbstractEventLoop] = None):
        self.request_id = request_id
        self._encoder = FrameEncoder(request_id)
        self._lock = threading.Lock()
        self._loop = loop
        self.main: Optional[Reader] = Reader(loop)
        self._readers: list[Reader] = [self.main]
        # (type, bytes): what an attaching reader is sent first, in the order they were emitted (a kind kept only
        # at its newest leaves its place and is appended again)
        self._kept: list = []
        self.closed = False  # an ``end`` frame was emitted; nothing follows it
        self.dropped_latents = 0
        self.last_emit = time.monotonic()
        self._held = 0  # > 0 while the generating thread batches a step's frames
        self._ending = False  # ``finish`` has begun: a second caller must not send a second error frame
        self.on_finish: Optional[Callable[[bool, Optional[str]], None]] = None  # (ok, error code); metrics.py

    # ------------------------------------------------------------------ writer side (any thread)
    @contextlib.contextmanager
    def held(self):
        """Frames emitted inside go out together: one wake-up of the server's loop per step, not one per
        frame. Each wake-up makes the loop thread take the GIL from the generating thread while it still
        launches the step's kernels (with a wake-up per frame the hook took 1.49 ms per step with a latent
        frame, 0.24 ms without: docs/MEASURED.md "The streaming hook's wake-ups")."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held:
                self._notify()

    def emit(self, type: str, **fields: Any) -> bool:
        """Append a frame; returns False once the stream has ended (late frames are discarded, not errors)."""
        with self._lock:
            if self.closed:
                return False
            self._append(type, self._encoder.frame(type, **fields))
            self.closed = type == "end"
        self._notify()
        return True

    def emit_latent(self, step: int, array, layout: str, **fields: Any) -> bool:
        with self._lock:
            if self.closed:
                return False
            self._append("latent", self._encoder.latent(step, array, layout, **fields))
        self._notify()
        return True

    def _append(self, type: str, data: bytes) -> None:
        """Under the lock. A latent frame a reader has not taken yet is replaced: the newer one wins."""
        for reader in self._readers:
            if type == "latent":
                for i, (kind, _) in enumerate(reader.frames):
                    if kind == "latent":
                        del reader.frames[i]
                        self.dropped_latents += 1
                        break
            reader.frames.append((type, data))
        if type in KEPT_LATEST:
            self._kept = [k for k in self._kept if k[0] != type]
        if type in KEPT_LATEST or type in KEPT_ALL:
            self._kept.append((type, data))
        self.last_emit = time.monotonic()

    def finish(self, ok: bool, error_code: Optional[str] = None, message: str = "") -> None:
        """End the stream (idempotent): an ``error`` frame first when not ok, then ``end``. ``on_finish`` runs
        once, before ``end``: a client that has read the end finds the request already counted."""
        with self._lock:
            if self.closed or self._ending:
                return
            self._ending = True
        code = None if ok else error_code or "internal"
        if not ok:
            self.emit("error", code=code, message=message)
        try:
            if self.on_finish is not None:
                self.on_finish(ok, code)
        finally:
            self.emit("end", ok=ok)

    def _notify(self) -> None:
        if self._loop is None or self._held:
            return
        for reader in list(self._readers):
            try:
                self._loop.call_soon_threadsafe(reader.wakeup.set)
            except RuntimeError:  # the server's loop is gone (shutdown); nobody is reading any more
                return

    # ------------------------------------------------------------------ readers
    def attach(self) -> Reader:
        """A new reader: the run as it stands, then everything from now on."""
        reader = Reader(self._loop)
        with self._lock:
            reader.frames.extend(self._kept)
            if not self.closed:
                self._readers.append(reader)
        return reader

    def release(self, reader: Reader) -> None:
        """A reader's response ended: frames stop piling up for it."""
        with self._lock:
            if reader in self._readers:
                self._readers.remove(reader)
            if reader is self.main:
                self.main = None

    @property
    def detached(self) -> bool:
        """Nobody holds the main reader: the run is the engine's (``?detach=1``)."""
        return self.main is None

    # ------------------------------------------------------------------ reader side (the server's event loop)
    def take(self, reader: Optional[Reader] = None) -> list[bytes]:
        reader = reader or self.main
        with self._lock:
            if reader is None:
                return []
            frames = [data for _, data in reader.frames]
            reader.frames.clear()
            return frames

    def drained_for(self, reader: Optional[Reader]) -> bool:
        with self._lock:
            return self.closed and (reader is None or not reader.frames)

    @property
    def drained(self) -> bool:
        """The main reader has had every frame (a detached run: it has ended)."""
        return self.drained_for(self.main)

    async def next_chunk(self, timeout: float, reader: Optional[Reader] = None) -> bytes:
        """Everything buffered, as one chunk; b"" when ``timeout`` passed with nothing new."""
        reader = reader or self.main
        frames = self.take(reader)
        if frames or reader is None:
            return b"".join(frames)
        reader.wakeup.clear()
        frames = self.take(reader)  # re-check after clearing, or a notify in between would be lost
        if not frames:
            try:
                await asyncio.wait_for(reader.wakeup.wait(), timeout)
            except asyncio.TimeoutError:
                return b""
            frames = self.take(reader)
        return b"".join(frames)

    def collect(self) -> list[bytes]:
        """For callers without an event loop (tests, ``wait=1``): what is buffered now."""
        return self.take()
