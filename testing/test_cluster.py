"""The cluster as a user runs it: ``python run.py`` on config/examples/inference_cluster_tiny.yaml (its folder and
database moved to a temporary one), two CPU engine replicas on a local Ray, driven through client.py.

One cluster for the whole module (Ray and two engines take ~20 s to start on 2 cores); the tests that kill a
replica wait for Serve to replace it before they end, and the last test stops the cluster.
"""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
import threading
import time

import httpx
import pytest

from extensions_built_in.inference_cluster.model_key import model_key
from extensions_built_in.inference_engine.client import EngineClient
from extensions_built_in.inference_engine.server import MAX_JSON_BODY
from testing.cluster_harness import ClusterJob
from testing.engine_harness import wait_for
from testing.stream_contract import body_for
from toolkit.ui_job_status import create_schema, insert_job

A, B = "sd1", "pixart_sigma"
KEY = {arch: model_key(body_for(arch)["model"]) for arch in (A, B)}
LONG = {"steps": 500, "width": 256, "height": 256}  # tens of seconds: an end within seconds is a cancel, not a finish


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cluster")
    db = str(tmp / "aitk_db.db")
    create_schema(db)
    job = ClusterJob(tmp, db=db)
    job.job_id = insert_job(db, job.config["config"]["name"], job.config, job_type="inference", status="running")
    try:
        yield job.start()
    finally:
        job.stop()


def generate(cluster: ClusterJob, arch: str, **kwargs) -> list:
    frames = list(cluster.client.generate(body_for(arch, **kwargs)))
    assert frames[-1].type == "end" and frames[-1].header["ok"], [f.header for f in frames[-3:]]
    return frames


def start_long_generation(cluster: ClusterJob, arch: str = A):
    """A long generation on a thread; returns (frames list, thread, the request id once it samples)."""
    frames, sampling = [], threading.Event()

    def run():
        with EngineClient.from_engine_json(str(cluster.engine_json), timeout=60, generation_timeout_s=180) as client:
            try:
                for frame in client.generate(body_for(arch, **LONG)):
                    frames.append(frame)
                    if frame.type == "progress":
                        sampling.set()
            except Exception as e:  # a cut stream (no end frame) or a broken frame lands here and fails the test
                frames.append(e)
            sampling.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert sampling.wait(60), frames
    return frames, thread, frames[0].request_id


def queue_rows(cluster: ClusterJob) -> list:
    """Every replica's running and waiting requests (the merged /queue tags each row with its replica)."""
    rows = []
    for replica in cluster.client.queue()["replicas"]:
        rows += ([replica["running"]] if replica["running"] else []) + replica["pending"]
    return rows


def running_replica(cluster: ClusterJob, request_id: str) -> str:
    row = next((r for r in queue_rows(cluster) if r["request_id"] == request_id), None)
    assert row is not None and row["position"] == 0, row
    return row["replica"]


# ---------------------------------------------------------------------------------------------- routing
def test_alternating_models_stay_on_the_replica_that_holds_them(cluster):
    for arch in (A, B):  # the first two load, one model per replica
        generate(cluster, arch)
    before = {r["id"]: r for r in cluster.health()["replicas"]}
    assert {r["resident"] for r in before.values()} == {KEY[A], KEY[B]}
    for arch in (A, B, A, B):
        generate(cluster, arch)
    after = {r["id"]: r for r in cluster.health()["replicas"]}
    assert after.keys() == before.keys()
    for rid, replica in after.items():
        assert replica["resident"] == before[rid]["resident"]
        for counter in ("holder_builds", "misses", "evictions"):
            assert replica["counters"][counter] == before[rid]["counters"][counter], (rid, counter)
        assert replica["counters"]["requests"] == before[rid]["counters"]["requests"] + 2
        assert replica["counters"]["holder_reuses"] == before[rid]["counters"]["holder_reuses"] + 2


def settled_measurements(cluster: ClusterJob, quiet_s: float = 3.0) -> list:
    """The replicas' run and swap medians once they have stood still for a few stats periods (0.5 s each in the
    tiny config), so the router decides on these figures, not on ones from before the last request ended. With
    three runs and one load per replica, one late run moves a median enough to move the spill by four places
    (seen once in CI)."""
    measured, since = None, time.monotonic()
    deadline = since + 60
    while time.monotonic() < deadline:
        now = [r["measured"] for r in cluster.health()["replicas"]]
        if now != measured:
            measured, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return measured
        time.sleep(0.25)
    raise AssertionError(f"the replicas' measurements kept changing: {measured}")


def test_a_long_line_for_a_model_spills_over_to_another_replica(cluster):
    """The swap rule: once waiting in the holder's line takes longer than loading the model elsewhere, a request
    for A goes to B's replica. The replicas' measured times set where: ~0.1 s a run and ~0.7 s a load here."""
    holder = cluster.holder_of(KEY[A])["id"]
    measured = settled_measurements(cluster)
    run_s = statistics.median(m["run_s"] for m in measured)
    swap_s = statistics.median(m["swap_s"] for m in measured)
    spill_at = math.floor(swap_s / run_s) + 1  # holder's line x run_s > swap_s (the other replica's line is 0)
    placed = []
    for seed in range(spill_at + 4):  # long runs: none ends while these are sent
        answer = cluster.client.http.post("/generate", params={"detach": 1}, json=body_for(A, steps=200, seed=seed))
        assert answer.status_code == 202, answer.text
        placed.append((answer.json()["request_id"], answer.headers["x-aitk-replica"]))
    for request_id, _ in placed:
        cluster.client.cancel(request_id)
    replicas = [replica for _, replica in placed]
    # The router's view of the holder's line may lag a send or two behind (a stats call in flight while they go).
    sure = max(1, spill_at - 3)
    assert replicas[:sure] == [holder] * sure and len(set(replicas)) == 2, (replicas, spill_at, measured)
    for request_id, _ in placed:  # followed on the replica that ran it, to its end
        assert list(cluster.client.frames(request_id))[-1].type == "end"


def merged_calls(replica: dict) -> int:
    sizes = (replica.get("batching") or {}).get("calls_by_size") or {}
    return sum(count for size, count in sizes.items() if int(size) > 1)


def test_each_replica_batches_its_own_line(cluster):
    """The example turns batching on (engine.max_batch: 0): requests for two models at once, each model's
    line on the replica that holds it, and each replica merges its own requests' denoiser calls."""
    for arch in (A, B):
        generate(cluster, arch)  # each model resident somewhere, so routing keeps its line there
    before = {r["id"]: merged_calls(r) for r in cluster.client.health()["replicas"]}
    results: dict = {}

    def run(key, body):
        with EngineClient.from_engine_json(str(cluster.engine_json), timeout=60, generation_timeout_s=180) as client:
            frames = list(client.generate(body))
        results[key] = frames[-1].header.get("ok")

    bodies = {(arch, i): body_for(arch, steps=150 if i == 0 else 20, seed=i) for arch in (A, B) for i in range(3)}
    threads = [threading.Thread(target=run, args=item, daemon=True) for item in bodies.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    assert results == {key: True for key in bodies}
    after = cluster.client.health()["replicas"]
    assert all(merged_calls(r) > before.get(r["id"], 0) for r in after), [r.get("batching") for r in after]


def test_a_grid_through_the_cluster_runs_every_cell_on_one_replica(cluster):
    body = body_for(A, steps=2) | {
        "axes": [{"name": "seed", "values": [1, 2]}, {"name": "guidance_scale", "values": [3, 6]}]
    }
    frames = list(cluster.client.grid(body))
    assert frames[-1].type == "end" and frames[-1].header["ok"], [f.header for f in frames[-3:]]
    cells = {f.header["cell"] for f in frames if f.type == "result" and "cell" in f.header}
    assert cells == {0, 1, 2, 3}
    grid_id = frames[0].header["request_id"]
    replayed = list(cluster.client.grid_frames(grid_id))  # reattached through the ingress: the replica that ran it
    assert replayed[-1].type == "end" and replayed[-1].header["ok"]


def test_a_stream_through_the_cluster_is_the_engines_stream(cluster):
    body = body_for(A, steps=4, seed=11)
    generate(cluster, A)  # A resident on its replica: both streams below reuse the holder
    through_cluster = list(cluster.client.generate(body))
    holder = cluster.holder_of(KEY[A])
    with cluster.engine_client(holder) as engine:
        direct = list(engine.generate(body))
    # A latent frame a slow reader has not taken is replaced by the next (stream.py): compare the rest exactly,
    # and the latents of the steps both readers got.
    assert kept(through_cluster) == kept(direct)
    theirs, ours = latents(through_cluster), latents(direct)
    assert max(theirs) == max(ours) == 4  # the last step's latent is never replaced
    assert all(theirs[step] == ours[step] for step in theirs.keys() & ours.keys())
    assert through_cluster[-1].header["ok"] is True


VARYING = {"request_id", "t", "eta_s", "it_s", "timings", "path", "url", "bytes"}


def kept(frames) -> list[tuple]:
    return [comparable(f) for f in frames if f.type != "latent"]


def latents(frames) -> dict[int, tuple]:
    return {f.header["step"]: comparable(f) for f in frames if f.type == "latent"}


def comparable(frame) -> tuple:
    """A frame without what differs between two runs of one request: ids, clocks, rates, the file's name."""
    header = {k: v for k, v in frame.header.items() if k not in VARYING}
    return frame.type, json.dumps(header, sort_keys=True), frame.payload


# ---------------------------------------------------------------------------------------------- ending runs
def test_cancel_through_the_cluster_reaches_the_replica(cluster):
    frames, thread, request_id = start_long_generation(cluster)
    assert cluster.client.cancel(request_id)["status"] == "cancelling"
    thread.join(30)
    assert not thread.is_alive()
    errors = [f for f in frames if getattr(f, "type", None) == "error"]
    assert [e.header["code"] for e in errors] == ["cancelled"], frames[-3:]
    assert frames[-1].type == "end" and frames[-1].header["ok"] is False


def test_a_client_that_leaves_cancels_its_run_on_the_replica(cluster):
    stream = cluster.client.generate(body_for(A, **LONG))
    request_id = None
    for frame in stream:
        request_id = frame.request_id
        if frame.type == "progress":
            break
    replica = running_replica(cluster, request_id)
    stream.close()  # the connection to the ingress closes
    wait_for(lambda: request_id not in [r["request_id"] for r in queue_rows(cluster)], 15, "the run to end")
    replayed = list(cluster.client.frames(request_id))  # the replica keeps its recent runs' frames
    assert replayed[-2].type == "error" and replayed[-2].header["code"] == "cancelled", replayed[-2].header
    assert not cluster.replica(replica)["busy"]


# ---------------------------------------------------------------------------------------------- replicas dying
def test_a_replica_whose_engine_dies_mid_stream_ends_the_stream_and_is_replaced(cluster):
    frames, thread, request_id = start_long_generation(cluster)
    victim = cluster.replica(running_replica(cluster, request_id))
    os.kill(victim["engine_pid"], signal.SIGKILL)
    thread.join(30)
    assert not thread.is_alive()
    assert_ended_with_internal_error(frames)
    wait_for(lambda: replaced(cluster, victim["id"]), 120, "a new replica")
    generate(cluster, A)
    generate(cluster, B)


def test_a_killed_replica_takes_its_engine_with_it(cluster):
    """As ``ray.kill`` would: the worker dies without cleanup; the kernel's PR_SET_PDEATHSIG stops its engine."""
    frames, thread, request_id = start_long_generation(cluster, B)
    victim = cluster.replica(running_replica(cluster, request_id))
    os.kill(victim["worker_pid"], signal.SIGKILL)
    thread.join(30)
    assert not thread.is_alive()
    assert_ended_with_internal_error(frames)
    wait_for(lambda: not pid_alive(victim["engine_pid"]), 30, "the orphaned engine to exit")
    wait_for(lambda: replaced(cluster, victim["id"]), 120, "a new replica")
    generate(cluster, B)


def replaced(cluster: ClusterJob, dead_id: str) -> bool:
    """Every replica up again, and the dead one's id not among them."""
    up = cluster.replicas_up()
    return bool(up) and dead_id not in [r["id"] for r in up]


def assert_ended_with_internal_error(frames: list) -> None:
    assert not any(isinstance(f, Exception) for f in frames), frames[-1]
    assert frames[-2].type == "error" and frames[-2].header["code"] == "internal", frames[-2].header
    assert "failed mid-stream" in frames[-2].header["message"]
    assert frames[-1].type == "end" and frames[-1].header["ok"] is False
    seqs = [f.seq for f in frames]
    assert seqs == sorted(set(seqs))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone for our purpose
        return f.read().split(")")[-1].split()[0] != "Z"


# ---------------------------------------------------------------------------------------------- the rest of the API
def test_outputs_from_every_replica_are_listed_and_served(cluster):
    results = {arch: next(f for f in generate(cluster, arch) if f.type == "result") for arch in (A, B)}
    names = [entry["name"] for entry in cluster.client.outputs(limit=1000)]
    assert len(names) == len(set(names))
    for result in results.values():
        name = os.path.basename(result.header["path"])
        assert name in names
        response = cluster.client.http.get(f"/outputs/{name}")
        assert response.status_code == 200 and response.content == open(result.header["path"], "rb").read()
    assert cluster.client.http.get("/outputs/" + "0" * 32 + ".png").status_code == 404


def test_an_upload_to_the_cluster_reaches_the_replica_that_runs_the_request(cluster, tmp_path):
    from PIL import Image

    Image.new("RGB", (64, 64), (200, 30, 30)).save(tmp_path / "red.png")
    asset = cluster.client.upload_asset(str(tmp_path / "red.png"))
    frames = list(cluster.client.generate(body_for(A, ctrl_img=asset["id"])))
    used = frames[0].header["config"]["sample"]["ctrl_img"]
    assert used.startswith(str(cluster.folder / "replica-")) and used != asset["path"]
    assert open(used, "rb").read() == open(asset["path"], "rb").read()
    unknown = cluster.client.http.post("/generate", json=body_for(A, ctrl_img="f" * 32))
    assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"] == ["body", "sample", "ctrl_img"]
    # a start image and its mask travel the same way
    mask = cluster.client.upload_asset(str(tmp_path / "red.png"))
    frames = list(cluster.client.generate(body_for(A, init_image=asset["id"], mask=mask["id"])))
    sample = frames[0].header["config"]["sample"]
    assert sample["init_image"].startswith(str(cluster.folder / "replica-")) and sample["mask"] != mask["path"]


def test_wait_detach_and_unknown_ids_through_the_cluster(cluster):
    waited = cluster.client.generate_wait(body_for(B))
    assert waited["http_status"] == 200 and waited["result"]["kind"] == "image"
    submitted = cluster.client.submit(body_for(B, seed=5))
    frames = list(cluster.client.frames(submitted["request_id"]))
    assert frames[0].request_id == submitted["request_id"] and frames[-1].header["ok"] is True
    unknown = "0" * 32
    assert cluster.client.http.post(f"/cancel/{unknown}").status_code == 404  # every replica was asked
    assert cluster.client.http.get(f"/requests/{unknown}/frames").status_code == 404


def test_openai_urls_point_at_the_cluster(cluster):
    answer = cluster.client.http.post(
        "/v1/images/generations", json={"model": "tiny", "prompt": "a red circle", "response_format": "url"}
    )
    assert answer.status_code == 200, answer.text
    url = answer.json()["data"][0]["url"]
    assert url.startswith(cluster.info["url"] + "/outputs/")
    assert cluster.client.http.get(url).status_code == 200
    events = cluster.client.http.post(
        "/v1/images/generations", json={"model": "tiny", "prompt": "a cat", "stream": True, "partial_images": 1}
    )
    assert events.headers["content-type"].startswith("text/event-stream")
    assert "event: image_generation.partial_image" in events.text and "image_generation.completed" in events.text


ROUTES = [
    ("GET", "/metrics"),
    ("GET", "/models"),
    ("POST", "/generate"),
    ("GET", "/requests/0123/frames"),
    ("POST", "/cancel/0123"),
    ("GET", "/queue"),
    ("POST", "/unload"),
    ("POST", "/assets"),
    ("GET", "/outputs"),
    ("GET", "/outputs/x.png"),
    ("DELETE", "/outputs/x.png"),
    ("GET", "/loras"),
    ("GET", "/checkpoints"),
    ("GET", "/openapi.json"),
    ("GET", "/v1/models"),
    ("POST", "/v1/images/generations"),
    ("POST", "/v1/images/edits"),
]


def scrape(cluster: ClusterJob) -> dict:
    """The cluster's /metrics as {(sample name, sorted labels): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    answer = cluster.client.http.get("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }


def total(samples: dict, name: str, **labels) -> float:
    """A sample summed over the labels not given (every replica's, for an engine series)."""
    return sum(v for (n, ls), v in samples.items() if n == name and labels.items() <= dict(ls).items())


def test_metrics_of_the_ingress_and_of_every_replica_move_as_the_requests_did(cluster):
    before = scrape(cluster)
    generate(cluster, A, seed=71)  # streamed
    assert cluster.client.generate_wait(body_for(B, seed=72))["http_status"] == 200
    missing = str(cluster.tmp / "no_such_model")  # inside the replicas' model roots, never written: a load failure
    bad = cluster.client.generate_wait(body_for(A, seed=73) | {"model": {"arch": A, "name_or_path": missing}})
    failed = bad["error"]["code"]  # the engine's word for it; both sides must count it the same
    after = scrape(cluster)

    def moved(name, **labels):
        return total(after, name, **labels) - total(before, name, **labels)

    assert moved("aitk_cluster_requests_total", outcome="ok") == 2
    assert moved("aitk_cluster_requests_total", outcome=failed) == 1
    assert moved("aitk_cluster_time_to_first_byte_seconds_count") == 1  # the streamed one only
    assert total(after, "aitk_cluster_replicas_up") == 2 == total(after, "aitk_cluster_replicas_expected")
    # The engines' own series, one per replica, labelled with it: their outcomes add up to the ingress's.
    replicas = {dict(ls)["replica"] for (n, ls) in after if n == "aitk_engine_requests_total"}
    assert replicas == {r["id"] for r in cluster.health()["replicas"]}
    assert moved("aitk_engine_requests_total", outcome="ok") == 2
    assert moved("aitk_engine_requests_total", outcome=failed) == 1
    assert moved("aitk_engine_request_seconds_count", arch=A) == 2 and moved("aitk_engine_step_seconds_count") == 2


def test_every_route_but_health_needs_the_token(cluster):
    url = cluster.info["url"]
    for method, path in ROUTES:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            assert httpx.request(method, url + path, headers=headers).status_code == 401, (method, path, headers)
    assert httpx.get(url + "/health").json() == {"ok": True}  # the replicas' detail needs the token
    assert cluster.health()["cluster"]["replicas"] == 2
    assert httpx.get(url + "/health", headers={"Host": "evil.example"}).status_code == 421
    assert cluster.client.http.get("/models").status_code == 200  # the right token passes
    too_big = b'{"model": {}, "sample": {"prompt": "' + b"x" * MAX_JSON_BODY + b'"}}'
    answer = cluster.client.http.post("/generate", content=too_big, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413


# ---------------------------------------------------------------------------------------------- stopping (last)
def test_stopping_removes_engine_json_and_every_engine(cluster):
    engines = [r["engine_pid"] for r in cluster.health()["replicas"]]
    assert all(pid_alive(pid) for pid in engines)
    frames, thread, _ = start_long_generation(cluster)
    assert cluster.job_status() == "running"
    cluster.proc.send_signal(signal.SIGTERM)
    assert cluster.proc.wait(90) == 0
    thread.join(30)
    assert not cluster.engine_json.exists()
    assert not any(pid_alive(pid) for pid in engines)
    assert cluster.job_status() == "stopped"
    assert frames[-1].type == "end" and frames[-1].header["ok"] is False  # the engine's own "stopping" error
    assert any(f.type == "error" and f.header["code"] == "cancelled" for f in frames), frames[-2:]
