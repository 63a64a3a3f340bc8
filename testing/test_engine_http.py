"""The engine's HTTP contract: auth, hostile input, uploads, disconnects, the FIFO queue. Real server, real HTTP."""

import io
import os
import threading
import time

import httpx
import pytest

from extensions_built_in.inference_engine.protocol import FrameDecoder
from testing.stream_contract import body_for
from toolkit.models.registry import ARCHS, get_model_class

ROUTES = [
    ("GET", "/models"),
    ("POST", "/generate"),
    ("POST", "/cancel/abc"),
    ("GET", "/requests/abc/frames"),
    ("GET", "/queue"),
    ("POST", "/unload"),
    ("POST", "/assets"),
    ("GET", "/outputs"),
    ("GET", "/outputs/x.png"),
    ("DELETE", "/outputs/x.png"),
    ("GET", "/openapi.json"),
    ("GET", "/metrics"),
]


@pytest.fixture()
def http(engine_server):
    with httpx.Client(base_url=engine_server.url, timeout=60) as client:
        yield client


def auth(engine_server):
    return {"Authorization": f"Bearer {engine_server.TOKEN}"}


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def engine_idle(engine_server):
    q = engine_server.client.queue()
    return q["running"] is None and not q["pending"]


def cancelled_in_the_end(engine_server, request_id) -> bool:
    """A request's replayed stream ended in a ``cancelled`` error. An idle queue alone proves nothing about files:
    results are saved on the saver thread, after the queue has let the request go."""
    frames = list(engine_server.client.frames(request_id))
    errors = [f.header.get("code") for f in frames if f.type == "error"]
    return errors == ["cancelled"] and frames[-1].type == "end" and frames[-1].header["ok"] is False


# ---------------------------------------------------------------------------------------------- auth
@pytest.mark.parametrize("method,path", ROUTES)
@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer wrong",
        "Basic dGVzdA==",
        "Bearer test-token-but-longer",
        "bearer test-token",
        "Bearer test-tok",  # the token's start
        "Bearer",  # the scheme alone ("Bearer " is the same on the wire: HTTP strips the trailing space)
        "",
        "test-token",  # no scheme
        "Bearer test-tokenX",  # one character more
        "Bearer test-token test-token",
    ],
)
def test_every_route_but_health_needs_the_token(http, method, path, header):
    headers = {"Authorization": header} if header is not None else {}
    r = http.request(method, path, headers=headers)
    assert r.status_code == 401
    assert "token" in r.json()["detail"]


def test_health_is_open_and_reports_state_with_the_token(http, engine_server):
    assert http.get("/health").json() == {"ok": True}  # test_security.py has what it keeps from whom
    r = http.get("/health", headers=auth(engine_server))
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] is True and {"busy", "queue", "active", "pool", "counters", "vram"} <= set(body)


def test_models_lists_every_arch_with_what_a_form_needs(engine_server):
    from toolkit.models.registry import ARCHS

    models = {m["arch"]: m for m in engine_server.client.models()}
    assert set(models) == set(ARCHS)
    for m in models.values():
        assert m["modality"] in ("image", "video", "audio")
        assert {"defaults", "divisibility", "latent", "control_images", "output_exts"} <= set(m)


def test_openapi_schema_is_served(http, engine_server):
    schema = http.get("/openapi.json", headers=auth(engine_server)).json()
    assert "/generate" in schema["paths"] and "/assets" in schema["paths"]
    # No Swagger page: a browser cannot send the token, so it would fail on its own schema request.
    assert http.get("/docs", headers=auth(engine_server)).status_code == 404


# ---------------------------------------------------------------------------------------------- hostile input
def hostile_bodies():
    good = body_for("sd1")

    def with_sample(**kw):
        return {**good, "sample": {**good["sample"], **kw}}

    def with_model(**kw):
        return {**good, "model": {**good["model"], **kw}}

    no_prompt = {**good, "sample": {k: v for k, v in good["sample"].items() if k != "prompt"}}
    return [
        ("unknown arch", with_model(arch="sd9000"), ["model", "arch"], "sd1"),  # lists the known ones
        ("unknown arch tag", with_model(arch="sd1:turbo"), ["model", "arch"], "sd1 has no tag 'turbo'"),
        ("negative steps", with_sample(num_inference_steps=-5), ["sample", "num_inference_steps"], None),
        ("huge steps", with_sample(num_inference_steps=10**9), ["sample", "num_inference_steps"], None),
        ("huge width", with_sample(width=100000), ["sample", "width"], None),
        ("huge height", with_sample(height=10**6), ["sample", "height"], None),
        ("steps as text", with_sample(num_inference_steps="many"), ["sample", "num_inference_steps"], None),
        ("prompt as object", with_sample(prompt={"a": 1}), ["sample", "prompt"], None),
        ("missing prompt", no_prompt, ["sample", "prompt"], None),
        ("missing model", {"sample": good["sample"]}, ["model"], None),
        ("unknown sample key", with_sample(colour="red"), ["sample", "colour"], None),
        ("bad output ext", with_sample(output_ext="exe"), ["sample", "output_ext"], "png"),
        ("unknown asset id", with_sample(ctrl_img="0" * 32), ["sample", "ctrl_img"], "unknown asset"),
        ("traversal in ctrl path", with_sample(ctrl_img="../../../../etc/passwd"), ["sample", "ctrl_img"], None),
        ("absolute ctrl path outside roots", with_sample(ctrl_img="/etc/hostname"), ["sample", "ctrl_img"], None),
        # found by the schema fuzz: os.path.realpath raised ValueError and the engine answered 500
        ("NUL byte in ctrl path", with_sample(ctrl_img="a\x00b.png"), ["sample", "ctrl_img"], "not a usable path"),
        (
            "NUL byte in lora path",
            with_model(lora_path="x\x00.safetensors"),
            ["model", "lora_path"],
            "not a usable path",
        ),
        ("bad stream mode", {**good, "stream": {"latents": "jpeg"}}, ["stream", "latents"], None),
        ("seed too big", with_sample(seed=2**40), ["sample", "seed"], None),
        ("bad dtype", with_model(dtype="int3"), ["model", "dtype"], None),
        ("unknown sampler", with_sample(sampler="DPM++ 9M"), ["sample", "sampler"], "DPM++ 2M"),  # lists them
        (
            "a schedule the sampler lacks",
            with_sample(sampler="Euler a", scheduler="karras"),
            ["sample", "scheduler"],
            None,
        ),
        ("unknown schedule", with_sample(scheduler="zigzag"), ["sample", "scheduler"], "karras"),
        ("sampler as number", with_sample(sampler=7), ["sample", "sampler"], None),
    ]


@pytest.mark.parametrize("name,body,loc,mentions", hostile_bodies(), ids=[h[0] for h in hostile_bodies()])
def test_hostile_generate_bodies_get_422_naming_the_field(http, engine_server, name, body, loc, mentions):
    r = http.post("/generate", json=body, headers=auth(engine_server))
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert any(d["loc"][1 : len(loc) + 1] == loc for d in detail), detail
    if mentions:
        assert mentions in str(detail)


CONTROL_ARCHS = sorted(a for a in ARCHS if get_model_class(a).control_images)


@pytest.mark.parametrize("arch", CONTROL_ARCHS)
def test_edit_and_i2v_archs_without_their_control_image_get_422_naming_it(http, engine_server, arch):
    r = http.post("/generate", json=body_for(arch), headers=auth(engine_server))
    assert r.status_code == 422, r.text
    [detail] = r.json()["detail"]
    assert detail["loc"] == ["body", "sample", "ctrl_img"] and "control image" in detail["msg"]


def test_malformed_json_is_422_and_the_next_request_works(http, engine_server):
    r = http.post(
        "/generate", content=b"{not json", headers={**auth(engine_server), "content-type": "application/json"}
    )
    assert r.status_code == 422
    out = engine_server.client.generate_wait(body_for("sd1"))
    assert out["http_status"] == 200 and "result" in out


def test_one_step_for_a_terminal_shift_scheduler_is_refused_by_name(http, engine_server):
    """Qwen-Image's sigmas stretch to a terminal shift, 0/0 at one step: NaN sigmas and a blank image before."""
    body = body_for("qwen_image", steps=1)
    r = http.post("/generate?wait=1", json=body, headers=auth(engine_server))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "sample", "num_inference_steps"]
    assert "at least 2 steps" in r.json()["detail"][0]["msg"]
    models = {m["arch"]: m for m in http.get("/models", headers=auth(engine_server)).json()}
    assert models["qwen_image"]["min_steps"] == 2 and models["flux"]["min_steps"] == 1


def test_cancel_of_unknown_id_is_404(http, engine_server):
    r = http.post("/cancel/nope", headers=auth(engine_server))
    assert r.status_code == 404


def test_outputs_route_does_not_escape_its_folder(http, engine_server):
    for name in ("..%2F..%2Fetc%2Fpasswd", ".hidden", "%2Fetc%2Fpasswd"):
        assert http.get(f"/outputs/{name}", headers=auth(engine_server)).status_code == 404
        assert http.delete(f"/outputs/{name}", headers=auth(engine_server)).status_code == 404


def test_deleting_a_result_removes_its_thumbnail_and_sidecar_and_spares_one_in_use(http, engine_server, monkeypatch):
    path = engine_server.client.generate_wait(body_for("sd1", steps=2, seed=91))["result"]["path"]
    name, folder = os.path.basename(path), os.path.dirname(path)
    belongings = [path, os.path.join(folder, ".thumbs", name + ".jpg"), os.path.splitext(path)[0] + ".json"]
    assert all(os.path.exists(p) for p in belongings)
    assert http.delete(f"/outputs/{name}.json", headers=auth(engine_server)).status_code == 404  # goes with its result
    monkeypatch.setattr(engine_server.engine, "_control_images_in_use", lambda: {path})  # a queued edit reads it
    refused = http.delete(f"/outputs/{name}", headers=auth(engine_server))
    assert refused.status_code == 409 and "control image" in refused.json()["detail"] and os.path.exists(path)
    monkeypatch.undo()
    assert http.delete(f"/outputs/{name}", headers=auth(engine_server)).status_code == 204
    assert not any(os.path.exists(p) for p in belongings)
    assert name not in [e["name"] for e in http.get("/outputs", headers=auth(engine_server)).json()]
    assert http.delete(f"/outputs/{name}", headers=auth(engine_server)).status_code == 404


def png_bytes(size=(32, 24), color=(200, 30, 30)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def open_stream(engine_server, body, deadline_s=120, method="POST", path="/generate"):
    """A raw streaming request we can abandon mid-way; returns (response, decoder-fed frame iterator).
    Heartbeats keep a stuck stream alive for ever, so reading it past ``deadline_s`` fails the test."""
    client = httpx.Client(base_url=engine_server.url, timeout=60, headers=auth(engine_server))
    response = client.send(client.build_request(method, path, json=body), stream=True)
    decoder = FrameDecoder()
    deadline = time.monotonic() + deadline_s

    def frames():
        for chunk in response.iter_raw():
            yield from decoder.feed(chunk)
            assert time.monotonic() < deadline, f"the stream did not end within {deadline_s} s"

    return client, response, frames()


def test_disconnect_mid_run_cancels_and_the_queue_advances(engine_server):
    body = body_for("sd1", steps=500)
    client, response, frames = open_stream(engine_server, body)
    request_id = None
    for frame in frames:
        request_id = frame.request_id
        if frame.type == "progress" and frame.header["step"] >= 2:
            break
    response.close()
    client.close()
    assert wait_until(lambda: engine_idle(engine_server)), engine_server.client.queue()
    assert cancelled_in_the_end(engine_server, request_id)
    out_dir = engine_server.engine.output_folder
    assert not any(name.startswith(request_id) for name in os.listdir(out_dir))
    assert engine_server.client.generate_wait(body_for("sd1"))["http_status"] == 200


def test_a_wait_client_that_leaves_cancels_its_request(engine_server):
    """``?wait=1`` sends nothing until the end, so only the server's disconnect check can notice the client is
    gone (behind Starlette's BaseHTTPMiddleware that check never fired and the request ran to its end)."""
    before = set(os.listdir(engine_server.engine.output_folder))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{engine_server.url}/generate?wait=1",
            json=body_for("sd1", steps=500),
            headers=auth(engine_server),
            timeout=1,  # 500 tiny steps (the most a request may ask) took 3.0 s on an idle build box: 3 s raced it
        )
    assert wait_until(lambda: engine_idle(engine_server), timeout=30)
    assert set(os.listdir(engine_server.engine.output_folder)) == before


def test_disconnect_while_queued_removes_the_request(engine_server):
    blocker = body_for("sd1", steps=500)
    c1, r1, f1 = open_stream(engine_server, blocker)
    blocker_id = next(f for f in f1 if f.type == "progress").request_id
    c2, r2, f2 = open_stream(engine_server, body_for("sd1"))
    queued = next(f for f in f2 if f.type == "status" and f.header["stage"] == "queued")
    assert queued.header["position"] == 1
    r2.close()
    c2.close()
    assert wait_until(lambda: not engine_server.client.queue()["pending"])
    engine_server.client.cancel(blocker_id)
    r1.close()
    c1.close()
    assert wait_until(lambda: engine_idle(engine_server))
    assert cancelled_in_the_end(engine_server, queued.request_id)
    assert not any(n.startswith(queued.request_id) for n in os.listdir(engine_server.engine.output_folder))


def test_three_concurrent_clients_are_served_fifo_with_positions(engine_server):
    c0, r0, f0 = open_stream(engine_server, body_for("sd1", steps=500))
    blocker_id = next(f for f in f0 if f.type == "progress").request_id
    results, positions, streams = {}, {}, []
    for i in range(3):  # submitted one after the other, so FIFO order is i
        client, response, frames = open_stream(engine_server, body_for("sd1", seed=i))
        first_status = next(f for f in frames if f.type == "status")
        positions[i] = first_status.header["position"]
        streams.append((i, client, response, frames))
    assert positions == {0: 1, 1: 2, 2: 3}
    assert [row["position"] for row in engine_server.client.queue()["pending"]] == [1, 2, 3]

    def drain(i, client, response, frames):
        for frame in frames:
            if frame.type == "result":
                results[i] = frame.header["t"]
        response.close()
        client.close()

    threads = [threading.Thread(target=drain, args=s) for s in streams]
    for t in threads:
        t.start()
    engine_server.client.cancel(blocker_id)
    for t in threads:
        t.join(60)
    r0.close()
    c0.close()
    assert sorted(results) == [0, 1, 2]
    assert results[0] <= results[1] <= results[2]


def test_heartbeats_arrive_while_waiting_in_queue(engine_server):
    c0, r0, f0 = open_stream(engine_server, body_for("sd1", steps=500))
    blocker_id = next(f for f in f0 if f.type == "progress").request_id
    c1, r1, f1 = open_stream(engine_server, body_for("sd1"))
    times, flags = [], []
    for frame in f1:
        if frame.type == "status" and frame.header["stage"] == "queued":
            times.append(time.monotonic())
            flags.append(frame.header.get("heartbeat", False))
        if len(times) == 3:
            break
    engine_server.client.cancel(blocker_id)
    for c, r in ((c0, r0), (c1, r1)):
        r.close()
        c.close()
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(gap < 2.0 for gap in gaps), gaps
    assert flags == [False, True, True]  # the announcement, then repeats a client can tell apart
    assert wait_until(lambda: engine_idle(engine_server))


def test_slow_reader_still_gets_every_progress_frame_and_the_end(engine_server):
    """A client that reads nothing for a while: sampling goes on; ordered frames all arrive, latents may drop."""
    client, response, frames = open_stream(engine_server, body_for("sd1", steps=20))
    first = next(frames)
    time.sleep(1.0)
    rest = list(frames)
    response.close()
    client.close()
    progress = [f.header["step"] for f in rest if f.type == "progress"]
    latents = [f for f in rest if f.type == "latent"]
    assert first.type == "start" and rest[-1].type == "end" and rest[-1].header["ok"]
    assert progress == list(range(1, 21))
    assert 1 <= len(latents) <= 20 and latents[-1].header["step"] == 20


# ---------------------------------------------------------------------------------------------- schema fuzz
def test_schema_fuzz_finds_no_server_errors(engine_server):
    """Schemathesis generates requests from the OpenAPI spec; none may produce a 5xx."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_url(f"{engine_server.url}/openapi.json", headers=auth(engine_server))
    failures = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(case=operation.as_strategy())
        def run(case):
            response = case.call(headers=auth(engine_server), timeout=60)
            if response.status_code >= 500:
                failures.append((case.method, case.path, response.status_code, response.text[:300]))

        run()
    assert not failures, failures[:5]
    assert wait_until(lambda: engine_idle(engine_server), timeout=60)


def test_out_of_memory_while_sampling_is_an_oom_frame_and_the_engine_keeps_serving(engine_server):
    """Fault injection: the resident UNet raises CUDA's OOM once, mid-sampling (as a too-large request would)."""
    import torch

    body = body_for("sd1", steps=4, seed=21)
    first = engine_server.client.generate_wait(body)
    unet = engine_server.engine.holder.parts["unet"]
    calls = {"n": 0}
    original = unet.forward

    def failing_forward(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB (injected)")
        return original(*args, **kwargs)

    unet.forward = failing_forward
    try:
        frames = list(engine_server.client.generate(body))
    finally:
        del unet.forward  # back to the class method
    errors = [f.header for f in frames if f.type == "error"]
    assert errors and errors[0]["code"] == "oom" and "out of memory" in errors[0]["message"].lower()
    again = engine_server.client.generate_wait(body)
    assert again["http_status"] == 200
    with open(first["result"]["path"], "rb") as a, open(again["result"]["path"], "rb") as b:
        assert a.read() == b.read()


def test_prompt_flags_are_text_to_the_engine_not_a_way_around_its_checks(engine_server):
    """The attack from the security review: flags in the prompt once replaced checked fields after the checks
    (a control image read from anywhere on disk, a 100000² canvas, a million steps). The prompt is text now."""
    prompt = "x --ctrl_img /etc/hostname --w 100000 --h 100000 --s 1000000 --frames 999 --seed 5"
    body = body_for("sd1", steps=2, seed=1)
    body["sample"]["prompt"] = prompt
    frames = list(engine_server.client.generate(body))
    sample = frames[0].header["config"]["sample"]
    assert sample["prompt"] == prompt
    assert (sample["width"], sample["height"], sample["num_inference_steps"], sample["seed"]) == (64, 64, 2, 1)
    assert sample["ctrl_img"] is None and sample["num_frames"] == 1
    assert frames[0].header["latent"]["shape"] == [1, 4, 8, 8]
    [result] = [f.header for f in frames if f.type == "result"]
    assert (result["width"], result["height"]) == (64, 64)


def queued_positions(frames, until, count=2):
    """Read queued-status positions until ``until(positions)`` holds, then ``count`` more (heartbeats)."""
    positions, extra = [], None
    for frame in frames:
        if frame.type == "status" and frame.header["stage"] == "queued":
            positions.append(frame.header["position"])
            if extra is None and until(positions):
                extra = count
            elif extra is not None:
                extra -= 1
            if extra == 0:
                return positions
        elif frame.type != "status":
            raise AssertionError(f"{frame.type} frame while still waiting: {positions}")
    raise AssertionError(f"stream ended while waiting: {positions}")


def long_request(seed: int = 7) -> dict:
    return body_for("sd1", steps=500, seed=seed, width=256, height=256)


def test_positions_are_announced_and_heartbeaten_correctly_as_the_queue_advances(engine_server):
    """A, B, C wait behind a blocker. A leaves the line, then the blocker ends: each move is announced at
    once with the new place in line, and the heartbeats that follow repeat it (the UI shows these)."""
    # The blocker and B must outlast a few heartbeats: 500 steps (the most a request may ask) at 64² finished in
    # 3.0 s on an idle build box and raced them (2026-12-04: C started before its heartbeats), at 256² they do not.
    c0, r0, f0 = open_stream(engine_server, long_request())
    blocker_id = next(f for f in f0 if f.type == "progress").request_id
    streams = [
        open_stream(engine_server, long_request(seed=1) if i == 1 else body_for("sd1", seed=i, steps=2))
        for i in range(3)
    ]
    ids = []
    for expected, (_, _, frames) in enumerate(streams, start=1):
        first = next(f for f in frames if f.type == "status")
        assert first.header["position"] == expected
        ids.append(first.request_id)
    (_, _, fb), (_, _, fc) = streams[1][0:3], streams[2][0:3]

    engine_server.client.cancel(ids[0])  # A leaves the line while queued
    seen_b = queued_positions(fb, lambda p: p[-1] == 1)
    seen_c = queued_positions(fc, lambda p: p[-1] == 2)
    assert set(seen_b) <= {1, 2} and seen_b[-3:] == [1, 1, 1], seen_b
    assert set(seen_c) <= {2, 3} and seen_c[-3:] == [2, 2, 2], seen_c
    assert [row["position"] for row in engine_server.client.queue()["pending"]] == [1, 2]

    engine_server.client.cancel(blocker_id)  # the line moves: B runs, C is next
    seen_c = queued_positions(fc, lambda p: p[-1] == 1)
    assert set(seen_c) <= {1, 2} and seen_c[-3:] == [1, 1, 1], seen_c
    assert engine_server.client.queue()["running"]["request_id"] == ids[1]
    engine_server.client.cancel(ids[1])
    for client, response, _ in [(c0, r0, None)] + streams:
        response.close()
        client.close()
    assert wait_until(lambda: engine_idle(engine_server), timeout=60)


def test_a_full_queue_is_429_with_retry_after_and_the_engine_serves_on(tmp_path, tiny_cache):
    """The queue-flood attack: past ``engine.max_queue`` waiting requests, new ones are refused at once."""
    from testing.engine_harness import EngineHarness

    h = EngineHarness(tmp_path, max_queue=2)
    try:
        c0, r0, f0 = open_stream(h, body_for("sd1", steps=500))
        blocker_id = next(f for f in f0 if f.type == "progress").request_id
        waiting = [open_stream(h, body_for("sd1", seed=i)) for i in range(2)]
        for _, _, frames in waiting:
            next(f for f in frames if f.type == "status")
        with httpx.Client(base_url=h.url, timeout=30, headers=auth(h)) as http:
            for _ in range(3):
                r = http.post("/generate", json=body_for("sd1"))
                assert r.status_code == 429 and "full" in r.json()["detail"]
                assert 1 <= int(r.headers["retry-after"]) <= 60
            # Refused before the body is read: a body that would be a 422 is not even parsed, and the connection
            # that carried an unread 600 KB body still serves the next request.
            unread = http.post("/generate", content=b"{" + b" " * 600_000, headers={"content-type": "application/json"})
            assert unread.status_code == 429 and "full" in unread.json()["detail"]
            openai = http.post("/v1/images/generations", json={"prompt": "x", "model": "no-such-model"})
            assert openai.status_code == 429 and openai.json()["error"]["code"] == "rate_limit_exceeded"
            assert int(openai.headers["retry-after"]) >= 1
            assert http.post("/generate", json={"model": {"arch": "nope"}}).status_code == 429
            assert len(h.client.queue()["pending"]) == 2
            h.client.cancel(blocker_id)
            for client, response, frames in waiting:
                assert [f for f in frames if f.type == "end"][0].header["ok"] is True
                response.close()
                client.close()
            r0.close()
            c0.close()
            assert http.post("/generate", params={"wait": 1}, json=body_for("sd1")).status_code == 200
    finally:
        h.close()


def test_a_download_is_named_from_its_prompt_and_seed(http, engine_server):
    body = body_for("sd1", steps=2, seed=93)
    body["sample"]["prompt"] = "A red circle, on blue!"
    name = os.path.basename(engine_server.client.generate_wait(body)["result"]["path"])
    plain = http.get(f"/outputs/{name}", headers=auth(engine_server))
    assert plain.status_code == 200 and "content-disposition" not in plain.headers  # inline, for <img>
    download = http.get(f"/outputs/{name}?download=1", headers=auth(engine_server))
    assert download.status_code == 200 and download.content == plain.content
    assert download.headers["content-disposition"] == 'attachment; filename="A_red_circle_on_blue_93.png"'


def test_models_say_how_many_references_a_family_takes_and_which_takes_lyrics(http, engine_server):
    """The page's form builds its reference slots and its lyrics field from these, not from its own tables."""
    models = {m["arch"]: m for m in http.get("/models", headers=auth(engine_server)).json()}
    assert models["qwen_image_edit_plus"]["max_control_images"] == 3
    assert models["flux_kontext"]["max_control_images"] == models["flux_kontext"]["control_images"] == 1
    assert models["sd1"]["max_control_images"] == 0
    assert sorted(a for a, m in models.items() if m["takes_lyrics"]) == ["ace_step_15", "ace_step_15_xl"]
