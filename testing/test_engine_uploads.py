"""``POST /assets``: uploads verified and capped (size, pixels, format, chunked bodies cut off while read), and an
uploaded image used as a control image."""

import os

import pytest

from testing import test_engine_http
from testing.conftest import ROOT
from testing.stream_contract import body_for
from testing.test_engine_http import auth, png_bytes

http = test_engine_http.http  # the fixture: an httpx client on the engine


def test_upload_a_png_and_use_it_as_a_control_image(http, engine_server):
    r = http.post("/assets", files={"file": ("c.png", png_bytes(), "image/png")}, headers=auth(engine_server))
    assert r.status_code == 201, r.text
    asset = r.json()
    assert (asset["width"], asset["height"]) == (32, 24) and os.path.isfile(asset["path"])
    body = body_for("sd1")
    body["sample"]["ctrl_img"] = asset["id"]
    out = engine_server.client.generate_wait(body)
    assert out["http_status"] == 200  # sd1 ignores control images, but the reference resolves


@pytest.mark.parametrize(
    "payload,status",
    [
        (b"this is not an image at all", 422),
        (png_bytes()[:40], 422),  # truncated PNG
        (b"GIF89a" + b"\x00" * 100, 422),
    ],
)
def test_non_images_are_rejected(http, engine_server, payload, status):
    r = http.post("/assets", files={"file": ("x.png", payload, "image/png")}, headers=auth(engine_server))
    assert r.status_code == status, r.text
    assert r.json()["detail"][0]["loc"][-1] == "file"


def test_oversize_upload_is_413(http, engine_server):
    from extensions_built_in.inference_engine.assets import MAX_UPLOAD_BYTES

    payload = png_bytes() + b"\x00" * (MAX_UPLOAD_BYTES + 10)
    r = http.post("/assets", files={"file": ("big.png", payload, "image/png")}, headers=auth(engine_server))
    assert r.status_code == 413


def chunked_form(payload: bytes):
    """A multipart body sent chunked, without Content-Length, as the UI's streaming proxy forwards uploads."""
    yield b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n'
    for i in range(0, len(payload), 1 << 20):
        yield payload[i : i + (1 << 20)]
    yield b"\r\n--x--\r\n"


def test_chunked_uploads_work_and_are_capped_while_reading(http, engine_server):
    from extensions_built_in.inference_engine.assets import MAX_UPLOAD_BYTES

    headers = {**auth(engine_server), "content-type": "multipart/form-data; boundary=x"}
    r = http.post("/assets", content=chunked_form(png_bytes()), headers=headers)
    assert r.status_code == 201, r.text
    r = http.post("/assets", content=chunked_form(png_bytes() + b"\x00" * (MAX_UPLOAD_BYTES + 1)), headers=headers)
    assert r.status_code == 413


def test_upload_without_file_field_is_422(http, engine_server):
    r = http.post("/assets", data={"other": "x"}, headers=auth(engine_server))
    assert r.status_code == 422


# ---------------------------------------------------------------------------------------------- disconnects and queue


def blank_png(side: int) -> bytes:
    """A ``side``² RGB PNG of a few dozen KB (all black), written row by row: nothing here holds its pixels."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer, row = zlib.compressobj(9), b"\x00" * (1 + 3 * side)
    pixels = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


STORE_EIGHT_AT_ONCE = """
import sys, threading
from PIL import Image, PngImagePlugin  # imported before the baseline: their own memory is not the decodes'
from extensions_built_in.inference_engine.assets import AssetStore

def memory_mb(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key)) / 1024

data, store = open(sys.argv[1], "rb").read(), AssetStore(sys.argv[2])
start, stored = threading.Barrier(8), []
def upload():
    start.wait()
    stored.append(store.store(data))
threads = [threading.Thread(target=upload) for _ in range(8)]
before = memory_mb("VmRSS")
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(stored), memory_mb("VmHWM") - before)
"""


def test_concurrent_uploads_of_many_pixels_decode_a_few_at_a_time(tmp_path):
    """Each upload is decoded in full; eight 4096² PNGs of ~50 KB at once held eight decoded images (48 MB of
    pixels each; the peak grew by 440-490 MB). Now at most ``MAX_FULL_DECODES`` run together: 130-150 MB."""
    import subprocess
    import sys

    from extensions_built_in.inference_engine.assets import MAX_FULL_DECODES

    side = 4096
    (tmp_path / "big.png").write_bytes(blank_png(side))
    done = subprocess.run(
        [sys.executable, "-c", STORE_EIGHT_AT_ONCE, str(tmp_path / "big.png"), str(tmp_path / "assets")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    count, growth_mb = done.stdout.split()
    image_mb = side * side * 3 / 2**20
    assert int(count) == 8
    assert float(growth_mb) < (MAX_FULL_DECODES + 2) * image_mb, f"peak grew by {growth_mb} MB"
