"""Binary frames streamed by ``POST /generate`` (docs/PROTOCOL.md).

One generation is one chunked HTTP response holding a sequence of frames::

    u32 header_len | header (UTF-8 JSON object) | u64 payload_len | payload

All integers are little-endian. A binary envelope (rather than NDJSON or SSE) lets ``latent`` frames carry raw
float16 tensors without base64, while every other frame stays a small JSON header with an empty payload.
``ui/src/utils/engineStream.ts`` mirrors this module; ``testing/fixtures/protocol_vectors.json`` holds the byte
vectors both sides are tested against.

The writer is strict and the reader is lenient: :func:`encode_frame` checks per-type fields and enumerations so
the engine can never emit a frame a client would misread, while :class:`FrameDecoder` checks only the envelope
(lengths, JSON object, ``type``/``request_id``/``seq``/``t``) so a client keeps working when a later engine adds
fields. ``seq`` may have gaps: ``latent`` frames are droppable under backpressure (``stream.py``).

No torch here: the server must not touch it. numpy is imported only where a tensor is built or read.
"""

from __future__ import annotations

import json
import math
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any, AsyncIterable, AsyncIterator, Callable, Iterable, Iterator

__all__ = [
    "ERROR_CODES",
    "ERROR_HTTP_STATUS",
    "FRAME_TYPES",
    "LAYOUTS",
    "MEDIA_TYPE",
    "STAGES",
    "Frame",
    "FrameDecoder",
    "FrameEncoder",
    "ProtocolError",
    "aiter_frames",
    "encode_frame",
    "iter_frames",
    "read_frames",
]

MEDIA_TYPE = "application/x-aitk-frames"

FRAME_TYPES = ("start", "status", "progress", "latent", "result", "error", "end")
STAGES = ("queued", "loading", "encoding", "sampling", "decoding", "saving")
ERROR_CODES = ("bad_request", "cancelled", "oom", "load_failed", "too_large", "internal")
# The HTTP status ``POST /generate?wait=1`` answers an error frame with (a streamed response is already 200).
ERROR_HTTP_STATUS = {
    "bad_request": 422,
    "cancelled": 409,
    "oom": 507,
    "load_failed": 424,
    "too_large": 507,
    "internal": 500,
}
assert tuple(ERROR_HTTP_STATUS) == ERROR_CODES
LAYOUTS = ("BCHW", "BCFHW", "BLC")
LATENT_DTYPE = "float16"

ENVELOPE_KEYS = ("type", "request_id", "seq", "t")

# What the engine must send per type (the writer's contract; the reader does not insist on it).
REQUIRED_FIELDS = {
    "start": ("config", "output", "latent"),
    "status": ("stage", "message"),
    "progress": ("step", "total", "eta_s", "it_s"),
    "latent": ("step", "shape", "dtype", "layout"),
    "result": ("path", "url", "kind", "ext", "bytes", "timings"),
    "error": ("code", "message"),
    "end": ("ok",),
}
ENUM_FIELDS = {
    ("status", "stage"): STAGES,
    ("error", "code"): ERROR_CODES,
    ("latent", "layout"): LAYOUTS,
    ("latent", "dtype"): (LATENT_DTYPE,),
}

DEFAULT_MAX_HEADER = 1 << 20
DEFAULT_MAX_PAYLOAD = 1 << 31

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class ProtocolError(ValueError):
    """A stream or frame that breaks the wire format; ``offset`` is the stream byte offset when known."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        if offset is not None:
            message = f"{message} (at byte offset {offset})"
        super().__init__(message)
        self.offset = offset


# --------------------------------------------------------------------------------------------------- encoding


def encode_frame(header: dict, payload: bytes = b"") -> bytes:
    """Serialise one frame, refusing anything a client could not read back unambiguously."""
    _check_envelope(header, offset=None)
    size = memoryview(payload).nbytes
    _check_fields(header, size)
    try:
        # allow_nan=False: JavaScript's JSON.parse rejects NaN/Infinity, so the engine must send null.
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"cannot encode {header['type']!r} header as JSON: {exc}") from None
    raw = text.encode("utf-8")
    if len(raw) > DEFAULT_MAX_HEADER:
        raise ProtocolError(f"{header['type']!r} header is {len(raw)} bytes, over the {DEFAULT_MAX_HEADER} limit")
    return b"".join((_U32.pack(len(raw)), raw, _U64.pack(size), payload))


def _check_fields(header: dict, payload_size: int) -> None:
    """Per-type checks: cheap here, and they turn an engine bug into an exception instead of a broken UI."""
    kind = header["type"]
    missing = [k for k in REQUIRED_FIELDS[kind] if k not in header]
    if missing:
        raise ProtocolError(f"{kind!r} frame is missing field(s) {', '.join(missing)}")
    for (ftype, field), allowed in ENUM_FIELDS.items():
        if ftype == kind and header[field] not in allowed:
            raise ProtocolError(f"{kind!r} frame has {field}={header[field]!r}; expected one of {', '.join(allowed)}")
    if kind == "latent":
        expected = _latent_nbytes(header["shape"])
        if payload_size != expected:
            raise ProtocolError(f"latent payload is {payload_size} bytes but shape {header['shape']} needs {expected}")
    elif payload_size:
        raise ProtocolError(f"{kind!r} frames carry no payload, got {payload_size} bytes")


def _latent_nbytes(shape: Any) -> int:
    if not isinstance(shape, (list, tuple)) or not all(_is_int(d) and d >= 0 for d in shape):
        raise ProtocolError(f"latent shape must be a list of non-negative integers, got {shape!r}")
    return math.prod(shape) * 2


class FrameEncoder:
    """Frames for one request: owns ``seq`` and stamps ``t`` so callers cannot get either wrong.

    Thread-safe: the queue ticker (server thread) and the step hook (main thread) may share one encoder.
    """

    def __init__(self, request_id: str, clock: Callable[[], float] = time.time) -> None:
        self.request_id = request_id
        self._clock = clock
        self._seq = 0
        self._lock = threading.Lock()

    @property
    def seq(self) -> int:
        """The seq the next frame will get."""
        return self._seq

    def frame(self, type: str, payload: bytes = b"", **fields: Any) -> bytes:
        reserved = set(fields) & set(ENVELOPE_KEYS)
        if reserved:
            raise ProtocolError(f"{', '.join(sorted(reserved))} are set by FrameEncoder, not by the caller")
        with self._lock:
            header = {"type": type, "request_id": self.request_id, "seq": self._seq, "t": int(self._clock() * 1000)}
            header.update(fields)
            data = encode_frame(header, payload)
            self._seq += 1  # only after a successful encode, so a rejected frame leaves no gap
        return data

    def latent(self, step: int, array: Any, layout: str, **fields: Any) -> bytes:
        """Encode a preview tensor; anything ``numpy.asarray`` accepts (a CPU torch tensor too) will do."""
        import numpy as np

        if layout not in LAYOUTS:
            raise ProtocolError(f"latent layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
        arr = np.ascontiguousarray(np.asarray(array), dtype="<f2")
        if arr.ndim != len(layout):
            raise ProtocolError(f"latent layout {layout} needs {len(layout)} dims, array has shape {list(arr.shape)}")
        shape = [int(d) for d in arr.shape]
        return self.frame("latent", arr.tobytes(), step=step, shape=shape, dtype=LATENT_DTYPE, layout=layout, **fields)


# --------------------------------------------------------------------------------------------------- decoding


@dataclass(frozen=True)
class Frame:
    """One decoded frame; ``header`` is the full JSON object, ``type`` repeats ``header['type']``."""

    type: str
    header: dict
    payload: bytes = b""

    @property
    def request_id(self) -> str:
        return self.header["request_id"]

    @property
    def seq(self) -> int:
        return self.header["seq"]

    def array(self):
        """The latent tensor as a read-only float16 view of the payload (no copy)."""
        import numpy as np

        if self.type != "latent":
            raise ProtocolError(f"only latent frames carry an array, this one is {self.type!r}")
        if self.header.get("dtype") != LATENT_DTYPE:
            raise ProtocolError(f"latent dtype {self.header.get('dtype')!r} is not {LATENT_DTYPE!r}")
        shape = self.header.get("shape")
        expected = _latent_nbytes(shape)
        if len(self.payload) != expected:
            raise ProtocolError(
                f"latent frame seq {self.header.get('seq')}: payload is {len(self.payload)} bytes "
                f"but shape {shape} float16 needs {expected}"
            )
        return np.frombuffer(self.payload, dtype="<f2").reshape(shape)

    def to_bytes(self) -> bytes:
        return encode_frame(self.header, self.payload)


class FrameDecoder:
    """Incremental reader: feed it chunks as they arrive, at any byte boundary.

    Bytes are appended to one bytearray and consumed through an offset, so a stream costs O(total bytes) however
    it is chunked. Length prefixes are checked as soon as they arrive, before anything is buffered on their
    behalf, so a hostile length cannot make the reader wait for (or allocate) gigabytes. After any error the
    decoder refuses further input: resynchronising a length-prefixed stream is guesswork.
    """

    _COMPACT_AT = 1 << 16

    def __init__(self, max_header: int = DEFAULT_MAX_HEADER, max_payload: int = DEFAULT_MAX_PAYLOAD) -> None:
        self.max_header = max_header
        self.max_payload = max_payload
        self._buf = bytearray()
        self._pos = 0  # read position in _buf
        self._base = 0  # stream offset of _buf[0]
        self._frame_start = 0  # stream offset of the frame being read
        self._header_len: int | None = None
        self._header: dict | None = None
        self._payload_len: int | None = None
        self._error: ProtocolError | None = None
        self._closed = False

    def feed(self, data: bytes) -> list[Frame]:
        """Return every frame completed by ``data`` (possibly none)."""
        self._check_usable()
        self._buf += data
        frames: list[Frame] = []
        try:
            while (frame := self._next()) is not None:
                frames.append(frame)
        except ProtocolError as exc:
            self._error = exc
            raise
        self._compact()
        return frames

    def close(self) -> None:
        """End of stream: anything still buffered is a truncated frame. Closing twice is harmless."""
        if self._closed and self._error is None:
            return
        self._check_usable()
        self._closed = True
        pending = len(self._buf) - self._pos
        if pending or self._header_len is not None:
            self._error = ProtocolError(
                f"stream ended inside a frame: {self._stream_offset() - self._frame_start + pending} byte(s) of "
                f"an incomplete frame ({self._missing_part()})",
                self._frame_start,
            )
            raise self._error

    def _check_usable(self) -> None:
        if self._error is not None:
            raise ProtocolError(f"decoder is unusable after an earlier error: {self._error}")
        if self._closed:
            raise ProtocolError("decoder is closed")

    def _next(self) -> Frame | None:
        """Advance through the frame's four parts as far as the buffer allows; a frame when all are in."""
        if self._header_len is None:
            if (raw := self._take(4)) is None:
                return None
            self._header_len = self._check_header_len(_U32.unpack(raw)[0])
        if self._header is None:
            if (raw := self._take(self._header_len)) is None:
                return None
            self._header = self._parse_header(raw)
        if self._payload_len is None:
            if (raw := self._take(8)) is None:
                return None
            self._payload_len = self._check_payload_len(_U64.unpack(raw)[0])
        if (payload := self._take(self._payload_len)) is None:
            return None
        frame = Frame(self._header["type"], self._header, payload)
        self._header_len = self._header = self._payload_len = None
        self._frame_start = self._stream_offset()
        return frame

    def _take(self, n: int) -> bytes | None:
        """Copy out the next ``n`` bytes once; the temporary view is gone before the buffer is resized again."""
        if len(self._buf) - self._pos < n:
            return None
        with memoryview(self._buf) as view:
            data = bytes(view[self._pos : self._pos + n])
        self._pos += n
        return data

    def _compact(self) -> None:
        """Drop consumed bytes once they dominate the buffer: amortised O(1) per byte."""
        if self._pos and (self._pos == len(self._buf) or self._pos >= max(self._COMPACT_AT, len(self._buf) // 2)):
            del self._buf[: self._pos]
            self._base += self._pos
            self._pos = 0

    def _stream_offset(self) -> int:
        return self._base + self._pos

    def _missing_part(self) -> str:
        if self._header_len is None:
            return "header_len"
        if self._header is None:
            return f"header of {self._header_len} bytes"
        if self._payload_len is None:
            return "payload_len"
        return f"payload of {self._payload_len} bytes"

    def _check_header_len(self, n: int) -> int:
        if n == 0 or n > self.max_header:
            raise ProtocolError(f"header_len {n} is outside 1..{self.max_header}", self._frame_start)
        return n

    def _check_payload_len(self, n: int) -> int:
        if n > self.max_payload:
            raise ProtocolError(f"payload_len {n} exceeds the {self.max_payload} limit", self._stream_offset() - 8)
        return n

    def _parse_header(self, raw: bytes) -> dict:
        offset = self._frame_start + 4
        try:
            text = str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"header is not UTF-8: {exc.reason} at header byte {exc.start}", offset) from None
        try:
            header = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            raise ProtocolError(f"header is not valid JSON: {exc}", offset) from None
        _check_envelope(header, offset)
        return header


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _check_envelope(header: Any, offset: int | None) -> None:
    """The keys every frame has; everything else about a header is the frame type's business."""
    if not isinstance(header, dict):
        raise ProtocolError(f"header must be a JSON object, got {type(header).__name__}", offset)
    missing = [k for k in ENVELOPE_KEYS if k not in header]
    if missing:
        raise ProtocolError(f"header is missing required key(s) {', '.join(missing)}", offset)
    if header["type"] not in FRAME_TYPES:
        raise ProtocolError(f"unknown frame type {header['type']!r}; expected one of {', '.join(FRAME_TYPES)}", offset)
    if not isinstance(header["request_id"], str):
        raise ProtocolError(f"request_id must be a string, got {header['request_id']!r}", offset)
    if not _is_int(header["seq"]) or header["seq"] < 0:
        raise ProtocolError(f"seq must be a non-negative integer, got {header['seq']!r}", offset)
    if not _is_int(header["t"]):
        raise ProtocolError(f"t must be an integer (ms), got {header['t']!r}", offset)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --------------------------------------------------------------------------------------------------- wrappers


def iter_frames(chunks: Iterable[bytes]) -> Iterator[Frame]:
    """Frames from a chunk iterator (e.g. ``httpx.Response.iter_bytes()``); raises if the stream is cut short."""
    decoder = FrameDecoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    decoder.close()


async def aiter_frames(chunks: AsyncIterable[bytes]) -> AsyncIterator[Frame]:
    """Async twin of :func:`iter_frames` (e.g. ``httpx.Response.aiter_bytes()``)."""
    decoder = FrameDecoder()
    async for chunk in chunks:
        for frame in decoder.feed(chunk):
            yield frame
    decoder.close()


def read_frames(data: bytes) -> list[Frame]:
    """Every frame of a complete buffer; raises if it ends mid-frame."""
    decoder = FrameDecoder()
    frames = decoder.feed(data)
    decoder.close()
    return frames


def main(argv: list[str] | None = None) -> int:
    """``python -m extensions_built_in.inference_engine.protocol frames.bin``: one line per frame (e.g. from curl)."""
    import sys

    paths = argv if argv is not None else sys.argv[1:]
    if len(paths) != 1:
        print("usage: python -m extensions_built_in.inference_engine.protocol FRAMES_FILE", file=sys.stderr)
        return 2
    with open(paths[0], "rb") as f:
        try:
            frames = read_frames(f.read())
        except ProtocolError as e:
            print(f"protocol error: {e}", file=sys.stderr)
            return 1
    for frame in frames:
        fields = {k: v for k, v in frame.header.items() if k not in ENVELOPE_KEYS + ("config", "latent")}
        extra = f" payload={len(frame.payload)}B" if frame.payload else ""
        print(f"{frame.seq:4d} {frame.type:8s} {json.dumps(fields, ensure_ascii=False)[:160]}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
