"""GET /metrics: Prometheus text behind the token, moved by exactly what requests did. Real engine, real HTTP."""

import math

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from extensions_built_in.inference_engine.metrics import EngineMetrics
from extensions_built_in.inference_engine.protocol import ERROR_CODES
from extensions_built_in.inference_engine.stream import FrameStream
from testing.stream_contract import body_for
from testing.test_engine_http import auth, engine_idle, wait_until


@pytest.fixture()
def http(engine_server):
    with httpx.Client(base_url=engine_server.url, timeout=60) as client:
        yield client


def scrape(http, engine_server) -> dict:
    """{(sample name, sorted labels): value} for every sample of one scrape."""
    r = http.get("/metrics", headers=auth(engine_server))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples: dict, name: str, **labels) -> float:
    """Sum over every series of ``name`` whose labels include ``labels``."""
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls))


def test_metrics_needs_the_token(http, engine_server):
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        r = http.get("/metrics", headers=headers)
        assert r.status_code == 401 and "token" in r.json()["detail"]
    samples = scrape(http, engine_server)
    names = {name for name, _ in samples}
    for expected in (
        "aitk_engine_requests_total",
        "aitk_engine_queue_depth",
        "aitk_engine_busy",
        "aitk_engine_time_to_first_byte_seconds_count",
        "aitk_engine_pool_hits_total",
        "aitk_engine_pool_misses_total",
        "aitk_engine_pool_evictions_total",
        "aitk_engine_pool_parked_total",
        "aitk_engine_pool_ram_hits_total",
        "aitk_engine_resident_bytes",
    ):
        assert expected in names, sorted(names)
    # Every outcome's series is there before any request ends that way, so rate() sees the first one.
    assert {value_labels for name, value_labels in samples if name == "aitk_engine_requests_total"} == {
        (("outcome", o),) for o in ("ok", *ERROR_CODES)
    }
    # Without CUDA there is no VRAM: the gauges are left out, not reported as 0.
    cuda = http.get("/health", headers=auth(engine_server)).json()["vram"] is not None
    vram = {"aitk_engine_vram_bytes_in_use", "aitk_engine_vram_bytes_peak"}
    assert {name for name in names if name.startswith("aitk_engine_vram_")} == (vram if cuda else set())


def test_metrics_move_by_exactly_what_the_requests_did(http, engine_server, tmp_path):
    client = engine_server.client
    assert wait_until(lambda: engine_idle(engine_server), timeout=60)
    client.unload()
    health_before = http.get("/health", headers=auth(engine_server)).json()["counters"]
    before = scrape(http, engine_server)

    # 1. Streamed, ok (loads tiny:sd1 from nothing: pool misses).
    frames = list(client.generate(body_for("sd1")))
    results = [f.header for f in frames if f.type == "result"]
    assert frames[-1].header["ok"] and len(results) == 1
    # 2. Streamed, fails with an error frame.
    failing = body_for("sd1")
    failing["model"]["name_or_path"] = str(tmp_path / "no_such_model")  # inside the model roots, never written
    frames = list(client.generate(failing))
    assert [f.header["code"] for f in frames if f.type == "error"] == ["load_failed"]
    # 3. Detached, ok, and 4. detached, cancelled while it waits behind 3 (only a stream's end sees that one).
    slow = client.submit(body_for("sd1", steps=40))
    queued = client.submit(body_for("sd1", seed=8))
    assert client.cancel(queued["request_id"])["status"] == "cancelled"
    frames = list(client.frames(slow["request_id"]))
    results += [f.header for f in frames if f.type == "result"]
    assert frames[-1].header["ok"] and len(results) == 2

    after = scrape(http, engine_server)
    health_after = http.get("/health", headers=auth(engine_server)).json()

    def moved(name, **labels):
        return total(after, name, **labels) - total(before, name, **labels)

    assert moved("aitk_engine_requests_total", outcome="ok") == 2
    assert moved("aitk_engine_requests_total", outcome="load_failed") == 1
    assert moved("aitk_engine_requests_total", outcome="cancelled") == 1
    assert moved("aitk_engine_requests_total") == 4
    assert moved("aitk_engine_request_seconds_count") == 4
    assert moved("aitk_engine_request_seconds_count", arch="sd1", outcome="ok") == 2
    assert moved("aitk_engine_request_seconds_count", arch="sd1", outcome="load_failed") == 1
    assert moved("aitk_engine_request_seconds_count", arch="sd1", outcome="cancelled") == 1
    # The two ok requests took at least the time their results report (queued -> end covers sampling and saving).
    assert moved("aitk_engine_request_seconds_sum", outcome="ok") >= sum(r["timings"]["total_s"] for r in results)
    # One observation per request that sampled: the median step its result reports.
    assert moved("aitk_engine_step_seconds_count", arch="sd1") == 2
    step_sum = moved("aitk_engine_step_seconds_sum", arch="sd1")
    assert math.isclose(step_sum, sum(r["timings"]["step_s"] for r in results), rel_tol=1e-9)
    # Only the two streamed POST /generate responses: detached ones answer with JSON, not frames.
    assert moved("aitk_engine_time_to_first_byte_seconds_count") == 2
    assert 0 < moved("aitk_engine_time_to_first_byte_seconds_sum") < 10

    for name in ("hits", "misses", "evictions", "parked", "ram_hits"):
        assert moved(f"aitk_engine_pool_{name}_total") == health_after["counters"][name] - health_before[name], name
    assert moved("aitk_engine_pool_misses_total") > 0  # the unload made the first request load its components
    assert value(after, "aitk_engine_resident_bytes") == health_after["resident_bytes"] > 0
    assert value(after, "aitk_engine_busy") == 0 and value(after, "aitk_engine_queue_depth") == 0

    unloaded = client.unload()["unloaded"]  # /unload drops every entry: one eviction each
    emptied = scrape(http, engine_server)
    evicted = value(emptied, "aitk_engine_pool_evictions_total") - value(after, "aitk_engine_pool_evictions_total")
    assert evicted == len(unloaded) > 0
    assert value(emptied, "aitk_engine_resident_bytes") == 0


def test_busy_and_queue_depth_follow_the_engine(http, engine_server):
    """While one request runs and another waits: busy 1, queue_depth 1."""
    assert wait_until(lambda: engine_idle(engine_server), timeout=60)
    client = engine_server.client
    running, waiting = client.submit(body_for("sd1", steps=200)), client.submit(body_for("sd1"))
    try:
        assert wait_until(lambda: client.queue()["running"] is not None)
        samples = scrape(http, engine_server)
        assert value(samples, "aitk_engine_busy") == 1 and value(samples, "aitk_engine_queue_depth") == 1
    finally:
        for request in (waiting, running):
            client.cancel_quietly(request["request_id"])
    assert wait_until(lambda: engine_idle(engine_server), timeout=60)
    samples = scrape(http, engine_server)
    assert value(samples, "aitk_engine_busy") == 0 and value(samples, "aitk_engine_queue_depth") == 0


# ---------------------------------------------------------------------------------------------- without a server
class FakePool:
    counters = {"hits": 3, "misses": 2, "evictions": 1, "ram_hits": 0, "parked": 0}

    def resident_bytes(self):
        return 1234


class FakeQueue:
    running = None

    def __len__(self):
        return 0

    def running_items(self):
        return []


def parse(metrics: EngineMetrics) -> dict:
    body, content_type = metrics.exposition()
    assert content_type.startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def test_each_engine_has_its_own_registry():
    """Two engines in one process (the tests run several): no clash over names, and neither sees the other's."""
    first, second = EngineMetrics(FakePool(), FakeQueue()), EngineMetrics(FakePool(), FakeQueue())
    first.request_finished("sd1", "ok", 1.5, 0.02)
    first.first_byte(0.003)
    a, b = parse(first), parse(second)
    assert value(a, "aitk_engine_requests_total", outcome="ok") == 1
    assert value(b, "aitk_engine_requests_total", outcome="ok") == 0
    assert value(a, "aitk_engine_request_seconds_sum", arch="sd1", outcome="ok") == 1.5
    assert value(a, "aitk_engine_step_seconds_count", arch="sd1") == 1
    assert value(a, "aitk_engine_time_to_first_byte_seconds_count") == 1
    assert value(b, "aitk_engine_time_to_first_byte_seconds_count") == 0
    assert value(a, "aitk_engine_pool_hits_total") == 3 and value(a, "aitk_engine_resident_bytes") == 1234


def test_a_failure_without_steps_observes_no_step_time():
    metrics = EngineMetrics(FakePool(), FakeQueue())
    metrics.request_finished("flux", "oom", 4.0, None)
    samples = parse(metrics)
    assert value(samples, "aitk_engine_requests_total", outcome="oom") == 1
    assert value(samples, "aitk_engine_request_seconds_count", arch="flux", outcome="oom") == 1
    assert total(samples, "aitk_engine_step_seconds_count") == 0


def test_a_stream_reports_its_end_once_before_the_end_frame():
    """The hook runs once, with the error frame's code, and before ``end``: a client that read the end frame
    scrapes a request already counted."""
    stream = FrameStream("r1")
    seen = []
    stream.on_finish = lambda ok, code: seen.append((ok, code, stream.closed))
    stream.finish(False, None, "boom")  # no code given: the frame says internal, and so does the hook
    stream.finish(False, "cancelled", "again")
    stream.finish(True)
    assert seen == [(False, "internal", False)]
    ok_stream = FrameStream("r2")
    ok_stream.on_finish = lambda ok, code: seen.append((ok, code, ok_stream.closed))
    ok_stream.finish(True)
    assert seen[1:] == [(True, None, False)]


def test_vram_gauges_come_from_what_health_reports(monkeypatch):
    """The CUDA branch, on any machine: ``allocated`` and ``peak_allocated`` of ``vram_stats``."""
    from extensions_built_in.inference_engine import metrics as metrics_module

    stats = {"used": 9, "total": 10, "allocated": 4096, "peak_allocated": 8192, "budget": None}
    monkeypatch.setattr(metrics_module, "vram_stats", lambda: stats)
    samples = parse(EngineMetrics(FakePool(), FakeQueue()))
    assert value(samples, "aitk_engine_vram_bytes_in_use") == 4096
    assert value(samples, "aitk_engine_vram_bytes_peak") == 8192
