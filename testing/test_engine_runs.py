"""Runs the engine owns, not the tab: ``?detach=1`` and ``GET /requests/{id}/frames`` (a page that reloads
mid-run re-attaches and sees the run continue and finish), and batches (several results per request, each its
own ``result`` frame, file and sidecar). Real server, real HTTP, tiny SD1 on CPU."""

import json
import os

import httpx

from testing.stream_contract import body_for
from testing.test_engine_http import auth, engine_idle, open_stream, wait_until


def detach(engine_server, body) -> dict:
    r = httpx.post(f"{engine_server.url}/generate?detach=1", json=body, headers=auth(engine_server), timeout=60)
    assert r.status_code == 202, r.text
    return r.json()


def attach(engine_server, request_id):
    return open_stream(engine_server, None, method="GET", path=f"/requests/{request_id}/frames")


def test_a_detached_run_survives_its_readers_and_a_new_reader_picks_it_up_mid_run(engine_server):
    accepted = detach(engine_server, body_for("sd1", steps=60, seed=5))
    request_id = accepted["request_id"]
    assert accepted["frames"] == f"/requests/{request_id}/frames"
    # A first page attaches, sees the run move, and leaves (a reload): the run goes on.
    client, response, frames = attach(engine_server, request_id)
    first = []
    for frame in frames:
        first.append(frame)
        if frame.type == "progress" and frame.header["step"] >= 3:
            break
    response.close()
    client.close()
    assert first[0].type == "start" and first[0].header["config"]["sample"]["seed"] == 5
    assert engine_server.client.queue()["running"]["request_id"] == request_id
    # The page after the reload: where the run stands first (start, then the newest status and progress),
    # then live frames to the result and the end.
    client, response, frames = attach(engine_server, request_id)
    second = list(frames)
    client.close()
    types = [f.type for f in second]
    assert types[0] == "start" and types[-2:] == ["result", "end"] and second[-1].header["ok"] is True
    steps = [f.header["step"] for f in second if f.type == "progress"]
    assert steps[0] >= 3 and steps[-1] == 60, "the second reader starts where the run stood, not at step 0"
    seqs = [f.header["seq"] for f in second]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert os.path.isfile(second[-2].header["path"])


def test_a_finished_run_replays_its_result_and_a_detached_one_runs_with_nobody_reading(engine_server):
    """Through the Python client (``submit``, ``frames``), as a script would."""
    request_id = engine_server.client.submit(body_for("sd1", steps=2, seed=8))["request_id"]
    assert wait_until(lambda: engine_idle(engine_server), timeout=60)  # nobody ever read it
    replay = list(engine_server.client.frames(request_id))
    assert [f.type for f in replay][0] == "start" and [f.type for f in replay][-2:] == ["result", "end"]
    assert replay[-2].header["seed"] == 8 and os.path.isfile(replay[-2].header["path"])


def test_unknown_ids_and_contradictory_options_are_4xx(engine_server):
    r = httpx.get(f"{engine_server.url}/requests/nope/frames", headers=auth(engine_server))
    assert r.status_code == 404 and "nope" in r.json()["detail"]
    r = httpx.post(
        f"{engine_server.url}/generate?detach=1&wait=1", json=body_for("sd1"), headers=auth(engine_server), timeout=60
    )
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "detach"]


def test_queued_detached_runs_are_listed_with_positions_and_cancel_by_id(engine_server):
    blocker = detach(engine_server, body_for("sd1", steps=400, seed=1))["request_id"]
    queued = [detach(engine_server, body_for("sd1", steps=2, seed=s))["request_id"] for s in (2, 3, 4)]
    assert wait_until(lambda: (engine_server.client.queue()["running"] or {}).get("request_id") == blocker)
    pending = engine_server.client.queue()["pending"]
    assert [p["request_id"] for p in pending] == queued and [p["position"] for p in pending] == [1, 2, 3]
    assert all(p["detached"] and p["batch_count"] == 1 for p in pending) and pending[1]["seed"] == 3
    assert engine_server.client.cancel(queued[1])["status"] == "cancelled"
    assert [p["request_id"] for p in engine_server.client.queue()["pending"]] == [queued[0], queued[2]]
    engine_server.client.cancel(blocker)
    # Each stream ends only after its file is saved (on the saver thread, after the queue already looks idle).
    for request_id in (queued[0], queued[2]):
        frames = list(engine_server.client.frames(request_id))
        assert frames[-1].type == "end" and frames[-1].header["ok"] is True
        path = results_of(frames)[0].header["path"]
        assert os.path.isfile(path) and os.path.basename(path).startswith(request_id)
    names = os.listdir(engine_server.engine.output_folder)
    assert not any(n.startswith(queued[1]) or n.startswith(blocker) for n in names)


def results_of(frames) -> list:
    return [f for f in frames if f.type == "result"]


def test_a_batch_makes_each_result_with_the_next_seed_its_own_file_and_sidecar(engine_server, capfd):
    frames = list(engine_server.client.generate(body_for("sd1", steps=2, seed=40, batch_count=4)))
    start, results = frames[0], results_of(frames)
    assert start.header["config"]["batch"] == {"count": 4, "seeds": "consecutive"}
    assert [r.header["seed"] for r in results] == [40, 41, 42, 43]
    assert [(r.header["image"], r.header["images"]) for r in results] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert frames[-1].type == "end" and frames[-1].header["ok"] is True
    paths = [r.header["path"] for r in results]
    assert len(set(paths)) == 4 and all(os.path.isfile(p) for p in paths)
    for path, seed in zip(paths, [40, 41, 42, 43]):
        with open(os.path.splitext(path)[0] + ".json") as f:
            sidecar = json.load(f)
        assert sidecar["seed"] == seed and sidecar["config"]["sample"]["seed"] == seed
    from PIL import Image

    pixels = {Image.open(p).tobytes() for p in paths}
    assert len(pixels) == 4, "each seed draws its own image"
    status = [f.header["message"] for f in frames if f.type == "status"]
    assert "Image 2 of 4" in status and "Image 4 of 4" in status
    # The engine's log (the job page shows it) records the request once, when it is over.
    [line] = [x for x in capfd.readouterr().out.splitlines() if start.request_id[:8] in x]
    assert "sd1 tiny:sd1" in line and "2 steps" in line and "4 images: done in" in line


def test_a_random_seed_batch_and_a_cancelled_batch_keeps_what_it_finished(engine_server):
    frames = list(engine_server.client.generate(body_for("sd1", steps=2, seed=3, batch_count=3, batch_seeds="random")))
    seeds = [r.header["seed"] for r in results_of(frames)]
    assert seeds[0] == 3 and len(set(seeds)) == 3 and seeds[1:] != [4, 5]
    # Cancel during the second image: the first result arrives (before the error), the rest are never made.
    client, response, stream = open_stream(engine_server, body_for("sd1", steps=200, seed=60, batch_count=3))
    seen = []
    for frame in stream:
        seen.append(frame)
        if frame.type == "status" and frame.header.get("image") == 2:
            engine_server.client.cancel(frame.request_id)
    client.close()
    types = [f.type for f in seen]
    assert types.count("result") == 1 and types[-2:] == ["error", "end"] and seen[-2].header["code"] == "cancelled"
    assert types.index("result") < types.index("error")
    kept = results_of(seen)[0].header
    assert kept["seed"] == 60 and os.path.isfile(kept["path"])
    assert not any(n.startswith(seen[0].request_id + "_") for n in os.listdir(engine_server.engine.output_folder))


def test_a_batch_count_out_of_range_names_its_field(engine_server):
    r = httpx.post(
        f"{engine_server.url}/generate", json=body_for("sd1", batch_count=17), headers=auth(engine_server), timeout=60
    )
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "sample", "batch_count"]


def test_a_bug_gives_the_client_one_line_and_the_engine_log_its_traceback(harness, monkeypatch, capfd):
    """An exception the engine has no code for is ``internal``: the client's error frame names it in one line;
    the engine's log gets the whole traceback, the one thing a bug report needs (the first FLUX.2-dev run at
    24 GiB on the H200 failed with a device mismatch whose log said nothing more). The next request works."""
    from toolkit.models.base_model import BaseModel

    original = BaseModel.sample_media

    def broken_sampler(self, pipeline, gen, generator):
        raise RuntimeError("Expected all tensors to be on the same device (injected)")

    monkeypatch.setattr(BaseModel, "sample_media", broken_sampler)
    out = harness.client.generate_wait(body_for("sd1"))
    assert out["error"]["code"] == "internal"
    assert out["error"]["message"] == "RuntimeError: Expected all tensors to be on the same device (injected)"
    log = capfd.readouterr()
    assert "Traceback (most recent call last)" in log.err and "in broken_sampler" in log.err
    monkeypatch.setattr(BaseModel, "sample_media", original)
    assert harness.client.generate_wait(body_for("sd1"))["http_status"] == 200
