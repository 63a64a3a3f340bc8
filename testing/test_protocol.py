"""Wire protocol: real bytes in, real bytes out (docs/PROTOCOL.md, protocol.py)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import random
import struct
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from extensions_built_in.inference_engine import protocol
from extensions_built_in.inference_engine.protocol import (
    ERROR_CODES,
    FRAME_TYPES,
    LAYOUTS,
    MEDIA_TYPE,
    STAGES,
    Frame,
    FrameDecoder,
    FrameEncoder,
    ProtocolError,
    aiter_frames,
    encode_frame,
    iter_frames,
    read_frames,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).with_name("fixtures")


def _load_vector_script():
    spec = importlib.util.spec_from_file_location("make_protocol_vectors", FIXTURES / "make_protocol_vectors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _latent_array() -> np.ndarray:
    return (np.arange(24, dtype=np.float32).reshape(1, 4, 2, 3) - 12) / 8


def _stream(request_id: str = "r1") -> tuple[bytes, list[Frame]]:
    """A full request's frames, as bytes and as the frames they must decode to."""
    enc = FrameEncoder(request_id, clock=lambda: 1_700_000_000.123)
    datas = [
        enc.frame("start", config={"model": {"arch": "sd1"}}, output={"kind": "image", "ext": "png"}, latent=None),
        enc.frame("status", stage="queued", message="waiting", position=2),
        enc.frame("status", stage="sampling", message="Sampling — 日本"),
        enc.frame("progress", step=1, total=2, eta_s=0.5, it_s=2.0),
        enc.latent(1, _latent_array(), "BCHW"),
        enc.frame("progress", step=2, total=2, eta_s=0.0, it_s=2.0),
        enc.frame(
            "result",
            path="o/r1.png",
            url="/api/files/o/r1.png",
            kind="image",
            ext="png",
            width=64,
            height=64,
            bytes=10,
            timings={"sample_s": 1.0},
        ),
        enc.frame("end", ok=True),
    ]
    frames = [read_frames(d)[0] for d in datas]
    return b"".join(datas), frames


def _header(**fields) -> dict:
    return {"type": "end", "request_id": "r", "seq": 0, "t": 0, "ok": True} | fields


def _raw(header: bytes, payload: bytes = b"", payload_len: int | None = None) -> bytes:
    n = len(payload) if payload_len is None else payload_len
    return struct.pack("<I", len(header)) + header + struct.pack("<Q", n) + payload


# ------------------------------------------------------------------------------------------------ constants


def test_constants_match_design():
    assert MEDIA_TYPE == "application/x-aitk-frames"
    assert FRAME_TYPES == ("start", "status", "progress", "latent", "result", "error", "end")
    assert STAGES == ("queued", "loading", "encoding", "sampling", "decoding", "saving")
    assert ERROR_CODES == ("bad_request", "cancelled", "oom", "load_failed", "too_large", "internal")
    assert LAYOUTS == ("BCHW", "BCFHW", "BLC")
    assert issubclass(ProtocolError, ValueError)


def test_module_imports_neither_torch_nor_numpy():
    """The server imports this module and must never pull in torch; numpy only when a tensor is touched."""
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('p', {str(Path(protocol.__file__))!r})\n"
        "m = sys.modules['p'] = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "assert 'numpy' not in sys.modules and 'torch' not in sys.modules, sorted(sys.modules)\n"
        "import extensions_built_in.inference_engine.protocol\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


# ------------------------------------------------------------------------------------------------ encoding


def test_exact_byte_layout_little_endian():
    header = b'{"type":"end","request_id":"r1","seq":3,"t":1000,"ok":true}'
    expected = struct.pack("<I", len(header)) + header + struct.pack("<Q", 0)
    assert encode_frame({"type": "end", "request_id": "r1", "seq": 3, "t": 1000, "ok": True}) == expected
    assert expected[:4] == bytes([len(header), 0, 0, 0])  # little-endian, spelled out


def test_exact_byte_layout_with_payload_and_utf8():
    enc = FrameEncoder("é", clock=lambda: 2.0)
    enc.frame("end", ok=False)  # seq 0
    data = enc.latent(7, np.array([[[1.0, -2.0]]]), "BLC")
    header = (
        '{"type":"latent","request_id":"é","seq":1,"t":2000,"step":7,"shape":[1,1,2],"dtype":"float16","layout":"BLC"}'
    )
    raw = header.encode("utf-8")
    payload = bytes.fromhex("003c") + bytes.fromhex("00c0")  # 1.0 and -2.0 as little-endian float16
    assert data == struct.pack("<I", len(raw)) + raw + struct.pack("<Q", 4) + payload
    assert data[4 + len(raw) : 12 + len(raw)] == b"\x04" + b"\x00" * 7


def test_round_trip_every_frame_type():
    data, frames = _stream()
    decoded = read_frames(data)
    assert decoded == frames
    assert {f.type for f in decoded} == set(FRAME_TYPES) - {"error"}
    err = read_frames(encode_frame(_header(type="error", code="cancelled", message="stopped")))[0]
    assert (err.type, err.header["code"], err.header["message"]) == ("error", "cancelled", "stopped")
    for frame in decoded:
        assert frame.request_id == "r1"
        assert frame.type == frame.header["type"]
        assert frame.to_bytes() == encode_frame(frame.header, frame.payload)
        assert frame.payload == b"" or frame.type == "latent"
    assert b"".join(f.to_bytes() for f in decoded) == data
    assert decoded[2].header["message"] == "Sampling — 日本"


def test_latent_payload_round_trips_float16_exactly():
    rng = np.random.default_rng(0)
    for layout, shape in (("BCHW", (1, 4, 8, 6)), ("BCFHW", (1, 16, 3, 4, 5)), ("BLC", (2, 7, 64))):
        arr = rng.standard_normal(shape).astype(np.float16)
        arr.flat[:3] = [np.float16(65504), np.float16(-0.0), np.float16(2**-24)]
        frame = read_frames(FrameEncoder("r").latent(3, arr, layout))[0]
        assert frame.header | {"t": 0} == {
            "type": "latent",
            "request_id": "r",
            "seq": 0,
            "t": 0,
            "step": 3,
            "shape": list(shape),
            "dtype": "float16",
            "layout": layout,
        }
        out = frame.array()
        assert out.dtype == np.float16 and out.shape == shape
        assert out.tobytes() == arr.tobytes()  # bit-exact, including -0.0 and the subnormal


def test_latent_converts_float32_and_non_contiguous_input():
    arr = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4).transpose(0, 1, 3, 2)
    frame = read_frames(FrameEncoder("r").latent(0, arr, "BCHW"))[0]
    np.testing.assert_array_equal(frame.array(), arr.astype(np.float16))


def test_encoder_stamps_seq_and_t():
    enc = FrameEncoder("abc")
    before = time.time() * 1000
    frames = [read_frames(enc.frame("progress", step=i, total=5, eta_s=None, it_s=None))[0] for i in range(5)]
    after = time.time() * 1000
    assert [f.seq for f in frames] == [0, 1, 2, 3, 4]
    assert enc.seq == 5
    for f in frames:
        assert type(f.header["t"]) is int
        assert before - 1 <= f.header["t"] <= after + 1


def test_encoder_rejected_frame_leaves_no_seq_gap():
    enc = FrameEncoder("r")
    with pytest.raises(ProtocolError):
        enc.frame("status", stage="dreaming", message="x")
    assert read_frames(enc.frame("end", ok=True))[0].seq == 0


def test_encoder_refuses_reserved_fields():
    with pytest.raises(ProtocolError, match="seq"):
        FrameEncoder("r").frame("end", ok=True, seq=9)


@pytest.mark.parametrize(
    ("header", "payload", "needle"),
    [
        ({"type": "end", "request_id": "r", "seq": 0, "ok": True}, b"", "missing required key(s) t"),
        (_header(type="bogus"), b"", "unknown frame type 'bogus'"),
        (_header(seq=-1), b"", "seq must be a non-negative integer"),
        (_header(seq=True), b"", "seq must be a non-negative integer"),
        (_header(t=1.5), b"", "t must be an integer"),
        (_header(request_id=3), b"", "request_id must be a string"),
        ({"type": "end", "request_id": "r", "seq": 0, "t": 0}, b"", "missing field(s) ok"),
        (_header(type="status", stage="dreaming", message=""), b"", "stage='dreaming'"),
        (_header(type="error", code="oops", message=""), b"", "code='oops'"),
        (_header(ok=float("nan")), b"", "cannot encode"),
        (_header(ok=object()), b"", "cannot encode"),
        (_header(), b"x", "carry no payload"),
        (_header(type="latent", step=0, shape=[2], dtype="float16", layout="BLC"), b"xyz", "needs 4"),
        (_header(type="latent", step=0, shape=[2], dtype="float32", layout="BLC"), b"xxxx", "dtype='float32'"),
        (_header(type="latent", step=0, shape=[2], dtype="float16", layout="HW"), b"xxxx", "layout='HW'"),
        (_header(type="latent", step=0, shape="2", dtype="float16", layout="BLC"), b"xxxx", "shape must be a list"),
        ("end", b"", "header must be a JSON object"),
    ],
)
def test_encode_frame_rejects(header, payload, needle):
    with pytest.raises(ProtocolError) as info:
        encode_frame(header, payload)
    assert needle in str(info.value)


def test_latent_helper_rejects_wrong_layout_or_rank():
    with pytest.raises(ProtocolError, match="layout 'CHW'"):
        FrameEncoder("r").latent(0, np.zeros((1, 4, 2, 2)), "CHW")
    with pytest.raises(ProtocolError, match="needs 5 dims"):
        FrameEncoder("r").latent(0, np.zeros((1, 4, 2, 2)), "BCFHW")


# ------------------------------------------------------------------------------------------------ decoding


def test_split_at_every_boundary_gives_the_same_frames():
    data, frames = _stream()
    dec = FrameDecoder()
    one_by_one = [f for i in range(len(data)) for f in dec.feed(data[i : i + 1])]
    dec.close()
    assert one_by_one == frames
    for cut in range(len(data) + 1):
        dec = FrameDecoder()
        got = dec.feed(data[:cut]) + dec.feed(data[cut:])
        dec.close()
        assert got == frames, cut


def test_random_chunking_and_bytes_like_input():
    data, frames = _stream()
    rng = random.Random(1)
    for _ in range(50):
        dec, got, i = FrameDecoder(), [], 0
        while i < len(data):
            n = rng.randint(0, 40)
            got += dec.feed(memoryview(data)[i : i + n] if n % 2 else bytearray(data[i : i + n]))
            i += n
        dec.close()
        assert got == frames


def test_truncation_at_every_cut_raises_from_close():
    data, frames = _stream()
    ends = set()
    pos = 0
    for f in frames:
        pos += len(f.to_bytes())
        ends.add(pos)
    for cut in range(len(data)):
        dec = FrameDecoder()
        got = dec.feed(data[:cut])
        if cut in ends or cut == 0:
            dec.close()  # a stream may end between frames
            assert got == frames[: len(got)]
            continue
        with pytest.raises(ProtocolError, match="stream ended inside a frame") as info:
            dec.close()
        assert info.value.offset == max((e for e in ends | {0} if e < cut), default=0)
        with pytest.raises(ProtocolError):
            read_frames(data[:cut])


def test_many_frames_in_one_chunk_is_linear():
    enc = FrameEncoder("r")
    data = b"".join(enc.frame("progress", step=i, total=20_000, eta_s=1.0, it_s=1.0) for i in range(20_000))
    start = time.perf_counter()
    frames = read_frames(data)
    elapsed = time.perf_counter() - start
    assert [f.seq for f in frames] == list(range(20_000))
    assert elapsed < 3.0, f"{elapsed:.2f}s for 20k frames: the decoder is re-copying its buffer"


def test_large_payload_in_small_chunks():
    arr = np.arange(1 << 20, dtype=np.float16).reshape(1, 4, 512, 512)  # 2 MiB payload
    data = FrameEncoder("r").latent(1, arr, "BCHW") * 2
    dec, got = FrameDecoder(), []
    start = time.perf_counter()
    for i in range(0, len(data), 1024):
        got += dec.feed(data[i : i + 1024])
    dec.close()
    assert time.perf_counter() - start < 3.0
    assert len(got) == 2 and got[1].array().tobytes() == arr.tobytes()


def test_huge_header_len_fails_at_once_without_allocating():
    dec = FrameDecoder()
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError, match="header_len 4294967295") as info:
            dec.feed(struct.pack("<I", 0xFFFFFFFF))  # the 4 length bytes alone are enough to refuse
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert info.value.offset == 0


def test_huge_payload_len_fails_at_once_without_allocating():
    head = b'{"type":"end","request_id":"r","seq":0,"t":0}'
    good = encode_frame(_header())
    dec = FrameDecoder()
    assert len(dec.feed(good)) == 1
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError, match="payload_len 18446744073709551615 exceeds") as info:
            dec.feed(struct.pack("<I", len(head)) + head + struct.pack("<Q", 2**64 - 1))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert info.value.offset == len(good) + 4 + len(head)


def test_custom_limits():
    head = b'{"type":"end","request_id":"r","seq":0,"t":0}'
    with pytest.raises(ProtocolError, match="outside 1..10"):
        FrameDecoder(max_header=10).feed(_raw(head))
    with pytest.raises(ProtocolError, match="exceeds the 3 limit"):
        FrameDecoder(max_payload=3).feed(_raw(head, payload_len=4))
    assert len(FrameDecoder(max_header=len(head), max_payload=4).feed(_raw(head, b"abcd"))) == 1


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (struct.pack("<I", 0), "header_len 0"),
        (_raw(b'{"type":"\xff"}'), "header is not UTF-8"),
        (_raw(b'{"type":"end",'), "header is not valid JSON"),
        (_raw(b'{"type":"end","request_id":"r","seq":0,"t":NaN}'), "header is not valid JSON"),
        (_raw(b"[" * 100_000), "header is not valid JSON"),  # deep nesting: RecursionError, not a crash
        (_raw(b'["end"]'), "header must be a JSON object, got list"),
        (_raw(b"42"), "header must be a JSON object, got int"),
        (_raw(b'{"type":"end","request_id":"r","t":0}'), "missing required key(s) seq"),
        (_raw(b'{"request_id":"r"}'), "missing required key(s) type, seq, t"),
        (_raw(b'{"type":"bogus","request_id":"r","seq":0,"t":0}'), "unknown frame type 'bogus'"),
        (_raw(b'{"type":"end","request_id":"r","seq":"1","t":0}'), "seq must be a non-negative integer, got '1'"),
        (_raw(b'{"type":"end","request_id":"r","seq":1.0,"t":0}'), "seq must be a non-negative integer, got 1.0"),
        (_raw(b'{"type":"end","request_id":"r","seq":0,"t":null}'), "t must be an integer"),
        (_raw(b'{"type":"end","request_id":null,"seq":0,"t":0}'), "request_id must be a string"),
    ],
)
def test_bad_headers_name_the_problem(data, needle):
    prefix = encode_frame(_header())
    with pytest.raises(ProtocolError) as info:
        FrameDecoder().feed(prefix + data)
    assert needle in str(info.value)
    # the frame's start for a bad length, the header's first byte for a bad header
    assert info.value.offset == len(prefix) + (0 if data[:4] == b"\0\0\0\0" else 4)
    assert f"(at byte offset {info.value.offset})" in str(info.value)


def test_decoder_is_lenient_about_fields_it_does_not_need():
    """Newer engines may add fields; old clients must keep reading (the writer is the strict side)."""
    frame = read_frames(_raw(b'{"type":"progress","request_id":"r","seq":0,"t":0,"new":[1]}', b"zz"))[0]
    assert frame.header["new"] == [1] and frame.payload == b"zz"


def test_poisoned_decoder_refuses_more_input():
    dec = FrameDecoder()
    with pytest.raises(ProtocolError):
        dec.feed(_raw(b"not json"))
    good = encode_frame(_header())
    with pytest.raises(ProtocolError, match="unusable after an earlier error: header is not valid JSON"):
        dec.feed(good)
    with pytest.raises(ProtocolError, match="unusable"):
        dec.close()


def test_truncated_close_poisons_and_closed_decoder_refuses_input():
    dec = FrameDecoder()
    dec.feed(b"\x05\x00")
    with pytest.raises(ProtocolError, match=r"2 byte\(s\) of an incomplete frame \(header_len\)"):
        dec.close()
    with pytest.raises(ProtocolError, match="unusable"):
        dec.feed(b"")
    clean = FrameDecoder()
    clean.close()
    clean.close()  # idempotent
    with pytest.raises(ProtocolError, match="closed"):
        clean.feed(encode_frame(_header()))


def test_garbage_never_crashes_or_hangs():
    """Random bytes and mutated valid streams: a ProtocolError or well-formed frames, nothing else."""
    data, _ = _stream()
    outcomes = {"error": 0, "frames": 0}
    for seed in range(5):
        rng = random.Random(seed)
        for case in range(100):
            if case % 2:
                blob = bytearray(data)
                for _ in range(rng.randint(1, 4)):
                    blob[rng.randrange(len(blob))] = rng.randrange(256)
                blob = bytes(blob[: rng.randint(0, len(blob))])
            else:
                blob = rng.randbytes(rng.randint(0, 300))
            dec = FrameDecoder()
            try:
                frames = []
                for i in range(0, len(blob), 17):
                    frames += dec.feed(blob[i : i + 17])
                dec.close()
            except ProtocolError:
                outcomes["error"] += 1
                continue
            outcomes["frames"] += 1
            for f in frames:
                assert f.type in FRAME_TYPES and isinstance(f.header["seq"], int)
    assert outcomes["error"] > 400
    assert sum(outcomes.values()) == 500


# ------------------------------------------------------------------------------------------------ Frame.array


def test_frame_array_checks_size_and_type():
    good = read_frames(FrameEncoder("r").latent(0, _latent_array(), "BCHW"))[0]
    short = Frame("latent", good.header, good.payload[:-2])
    with pytest.raises(ProtocolError, match=r"payload is 46 bytes but shape \[1, 4, 2, 3\] float16 needs 48"):
        short.array()
    with pytest.raises(ProtocolError, match="only latent frames"):
        read_frames(encode_frame(_header()))[0].array()
    with pytest.raises(ProtocolError, match="dtype"):
        Frame("latent", good.header | {"dtype": "float32"}, good.payload).array()
    with pytest.raises(ProtocolError, match="shape must be a list"):
        Frame("latent", good.header | {"shape": None}, good.payload).array()
    arr = good.array()
    assert not arr.flags.writeable  # a view of the payload, not a copy


# ------------------------------------------------------------------------------------------------ wrappers


def test_iter_frames_and_aiter_frames():
    data, frames = _stream()
    chunks = [data[i : i + 13] for i in range(0, len(data), 13)]
    assert list(iter_frames(iter(chunks))) == frames

    async def agen(parts):
        for part in parts:
            await asyncio.sleep(0)
            yield part

    async def collect(parts):
        return [f async for f in aiter_frames(agen(parts))]

    assert asyncio.run(collect(chunks)) == frames
    with pytest.raises(ProtocolError, match="stream ended inside a frame"):
        list(iter_frames(chunks[:-1]))
    with pytest.raises(ProtocolError, match="stream ended inside a frame"):
        asyncio.run(collect(chunks[:-1]))


def test_read_frames_empty_and_truncated():
    assert read_frames(b"") == []
    with pytest.raises(ProtocolError, match="payload_len"):
        read_frames(encode_frame(_header())[:-3])


# ------------------------------------------------------------------------------------------------ fixtures


def test_fixture_file_is_up_to_date():
    script = _load_vector_script()
    assert (FIXTURES / "protocol_vectors.json").read_text(encoding="utf-8") == script.render(), (
        "run: python testing/fixtures/make_protocol_vectors.py"
    )


def test_fixture_vectors_decode_as_described():
    doc = json.loads((FIXTURES / "protocol_vectors.json").read_text(encoding="utf-8"))
    names = [v["name"] for v in doc["vectors"]]
    assert names == ["start", "status", "progress", "latent", "result", "error", "end", "all"]
    for vector in doc["vectors"]:
        frames = read_frames(bytes.fromhex(vector["hex"]))
        assert len(frames) == len(vector["frames"])
        for frame, want in zip(frames, vector["frames"]):
            assert frame.type == want["type"]
            assert frame.header == want["header"]
            assert frame.payload.hex() == want["payload_hex"]
            if want["array"] is None:
                assert frame.type != "latent"
                continue
            arr = frame.array()
            assert list(arr.shape) == want["array"]["shape"]
            assert arr.ravel().tolist() == want["array"]["values"]
    assert doc["vectors"][0]["frames"][0]["header"]["latent"]["layout"] == "BCHW"
    for bad in doc["invalid"]:
        with pytest.raises(ProtocolError):
            read_frames(bytes.fromhex(bad["hex"]))
