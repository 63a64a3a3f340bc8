"""Whole frames out of an engine's byte stream, and the two frames that end a stream a replica dropped.

A replica relays its engine's frames to the ingress as Ray stream items. Cutting them at frame boundaries
(never inside a frame) means the ingress always holds whole frames, so when a replica dies mid-stream the
ingress can still end its client's stream with a valid ``error`` + ``end`` instead of a truncated frame. The
bytes are the engine's own: only where the chunks break changes.

Headers are not parsed here (the relay must stay cheap per step); ``last_frame`` parses the one frame it needs.
"""

from __future__ import annotations

import struct
import time
from typing import Optional

from extensions_built_in.inference_engine.protocol import (
    DEFAULT_MAX_HEADER,
    DEFAULT_MAX_PAYLOAD,
    Frame,
    ProtocolError,
    encode_frame,
    read_frames,
)

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class FrameCutter:
    """Feed chunks as they come; get back the bytes of every frame they completed, joined."""

    def __init__(self):
        self._buf = bytearray()

    def feed(self, data: bytes) -> bytes:
        self._buf += data
        end = _whole_frames_end(self._buf)
        if end == 0:
            return b""
        whole = bytes(self._buf[:end])
        del self._buf[:end]
        return whole

    @property
    def pending(self) -> int:
        """Bytes of a frame not yet complete (left over when a stream ends early)."""
        return len(self._buf)


def _whole_frames_end(buf: bytearray) -> int:
    """Offset just past the last complete frame in ``buf``; lengths are checked as the decoder checks them."""
    pos = 0
    while len(buf) - pos >= 4:
        header_len = _U32.unpack_from(buf, pos)[0]
        if header_len == 0 or header_len > DEFAULT_MAX_HEADER:
            raise ProtocolError(f"header_len {header_len} is outside 1..{DEFAULT_MAX_HEADER}", pos)
        if len(buf) - pos < 4 + header_len + 8:
            break
        payload_len = _U64.unpack_from(buf, pos + 4 + header_len)[0]
        if payload_len > DEFAULT_MAX_PAYLOAD:
            raise ProtocolError(f"payload_len {payload_len} exceeds the {DEFAULT_MAX_PAYLOAD} limit", pos)
        size = 4 + header_len + 8 + payload_len
        if len(buf) - pos < size:
            break
        pos += size
    return pos


def last_frame(chunk: bytes) -> Optional[Frame]:
    """The last frame of a chunk of whole frames (None for an empty chunk)."""
    frames = read_frames(chunk) if chunk else []
    return frames[-1] if frames else None


def closing_frames(request_id: str, last: Optional[Frame], message: str) -> bytes:
    """``error`` (code ``internal``) + ``end {ok: false}``, numbered after the last frame the client got. Nothing
    when that frame was already an ``end``: the stream was complete."""
    if last is not None and last.type == "end":
        return b""
    seq = last.seq + 1 if last is not None else 0
    request_id = last.request_id if last is not None else request_id
    t = int(time.time() * 1000)
    error = {"type": "error", "request_id": request_id, "seq": seq, "t": t, "code": "internal", "message": message}
    end = {"type": "end", "request_id": request_id, "seq": seq + 1, "t": t, "ok": False}
    return encode_frame(error) + encode_frame(end)
