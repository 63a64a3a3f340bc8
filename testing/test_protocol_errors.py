"""The frame protocol's edges and its messages: limits at their exact boundary, shape rules, truncation and
offsets after the decoder compacts its buffer, every error's wording, and the frames CLI's exact output. These
are what the mutation run (docs/TESTING.md) found unguarded by test_protocol.py."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from extensions_built_in.inference_engine.protocol import read_frames

ROOT = Path(__file__).resolve().parents[1]


def test_a_header_of_exactly_the_limit_is_encoded_and_one_byte_more_is_not():
    from extensions_built_in.inference_engine import protocol as p

    base = {"type": "status", "request_id": "r", "seq": 0, "t": 0, "stage": "queued", "message": ""}
    room = p.DEFAULT_MAX_HEADER - len(json.dumps(base, separators=(",", ":")).encode())
    assert len(p.encode_frame({**base, "message": "x" * room})) == 4 + p.DEFAULT_MAX_HEADER + 8
    with pytest.raises(p.ProtocolError, match="over the 1048576 limit"):
        p.encode_frame({**base, "message": "x" * (room + 1)})


@pytest.mark.parametrize("shape,ok", [([1, 0, 2, 2], True), ([1, -1, 2, 2], False), ([1, 2.5, 2], False)])
def test_latent_shapes_must_be_non_negative_integers(shape, ok):
    from extensions_built_in.inference_engine import protocol as p

    header = {
        "type": "latent",
        "request_id": "r",
        "seq": 0,
        "t": 0,
        "step": 1,
        "shape": shape,
        "dtype": "float16",
        "layout": "BCHW",
    }
    if ok:
        assert p.read_frames(p.encode_frame(header))[0].header["shape"] == shape
    else:
        with pytest.raises(p.ProtocolError, match="non-negative integers"):
            p.encode_frame(header, b"\x00" * 8)


def test_latent_frames_carry_extra_fields():
    from extensions_built_in.inference_engine.protocol import FrameEncoder

    [frame] = read_frames(FrameEncoder("r").latent(3, np.zeros((1, 2, 2, 2)), "BCHW", kind="x0"))
    assert frame.header["kind"] == "x0" and frame.header["step"] == 3


def test_a_truncated_stream_says_how_many_bytes_of_the_frame_arrived():
    from extensions_built_in.inference_engine.protocol import FrameDecoder, FrameEncoder, ProtocolError

    enc = FrameEncoder("r")
    first, second = enc.frame("status", stage="queued", message="a"), enc.frame("status", stage="queued", message="b")
    decoder = FrameDecoder()
    decoder.feed(first + second[:7])
    with pytest.raises(ProtocolError, match=rf"stream ended inside a frame: 7 byte\(s\).*offset {len(first)}\)"):
        decoder.close()


def test_error_offsets_stay_right_after_the_buffer_is_compacted():
    """Past 64 KB the decoder drops what it has read; offsets in its errors must still count from the start."""
    from extensions_built_in.inference_engine.protocol import FrameDecoder, FrameEncoder, ProtocolError

    enc = FrameEncoder("r")
    frames = b"".join(enc.frame("status", stage="queued", message="x" * 200) for _ in range(800))
    bad = b"\x05\x00\x00\x00notjs" + b"\x00" * 8
    decoder = FrameDecoder()
    for i in range(0, len(frames), 1000):
        decoder.feed(frames[i : i + 1000])
    with pytest.raises(ProtocolError, match=rf"at byte offset {len(frames) + 4}\)"):
        decoder.feed(bad)


def test_the_protocol_cli_prints_a_line_per_frame_and_says_how_to_use_it(tmp_path, capsys):
    from extensions_built_in.inference_engine.protocol import FrameEncoder, main

    enc = FrameEncoder("r")
    data = (
        enc.frame("status", stage="queued", message="waiting")
        + enc.latent(1, np.zeros((1, 2, 2, 2)), "BCHW")
        + enc.frame("end", ok=True)
    )
    (tmp_path / "frames.bin").write_bytes(data)
    assert main([str(tmp_path / "frames.bin")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0].split()[:2] == ["0", "status"] and '"message": "waiting"' in lines[0]
    assert lines[1].endswith("payload=16B") and lines[2].split()[:2] == ["2", "end"]
    assert main([]) == 2 and "usage:" in capsys.readouterr().err
    assert main(["a", "b"]) == 2
    (tmp_path / "bad.bin").write_bytes(b"\x01\x00")
    assert main([str(tmp_path / "bad.bin")]) == 1 and "protocol error" in capsys.readouterr().err


def test_the_protocol_cli_output_exactly(tmp_path, capsys, monkeypatch):
    """The usage line, and one exact line per frame (config and latent spec left out, non-ASCII kept, JSON cut
    at 160 characters, payload sizes for latent frames only): in this process, reading ``sys.argv`` as
    ``python -m`` does, and once as users run it."""
    from extensions_built_in.inference_engine.protocol import FrameEncoder, main

    enc = FrameEncoder("r", clock=lambda: 0)
    data = (
        enc.frame("start", config={"x": 1}, output={"kind": "image"}, latent={"layout": "BCHW"})
        + enc.frame("status", stage="queued", message="café " + "x" * 200)
        + enc.frame("end", ok=True)
    )
    (tmp_path / "f.bin").write_bytes(data)
    status = json.dumps({"stage": "queued", "message": "café " + "x" * 200}, ensure_ascii=False)[:160]
    expected = ['   0 start    {"output": {"kind": "image"}}', f"   1 status   {status}", '   2 end      {"ok": true}']
    monkeypatch.setattr(sys, "argv", ["protocol", str(tmp_path / "f.bin")])
    assert main() == 0
    assert capsys.readouterr().out.splitlines() == expected
    monkeypatch.setattr(sys, "argv", ["protocol"])
    assert main() == 2
    assert capsys.readouterr().err == "usage: python -m extensions_built_in.inference_engine.protocol FRAMES_FILE\n"
    cli = [sys.executable, "-m", "extensions_built_in.inference_engine.protocol", str(tmp_path / "f.bin")]
    done = subprocess.run(cli, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.stdout.splitlines() == expected


def test_protocol_errors_name_what_is_wrong():
    from extensions_built_in.inference_engine import protocol as p

    env = {"request_id": "r", "seq": 0, "t": 0}
    cases = [
        (lambda: p.encode_frame({"type": "result", **env}), "missing field(s) path, url, kind, ext, bytes, timings"),
        (
            lambda: p.encode_frame({"type": "status", **env, "stage": "x", "message": ""}),
            "expected one of queued, loading, encoding, sampling, decoding, saving",
        ),
        (lambda: p.FrameEncoder("r").frame("status", seq=1, t=2), "seq, t are set by FrameEncoder"),
        (lambda: p.FrameEncoder("r").latent(1, np.zeros((1, 1)), "XY"), "expected one of BCHW, BCFHW, BLC"),
        (
            lambda: p.Frame("latent", {"type": "latent", **env, "dtype": "float32", "shape": [1]}, b"").array(),
            "latent dtype 'float32' is not 'float16'",
        ),
        (
            lambda: p.Frame(
                "latent", {"type": "latent", **env, "seq": 7, "dtype": "float16", "shape": [2]}, b""
            ).array(),
            "latent frame seq 7: payload is 0 bytes",
        ),
        (
            lambda: p.encode_frame({"type": "nope", **env}),
            "expected one of start, status, progress, latent, result, error, end",
        ),
        (lambda: p.read_frames(b"\x0b\x00\x00\x00" + b'{"a": NaN}' + b" "), "NaN is not JSON"),
    ]
    for call, message in cases:
        with pytest.raises((p.ProtocolError, ValueError)) as e:
            call()
        assert message in str(e.value), (message, str(e.value))
    decoder = p.FrameDecoder()
    decoder.close()
    with pytest.raises(p.ProtocolError, match="^decoder is closed$"):
        decoder.feed(b"")
    decoder = p.FrameDecoder()
    frame = p.FrameEncoder("r").frame("end", ok=True)
    decoder.feed(frame[:-3])
    with pytest.raises(p.ProtocolError, match=r"inside a frame.*\(payload_len\)"):
        decoder.close()
