"""The security review's attacks on the engine, one test each, written as the attack: each is refused with a
clear 4xx or error frame, and the engine serves the next request. (Prompt flags and the queue flood are in
test_engine_http.py; the UI's are in ui/.)"""

import json
import os
import struct
import threading
import time
import zlib

import httpx
import pytest

from extensions_built_in.inference_engine.assets import AssetError, AssetQuotaFull, AssetStore
from testing.stream_contract import body_for
from testing.test_engine_http import auth, png_bytes


@pytest.fixture()
def http(engine_server):
    with httpx.Client(base_url=engine_server.url, timeout=60, headers=auth(engine_server)) as client:
        yield client


def serves(engine_server) -> bool:
    return engine_server.client.generate_wait(body_for("sd1", steps=2))["http_status"] == 200


# ---------------------------------------------------------------------------------------------- giant bodies
def test_a_giant_body_is_413_by_its_length(http, engine_server):
    body = body_for("sd1")
    body["model"]["junk"] = "x" * (50 * 1024 * 1024)
    r = http.post("/generate", content=json.dumps(body), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "over" in r.json()["detail"]
    assert serves(engine_server)


def test_a_giant_chunked_body_is_413_while_it_is_read(http, engine_server):
    def chunks():
        yield b'{"model": {"arch": "sd1", "name_or_path": "tiny:sd1", "junk": "'
        for _ in range(64):
            yield b"x" * (64 * 1024)
        yield b'"}, "sample": {"prompt": "x"}}'

    r = http.post("/generate", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert serves(engine_server)


@pytest.mark.parametrize(
    "extras,why",
    [
        ({f"k{i}": 1 for i in range(100)}, "unknown model keys"),
        ({"junk": "x" * 100_000}, "bytes as JSON"),
    ],
)
def test_extra_model_keys_are_bounded(http, engine_server, extras, why):
    body = body_for("sd1")
    body["model"].update(extras)
    r = http.post("/generate", json=body)
    assert r.status_code == 422 and why in r.text
    assert r.json()["detail"][0]["loc"][:2] == ["body", "model"]


# ---------------------------------------------------------------------------------------------- uploads
def png_claiming(width: int, height: int) -> bytes:
    """A small real PNG whose header claims another size (CRC fixed): what a decompression bomb looks like to
    anything that trusts the header, without building a 500 MB image here."""
    data = bytearray(png_bytes((8, 8)))
    ihdr = 8 + 8  # signature, then the IHDR chunk's length and type
    data[ihdr : ihdr + 8] = struct.pack(">II", width, height)
    crc = zlib.crc32(bytes(data[ihdr - 4 : ihdr + 13]))
    data[ihdr + 13 : ihdr + 17] = struct.pack(">I", crc)
    return bytes(data)


def test_a_pixel_bomb_is_refused_from_its_header_before_decoding(http, engine_server):
    for size in ((11000, 11000), (8193, 8192)):  # the cap is exact: 8192² is the limit
        r = http.post("/assets", files={"file": ("bomb.png", png_claiming(*size), "image/png")})
        assert r.status_code == 422 and "pixel limit" in r.text, r.text
    assert not [n for n in os.listdir(engine_server.engine.assets_folder) if n.startswith(".")]
    assert serves(engine_server)


def test_asset_quota_removes_expired_then_oldest_but_never_what_a_request_uses(tmp_path):
    in_use = set()
    store = AssetStore(str(tmp_path), max_bytes=3 * len(png_bytes()), max_age_s=3600, in_use=lambda: in_use)
    first, second, third = (store.store(png_bytes()) for _ in range(3))
    os.utime(first["path"], (time.time() - 30, time.time() - 30))
    os.utime(second["path"], (time.time() - 20, time.time() - 20))
    in_use.add(first["path"])
    fourth = store.store(png_bytes())  # full: the oldest not in use goes
    assert [os.path.exists(a["path"]) for a in (first, second, third, fourth)] == [True, False, True, True]
    os.utime(third["path"], (time.time() - 7200, time.time() - 7200))
    fifth = store.store(png_bytes((10, 10)))  # an expired one goes first
    assert not os.path.exists(third["path"]) and os.path.exists(fifth["path"])
    in_use.update({fourth["path"], fifth["path"]})
    with pytest.raises(AssetQuotaFull):
        store.store(png_bytes())  # everything left is in use
    assert store.usage()["files"] == 3
    with pytest.raises(AssetQuotaFull):
        AssetStore(str(tmp_path / "small"), max_bytes=10).store(png_bytes())


def test_asset_references_resolve_inside_the_store_only(tmp_path):
    store = AssetStore(str(tmp_path / "assets"))
    asset = store.store(png_bytes())
    assert store.resolve(asset["id"]) == asset["path"] == store.resolve(asset["path"])
    outside = tmp_path / "secret.png"
    outside.write_bytes(png_bytes())
    os.symlink(outside, tmp_path / "assets" / "link.png")
    for ref in (str(outside), str(tmp_path / "assets" / "link.png"), "0" * 32, "../secret.png", "a\x00b"):
        with pytest.raises(AssetError):
            store.resolve(ref)


# ---------------------------------------------------------------------------------------------- paths
def test_a_symlinked_lora_file_cannot_leave_the_lora_roots(tmp_path, tiny_cache):
    """The file name used to be appended after the real-path check: a link of that name inside a root pointed
    anywhere."""
    from testing.engine_harness import EngineHarness

    root, outside = tmp_path / "loras", tmp_path / "elsewhere"
    (root / "folder").mkdir(parents=True)
    outside.mkdir()
    (outside / "stolen.safetensors").write_bytes(b"\x00" * 16)
    os.symlink(outside / "stolen.safetensors", root / "folder" / "pytorch_lora_weights.safetensors")
    os.symlink(outside / "stolen.safetensors", root / "direct.safetensors")
    h = EngineHarness(tmp_path / "engine", lora_roots=[str(root)])
    try:
        for path in (root / "folder", root / "direct.safetensors"):
            body = body_for("sd1")
            body["model"]["lora_path"] = str(path)
            out = h.client.generate_wait(body)
            assert out["http_status"] == 422 and "outside the engine's LoRA folders" in json.dumps(out), out
        assert h.client.generate_wait(body_for("sd1", steps=2))["http_status"] == 200
    finally:
        h.close()


# ---------------------------------------------------------------------------------------------- outputs and saving
def test_listing_during_writes_never_fails_and_never_shows_temp_files(http, engine_server):
    folder = engine_server.engine.output_folder
    with open(os.path.join(folder, "half.json.tmp"), "w") as f:
        f.write("{")
    with open(os.path.join(folder, "half.png.tmp"), "w") as f:
        f.write("")
    statuses, stop = [], threading.Event()

    def lister():
        while not stop.is_set():
            r = http.get("/outputs")
            statuses.append(r.status_code)
            assert not [e for e in r.json() if e["name"].endswith(".tmp")] if r.status_code == 200 else True

    t = threading.Thread(target=lister)
    t.start()
    try:
        for seed in range(4):
            engine_server.client.generate_wait(body_for("sd1", steps=2, seed=seed))
    finally:
        stop.set()
        t.join(30)
    assert statuses and set(statuses) == {200}
    names = [e["name"] for e in http.get("/outputs").json()]
    assert "half.json.tmp" not in names and "half.png.tmp" not in names


def test_a_failed_sidecar_leaves_no_orphan_result_and_the_next_request_works(engine_server, monkeypatch):
    from extensions_built_in.inference_engine.outputs import Outputs

    def disk_full(self, path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Outputs, "write_sidecar", disk_full)
    frames = list(engine_server.client.generate(body_for("sd1", steps=2, seed=77)))
    errors = [f.header for f in frames if f.type == "error"]
    assert errors and errors[0]["code"] == "internal" and "No space left" in errors[0]["message"]
    request_id = frames[0].request_id
    folder = engine_server.engine.output_folder
    leftovers = [n for n in os.listdir(folder) if n.startswith(request_id)]
    leftovers += [n for n in os.listdir(os.path.join(folder, ".thumbs")) if n.startswith(request_id)]
    assert leftovers == []
    monkeypatch.undo()
    assert serves(engine_server)


def test_unload_while_a_generation_runs_is_409_at_once(http, engine_server):
    from testing.test_engine_http import engine_idle, open_stream, wait_until

    client, response, frames = open_stream(engine_server, body_for("sd1", steps=500))
    request_id = next(f for f in frames if f.type == "progress").request_id
    started = time.monotonic()
    r = http.post("/unload", json={"all": True})
    assert r.status_code == 409 and "running" in r.json()["detail"]
    assert time.monotonic() - started < 5
    engine_server.client.cancel(request_id)
    response.close()
    client.close()
    assert wait_until(lambda: engine_idle(engine_server), timeout=60)
    assert http.post("/unload", json={"all": True}).status_code == 200
    assert serves(engine_server)


# ---------------------------------------------------------------------------------------------- DNS rebinding
FOREIGN_HOSTS = [
    "evil.example",
    "evil.example:{port}",
    "127.0.0.1.evil.example:{port}",
    "localhost.evil.example",
    "192.168.1.20:{port}",
    "[::2]:{port}",
    "127.0.0.1:{port}@evil.example",
    "localhost:http",
    "",
]
LOOPBACK_HOSTS = ["127.0.0.1:{port}", "127.0.0.1", "localhost:{port}", "LOCALHOST", "[::1]:{port}", "[::1]"]


@pytest.mark.parametrize("path", ["/health", "/models", "/v1/models"])
def test_a_foreign_host_is_421_before_the_token_on_every_route(http, engine_server, path):
    """A page whose name was rebound to 127.0.0.1 sends its own name as Host: refused, token or not."""
    port = engine_server.port
    for host in FOREIGN_HOSTS:
        for headers in ({"Host": host.format(port=port)}, {"Host": host.format(port=port), "Authorization": ""}):
            r = http.get(path, headers=headers)
            assert r.status_code == 421, (host, headers, r.status_code)
            error = r.json()["error"]["message"] if path.startswith("/v1") else r.json()["detail"]
            assert "127.0.0.1" in error
    for host in LOOPBACK_HOSTS:
        assert http.get(path, headers={"Host": host.format(port=port)}).status_code == 200, host


def test_a_request_without_a_host_is_421(engine_server):
    """HTTP/1.0 has no Host header; nothing honest talks to the engine that way."""
    import socket

    with socket.create_connection(("127.0.0.1", engine_server.port), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.0\r\n\r\n")
        answer = b"".join(iter(lambda: sock.recv(65536), b""))
    assert answer.startswith(b"HTTP/1.1 421"), answer[:200]


def test_health_without_the_token_says_only_ok(engine_server):
    """Open to a liveness probe, but nothing more: pool keys, model and LoRA paths and folders need the token."""
    with httpx.Client(base_url=engine_server.url, timeout=60) as anonymous:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {engine_server.TOKEN}x"}):
            r = anonymous.get("/health", headers=headers)
            assert r.status_code == 200 and r.json() == {"ok": True}, (headers, r.text)
        detailed = anonymous.get("/health", headers=auth(engine_server)).json()
    assert detailed["ok"] is True and {"busy", "queue", "active", "pool", "counters", "assets"} <= set(detailed)
    assert "pool" in engine_server.client.health()  # the Python client sends its token


# ---------------------------------------------------------------------------------------------- the output folder
def test_a_link_in_the_output_folder_is_neither_served_nor_deleted(http, engine_server, tmp_path):
    """A link put into the output folder (by a job, a script, a shared folder) served any file the engine could
    read; now a link is 404 for GET and DELETE, as a missing file, and the listing leaves it out."""
    folder = engine_server.engine.output_folder
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not yours")
    inside = os.path.join(folder, "plain.png")
    with open(inside, "wb") as f:
        f.write(b"a result")
    links = {"stolen.png": str(secret), "alias.png": inside}  # out of the folder, and within it
    for name, target in links.items():
        os.symlink(target, os.path.join(folder, name))
    try:
        assert http.get("/outputs/plain.png").content == b"a result"
        for name in links:
            assert http.get(f"/outputs/{name}").status_code == 404
            assert http.get(f"/outputs/{name}?download=1").status_code == 404
            assert http.delete(f"/outputs/{name}").status_code == 404
            assert os.path.islink(os.path.join(folder, name))
        assert secret.read_bytes() == b"not yours" and os.path.exists(inside)
        listed = {e["name"] for e in http.get("/outputs").json()}
        assert "plain.png" in listed and not listed & set(links)
    finally:
        for name in [*links, "plain.png"]:
            os.remove(os.path.join(folder, name))


def test_a_file_name_that_is_not_utf8_leaves_the_listing_whole(http, engine_server):
    """``GET /outputs`` answered 500 for the whole folder because of one such name."""
    odd = os.path.join(os.fsencode(engine_server.engine.output_folder), b"caf\xe9-\xff.png")
    with open(odd, "wb") as f:
        f.write(b"x")
    try:
        r = http.get("/outputs")
        assert r.status_code == 200 and isinstance(r.json(), list)
        assert all(e["name"].isprintable() for e in r.json())
    finally:
        os.remove(odd)


# ---------------------------------------------------------------------------------------------- numeric caps
CAPS = [
    ("sample", "num_inference_steps", 500),
    ("sample", "width", 4096),
    ("sample", "height", 4096),
    ("sample", "num_frames", 1025),
    ("sample", "fps", 240),
    ("sample", "batch_count", 16),
    ("sample", "seed", 2**32 - 1),
    ("sample", "guidance_scale", 100),
    ("stream", "every_n_steps", 1000),
    ("stream", "max_frames", 1024),
    ("stream", "downsample", 64),
]


@pytest.mark.parametrize("section,field,cap", CAPS, ids=[c[1] for c in CAPS])
def test_each_numeric_cap_is_exact(http, engine_server, section, field, cap):
    """The cap itself passes the body's types and every check before the queue; one more is a 422 naming the
    field. Hostile values far over a cap (test_engine_http.py) would not notice a cap moved from 500 to 5000."""
    from extensions_built_in.inference_engine.bodies import GenerateBody

    body = body_for("sd1")
    body[section] = {**body.get(section, {}), field: cap}
    parsed = GenerateBody.model_validate(body)
    sample = parsed.sample.model_dump(exclude_none=True)
    sample = {k: v for k, v in sample.items() if k not in ("batch_count", "batch_seeds")}  # as Engine.submit does
    engine_server.engine.checks.resolve(parsed.model.model_dump(exclude_none=True), sample, parsed.stream.model_dump())
    body[section][field] = cap + 1
    r = http.post("/generate", json=body)
    assert r.status_code == 422, r.text
    assert [d["loc"] for d in r.json()["detail"]] == [["body", section, field]]
