"""``POST /assets``: uploads verified and capped (size, pixels, format, chunked bodies cut off while read), and an
uploaded image used as a control image."""

import os

import pytest

from testing import test_engine_http
from testing.test_engine_http import auth, png_bytes
from testing.test_inference_engine import body_for

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
    from extensions_built_in.inference_engine.server import MAX_UPLOAD_BYTES

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
    from extensions_built_in.inference_engine.server import MAX_UPLOAD_BYTES

    headers = {**auth(engine_server), "content-type": "multipart/form-data; boundary=x"}
    r = http.post("/assets", content=chunked_form(png_bytes()), headers=headers)
    assert r.status_code == 201, r.text
    r = http.post("/assets", content=chunked_form(png_bytes() + b"\x00" * (MAX_UPLOAD_BYTES + 1)), headers=headers)
    assert r.status_code == 413


def test_upload_without_file_field_is_422(http, engine_server):
    r = http.post("/assets", data={"other": "x"}, headers=auth(engine_server))
    assert r.status_code == 422


# ---------------------------------------------------------------------------------------------- disconnects and queue
