"""The cluster's parts that need no Ray cluster: the residency rule, the router's bookkeeping, routing keys, frame
cutting, the merged answers. test_cluster.py runs them together on a real cluster."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from extensions_built_in.inference_cluster import merge
from extensions_built_in.inference_cluster.frame_cutter import FrameCutter, closing_frames, last_frame
from extensions_built_in.inference_cluster.model_key import model_key, resident_key
from extensions_built_in.inference_cluster.placement import ReplicaView, SendLog, Timing, choose, typical_timing
from extensions_built_in.inference_cluster.replica_client import RequestBook
from extensions_built_in.inference_cluster.replica_stats import RecentTimings, RequestKeys, routing_stats
from extensions_built_in.inference_engine.protocol import FrameEncoder, ProtocolError, read_frames
from testing.conftest import ROOT

TIMING = Timing(request_s=10.0, swap_s=30.0)


# ---------------------------------------------------------------------------------------------- the rule
def test_a_holder_with_a_short_line_takes_its_model():
    views = [ReplicaView("a", 2, "A"), ReplicaView("b", 0, "B")]
    assert choose("A", views, TIMING, {}).id == "a"  # 2 x 10 s waiting beats a 30 s swap


def test_a_holder_whose_line_outlasts_a_swap_loses_the_request():
    views = [ReplicaView("a", 4, "A"), ReplicaView("b", 0, "B")]
    assert choose("A", views, TIMING, {}).id == "b"  # 40 s in line > 30 s swap + 0 in line
    assert choose("A", [ReplicaView("a", 4, "A"), ReplicaView("b", 1, "B")], TIMING, {}).id == "a"  # 40 = 30 + 10


def test_the_shortest_line_among_holders():
    views = [ReplicaView("a", 3, "A"), ReplicaView("b", 1, "A"), ReplicaView("c", 0, None)]
    assert choose("A", views, TIMING, {}).id == "b"


def test_without_a_holder_the_shortest_line_then_the_model_wanted_longest_ago():
    views = [ReplicaView("a", 0, "A"), ReplicaView("b", 0, "B"), ReplicaView("c", 1, None)]
    assert choose("C", views, TIMING, {"A": 5.0, "B": 9.0}).id == "a"
    assert choose("C", views, TIMING, {"A": 9.0, "B": 5.0}).id == "b"
    assert choose("C", views + [ReplicaView("d", 0, None)], TIMING, {"A": 1.0, "B": 1.0}).id == "d"  # empty first
    assert choose(None, views, TIMING, {}).load == 0  # no key (a body the engine will refuse): any short line


def test_replicas_whose_engine_is_down_get_nothing_while_others_are_up():
    views = [ReplicaView("a", 0, "A", ok=False), ReplicaView("b", 5, "B")]
    assert choose("A", views, TIMING, {}).id == "b"
    assert choose("A", [ReplicaView("a", 0, "A", ok=False)], TIMING, {}).id == "a"


def test_typical_times_are_the_replicas_medians_else_the_defaults():
    assert typical_timing([{}, {"run_s": None}], TIMING) == TIMING
    measured = [{"run_s": 1.0, "swap_s": 4.0}, {"run_s": 3.0}, {"run_s": 2.0, "swap_s": 6.0}]
    assert typical_timing(measured, TIMING) == Timing(2.0, 5.0)


# ---------------------------------------------------------------------------------------------- between two stats
def test_sends_since_the_stats_count_until_they_end():
    log = SendLog()
    stats = {"at": 100.0, "queue": 1, "busy": True, "tail": "A"}
    log.sent("r", "c1", "B", detached=False, now=101.0)
    view = log.view("r", stats, now=101.5)
    assert (view.load, view.tail) == (3, "B")  # 1 waiting + 1 running + 1 sent since; B runs last
    log.done("r", "c1", now=102.0)
    assert log.view("r", stats, now=102.5).load == 2
    assert log.view("r", {"at": 103.0, "queue": 0, "busy": False, "tail": "B"}, now=103.5).load == 0


def test_the_latest_send_the_stats_may_not_know_of_sets_the_tail():
    """A ``?wait=1`` request's id reaches its replica at its end: stats taken meanwhile name the model before."""
    log = SendLog()
    log.sent("r", "c1", "B", detached=False, now=99.0)
    assert log.view("r", {"at": 100.0, "busy": True, "tail": "A"}, now=100.5).tail == "B"
    log.done("r", "c1", now=101.0)
    assert log.view("r", {"at": 100.0, "busy": True, "tail": "A"}, now=101.5).tail == "B"
    assert log.view("r", {"at": 102.0, "tail": "B"}, now=102.5).tail == "B"
    assert log.view("r", {"at": 103.0, "tail": "C"}, now=103.5).tail == "C"  # forgotten: the stats know better


def test_a_request_the_stats_counted_and_that_ended_since_is_not_counted_twice():
    log = SendLog()
    log.sent("r", "c1", "A", detached=False, now=99.0)
    log.done("r", "c1", now=101.0)
    assert log.view("r", {"at": 100.0, "queue": 0, "busy": True, "tail": "A"}, now=101.5).load == 0


def test_a_detached_run_counts_until_stats_newer_than_its_send():
    log = SendLog()
    log.sent("r", "c1", "A", detached=True, now=101.0)
    log.done("r", "c1", now=101.1)  # the 202 came back; the run goes on
    assert log.view("r", {"at": 100.0, "queue": 0, "busy": False}, now=102.0).load == 1
    assert log.view("r", {"at": 102.0, "queue": 0, "busy": True, "tail": "A"}, now=102.5).load == 1


def test_the_router_addresses_places_and_randomises():
    from extensions_built_in.inference_cluster.router import ResidencyRouter

    router = object.__new__(ResidencyRouter)
    router.initialize_state(policy="residency", request_s=10, swap_s=30)
    replicas = [fake_replica("a", {"at": 1.0, "tail": "A"}), fake_replica("b", {"at": 1.0, "tail": "B"})]

    def chosen(route):
        ranks = asyncio.run(router.choose_replicas(replicas, SimpleNamespace(kwargs={"route": route})))
        return [r.replica_id.unique_id for r in ranks[0]]

    assert chosen({"replica": "b"}) == ["b"]
    assert chosen({"replica": "gone"}) == ["a", "b"]  # any; it answers 404 for what it never had
    assert chosen({}) == ["a", "b"]
    assert chosen({"generate": True, "model": "B"}) == ["b"]
    assert chosen({"generate": True, "model": "A"}) == ["a"]
    router.initialize_state(policy="random")
    assert {chosen({"generate": True, "model": "A"})[0] for _ in range(64)} == {"a", "b"}
    with pytest.raises(ValueError):
        router.initialize_state(policy="sticky")


def fake_replica(unique_id: str, stats: dict):
    return SimpleNamespace(replica_id=SimpleNamespace(unique_id=unique_id), routing_stats=stats)


# ---------------------------------------------------------------------------------------------- keys and stats
def test_a_model_has_one_key_however_its_defaults_are_spelled():
    short = {"arch": "sd1", "name_or_path": "tiny:sd1"}
    spelled = short | {"dtype": "float16", "extras_name_or_path": "tiny:sd1", "quantize": False, "loras": []}
    assert model_key(short) == model_key(spelled) is not None
    assert model_key(short | {"dtype": "float32"}) != model_key(short)
    assert model_key(short | {"lora_path": "a.safetensors"}) != model_key(short)
    assert model_key({"arch": "sd1"}) is None and model_key("sd1") is None and model_key(None) is None


def test_an_engines_resident_holder_has_its_requests_key():
    """What /health says of the holder (resolved LoRA paths, a memory plan) keys as the request did."""
    from toolkit.config_modules import ModelConfig

    request = {"arch": "sd1", "name_or_path": "tiny:sd1", "lora_path": "loras/x.safetensors"}
    identity = ModelConfig.from_dict(request | {"lora_path": "/models/loras/x.safetensors"}).identity()
    active = {"arch": "sd1", "name_or_path": "tiny:sd1", "config": identity | {"memory_plan": {"placements": {}}}}
    assert resident_key(active) == model_key(request)
    assert resident_key(None) is None


def test_routing_stats_name_the_model_each_replica_ends_its_line_with():
    keys = RequestKeys()
    keys.remember("r1", "A")
    keys.remember("r2", "B")
    health = {"active": None}
    queue = {"running": {"request_id": "r1"}, "pending": [{"request_id": "r2"}]}
    stats = routing_stats("x", health, queue, keys, RecentTimings())
    assert (stats["tail"], stats["queue"], stats["busy"], stats["run_s"]) == ("B", 1, True, None)
    assert routing_stats("x", health, {"running": None, "pending": []}, keys, RecentTimings())["tail"] is None


def test_a_run_whose_call_ended_is_not_in_line_though_the_engine_still_lists_it():
    keys = RequestKeys()
    keys.remember("r1", "A")
    keys.ended("r1")  # its stream sent ``end``; the engine frees memory before it takes the row off
    stats = routing_stats(
        "x", {"active": None}, {"running": {"request_id": "r1"}, "pending": []}, keys, RecentTimings()
    )
    assert (stats["busy"], stats["queue"], stats["tail"]) == (False, 0, "A")


def test_recent_timings_tell_runs_from_swaps():
    timings = RecentTimings()
    timings.add({"total_s": 2.01, "queued_s": 7.0, "load_s": 0.01})  # reused holder: no swap; queued_s not in total_s
    timings.add({"total_s": 9.0, "queued_s": 0.0, "load_s": 5.0})
    timings.add(None)
    assert timings.medians() == {"run_s": 3.0, "swap_s": 5.0}


def test_the_request_book_forgets_the_oldest():
    book = RequestBook(size=2)
    for rid in ("1", "2", "3"):
        book.remember(rid, "replica" + rid)
    assert book.replica_of("1") is None and book.replica_of("3") == "replica3"


# ---------------------------------------------------------------------------------------------- frames
def encoded_stream(request_id: str = "f" * 32) -> bytes:
    enc = FrameEncoder(request_id)
    return b"".join(
        [
            enc.frame("status", stage="queued", message="Waiting"),
            enc.latent(1, [[[[0.5, 1.0], [2.0, 3.0]]]], "BCHW"),
            enc.frame("progress", step=1, total=2, eta_s=None, it_s=None),
        ]
    )


def test_the_cutter_hands_on_whole_frames_only_whatever_the_chunks():
    data = encoded_stream()
    cutter, out = FrameCutter(), []
    for i in range(len(data)):
        piece = cutter.feed(data[i : i + 1])
        if piece:
            read_frames(piece)  # each piece is whole frames
            out.append(piece)
    assert b"".join(out) == data and len(out) == 3 and cutter.pending == 0
    with pytest.raises(ProtocolError):
        FrameCutter().feed(b"\x00\x00\x00\x00")


def test_closing_frames_continue_the_stream_the_client_got():
    data = encoded_stream()
    ending = closing_frames("unused", last_frame(data), "replica x failed mid-stream")
    frames = read_frames(data + ending)
    assert [f.type for f in frames[-2:]] == ["error", "end"]
    assert frames[-2].header["code"] == "internal" and frames[-1].header["ok"] is False
    assert [f.seq for f in frames] == [0, 1, 2, 3, 4] and {f.request_id for f in frames} == {"f" * 32}
    assert [f.seq for f in read_frames(closing_frames("r" * 32, None, "before any frame"))] == [0, 1]
    finished = FrameEncoder("e" * 32).frame("end", ok=True)
    assert closing_frames("e" * 32, last_frame(finished), "late") == b""


# ---------------------------------------------------------------------------------------------- merged answers
def test_the_merged_queue_keeps_the_engines_shape_and_says_where():
    row = {"request_id": "a", "created": 2.0, "position": 0}
    merged = merge.queue([("x", {"running": row, "pending": [{"request_id": "b", "created": 3.0, "position": 1}]})])
    assert merged["running"] == row | {"replica": "x"} and merged["pending"][0]["replica"] == "x"
    assert merged["replicas"][0]["replica"] == "x"


def test_merged_outputs_are_newest_first_and_each_file_once():
    listing = [{"name": "a.png", "mtime": 1}, {"name": "b.png", "mtime": 3}]
    assert [e["name"] for e in merge.outputs([listing, listing[:1]], limit=10)] == ["b.png", "a.png"]
    assert len(merge.outputs([listing], limit=1)) == 1


def test_unload_succeeds_when_any_replica_unloaded():
    status, body = merge.unload([("x", 200, {"unloaded": ["k1"], "resident_bytes": 5}), ("y", 409, {"detail": "busy"})])
    assert status == 200 and body["unloaded"] == ["k1"] and body["replicas"] == {"x": 200, "y": 409}
    assert merge.unload([("y", 409, {"detail": "busy"})]) == (409, {"detail": "busy"})


def test_health_reports_a_replica_that_did_not_answer():
    answers = [
        ("x", {"ok": True, "busy": True, "queue": 2, "device": "cpu", "counters": {"misses": 1}}),
        ("y", TimeoutError()),
    ]
    health = merge.health(answers, expected=2, routing="residency")
    assert health["ok"] and health["busy"] and health["queue"] == 2 and health["cluster"]["up"] == 1
    assert [r["ok"] for r in health["replicas"]] == [True, False] and health["counters"] == {"misses": 1}


def test_the_ingress_keeps_the_engines_host_and_health_rules(tmp_path):
    """The ingress's own /health: ``{"ok"}`` to anyone, every replica's folder and pids with the token; any Host
    but a loopback name is 421 there as on an engine. The replicas are stand-ins: only the ingress runs here."""
    import httpx

    from extensions_built_in.inference_cluster.ingress import Cluster, create_ingress_app
    from extensions_built_in.inference_engine.assets import AssetStore
    from extensions_built_in.inference_engine.model_aliases import ModelAliases
    from extensions_built_in.inference_engine.server import LoopbackServer

    class Replicas:
        async def each(self, method, *args):
            return [("r1", {"ok": True, "busy": False, "queue": 0, "folder": "/secret/replica-0", "engine_pid": 7})]

    cluster = Cluster(Replicas(), AssetStore(str(tmp_path / "assets")), ModelAliases(), 1, "residency")
    server = LoopbackServer(create_ingress_app(cluster, "tok"), thread_name="ingress-test")
    url = f"http://127.0.0.1:{server.start()}"
    try:
        assert httpx.get(url + "/health").json() == {"ok": True}
        detailed = httpx.get(url + "/health", headers={"Authorization": "Bearer tok"}).json()
        assert detailed["replicas"][0]["folder"] == "/secret/replica-0"
        for path in ("/health", "/queue"):
            r = httpx.get(url + path, headers={"Host": "evil.example", "Authorization": "Bearer tok"})
            assert r.status_code == 421 and "127.0.0.1" in r.json()["detail"]
    finally:
        server.stop()


def test_the_ingress_imports_neither_torch_nor_ray():
    code = (
        "import sys; import extensions_built_in.inference_cluster.ingress;"
        "assert 'torch' not in sys.modules and 'ray' not in sys.modules, sorted(sys.modules)[:5]"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


# ---------------------------------------------------------------------------------------------- metrics
def test_the_ingress_scrape_labels_each_replicas_engine_series_with_it():
    from prometheus_client.parser import text_string_to_metric_families

    from extensions_built_in.inference_cluster.metrics import IngressMetrics

    engine_text = (
        "# HELP aitk_engine_requests Finished requests\n# TYPE aitk_engine_requests counter\n"
        'aitk_engine_requests_total{outcome="ok"} 3.0\n'
    )
    metrics = IngressMetrics()
    metrics.finished("ok")
    body, content_type = metrics.exposition([("r1", engine_text), ("r2", engine_text), ("r3", None)], expected=3)
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }
    assert content_type.startswith("text/plain")
    assert samples[("aitk_engine_requests_total", (("outcome", "ok"), ("replica", "r1")))] == 3.0
    assert samples[("aitk_engine_requests_total", (("outcome", "ok"), ("replica", "r2")))] == 3.0
    assert samples[("aitk_cluster_replicas_up", ())] == 2 and samples[("aitk_cluster_replicas_expected", ())] == 3
    assert samples[("aitk_cluster_requests_total", (("outcome", "ok"),))] == 1.0


def test_an_outcome_is_read_from_the_last_frames_or_the_wait_answer():
    from extensions_built_in.inference_cluster.metrics import outcome_of_frames, outcome_of_json
    from extensions_built_in.inference_engine.protocol import encode_frame

    def frame(kind, **fields):
        return encode_frame({"type": kind, "request_id": "r", "seq": 0, "t": 0, **fields})

    assert outcome_of_frames(frame("status", stage="saving", message="m") + frame("end", ok=True)) == "ok"
    assert outcome_of_frames(frame("error", code="oom", message="m") + frame("end", ok=False)) == "oom"
    assert outcome_of_frames(frame("status", stage="sampling", message="m")) == "internal"  # cut off before its end
    assert outcome_of_json({"request_id": "r", "results": []}, 200) == "ok"
    assert outcome_of_json({"error": {"code": "cancelled"}}, 499) == "cancelled"
    assert outcome_of_json({"detail": "queue full"}, 429) == "bad_request"


def test_replicas_import_from_the_callers_path_after_the_repository():
    from extensions_built_in.inference_cluster.engine_process import TOOLKIT_ROOT
    from extensions_built_in.inference_cluster.InferenceCluster import worker_env

    assert worker_env({}) == {"PYTHONPATH": TOOLKIT_ROOT}
    site = "/tmp/aitk_site" + os.pathsep + "/opt/more"
    assert worker_env({"PYTHONPATH": site})["PYTHONPATH"].split(os.pathsep) == [
        TOOLKIT_ROOT,
        "/tmp/aitk_site",
        "/opt/more",
    ]


def test_an_engine_that_breaks_off_before_its_first_frame_still_answers_with_its_head():
    """The ingress answers 503 for a call that fails before its head, an ``error`` frame for one that fails
    after; a run the engine accepted is the second kind, even when it dies before its ``start`` frame."""
    import httpx

    from extensions_built_in.inference_cluster.replica import EngineGone, EngineReplica
    from extensions_built_in.inference_engine.protocol import MEDIA_TYPE

    class BrokenBody(httpx.AsyncByteStream):
        async def __aiter__(self):
            raise httpx.ReadError("connection reset")
            yield b""

    def engine(request):
        return httpx.Response(200, headers={"content-type": MEDIA_TYPE, "x-request-id": "r1"}, stream=BrokenBody())

    replica = object.__new__(EngineReplica)
    replica.id, replica.keys, replica.timings = "rep", RequestKeys(), RecentTimings()
    replica.http = httpx.AsyncClient(base_url="http://engine", transport=httpx.MockTransport(engine))
    request = {"method": "POST", "path": "/generate", "query": {}, "headers": {}, "body": b"{}"}

    async def run():
        stream = replica.stream(request, {"generate": True, "model": "m"})
        head = await anext(stream)
        with pytest.raises(EngineGone, match="broke off"):
            await anext(stream)
        return head

    head = asyncio.run(run())
    assert (head["status"], head["replica"], head.get("first", b"")) == (200, "rep", b"")
    assert replica.keys.has_ended("r1")
