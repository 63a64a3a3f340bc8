"""The queue's controls over real HTTP on a real engine (tiny:sd1 on the CPU): ``POST /queue/{id}/move``,
``POST /queue/cancel``, and ``GET /queue``'s ETAs and running progress."""

import httpx
import pytest

from testing.engine_harness import wait_for
from testing.stream_contract import body_for


def detached(h, body) -> str:
    r = httpx.post(f"{h.url}/generate?detach=1", json=body, headers=headers(h), timeout=60)
    assert r.status_code == 202, r.text
    return r.json()["request_id"]


def headers(h):
    return {"Authorization": f"Bearer {h.TOKEN}"}


def post(h, path, **kw):
    return httpx.post(f"{h.url}{path}", headers=headers(h), timeout=60, **kw)


def blocker(h) -> str:
    """A long run that is sampling: everything queued after it waits."""
    request_id = detached(h, body_for("sd1", steps=500, seed=1, width=256, height=256))
    wait_for(lambda: (h.client.queue()["running"] or {}).get("progress"), 60, "the blocker's first step")
    return request_id


def pending_ids(h):
    return [row["request_id"] for row in h.client.queue()["pending"]]


def queued_positions(h, request_id):
    """The places a waiting request's frames announced, from its replayed stream (newest status first shown)."""
    return [
        f.header["position"]
        for f in h.client.frames(request_id)
        if f.type == "status" and f.header.get("stage") == "queued" and "position" in f.header
    ]


def test_moving_a_waiting_request_reorders_the_line_and_tells_it(harness):
    h = harness
    running = blocker(h)
    ids = [detached(h, body_for("sd1", steps=2, seed=i)) for i in range(3)]
    assert pending_ids(h) == ids
    r = post(h, f"/queue/{ids[2]}/move", json={"position": 1})
    assert r.status_code == 200 and r.json() == {"request_id": ids[2], "position": 1}
    assert pending_ids(h) == [ids[2], ids[0], ids[1]]
    assert [row["position"] for row in h.client.queue()["pending"]] == [1, 2, 3]
    assert post(h, f"/queue/{ids[2]}/move", json={"position": 50}).json()["position"] == 3  # past the end: last
    assert pending_ids(h) == [ids[0], ids[1], ids[2]]
    post(h, f"/queue/{ids[1]}/move", json={"position": 1})
    h.client.cancel(running)
    # served in the new order; each one's stream was told its new place
    order = wait_for(lambda: _finish_order(h, ids), 120, "the three runs to finish")
    assert order == [ids[1], ids[0], ids[2]]


def _finish_order(h, ids):
    if h.client.queue()["running"] or h.client.queue()["pending"]:
        return None
    results = {}
    for request_id in ids:
        result = next(f for f in h.client.frames(request_id) if f.type in ("result", "error"))
        assert result.type == "result", result.header
        results[request_id] = result.header["t"]
    return sorted(ids, key=results.get)


@pytest.mark.parametrize(
    "body,loc",
    [
        ({"position": 0}, ["body", "position"]),
        ({"position": -3}, ["body", "position"]),
        ({"position": "first"}, ["body", "position"]),
        ({"position": 1.5}, ["body", "position"]),
        ({}, ["body", "position"]),
        ({"position": 1, "before": "x"}, ["body", "before"]),
        (None, ["body"]),
    ],
)
def test_a_bad_move_is_422_naming_the_field(harness, body, loc):
    r = post(harness, "/queue/abc/move", json=body)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == loc, r.text


def test_moving_what_does_not_wait_is_404_or_409_and_the_token_is_checked(harness):
    h = harness
    running = blocker(h)
    waiting = detached(h, body_for("sd1", steps=2))
    r = post(h, f"/queue/{running}/move", json={"position": 1})
    assert r.status_code == 409 and "running" in r.json()["detail"]
    r = post(h, "/queue/nope/move", json={"position": 1})
    assert r.status_code == 404 and "nope" in r.json()["detail"]
    r = httpx.post(f"{h.url}/queue/{waiting}/move", json={"position": 1}, timeout=30)
    assert r.status_code == 401
    assert httpx.post(f"{h.url}/queue/cancel", timeout=30).status_code == 401
    assert pending_ids(h) == [waiting] and h.client.queue()["running"]["request_id"] == running
    h.client.cancel(waiting)
    h.client.cancel(running)


def test_cancel_all_empties_the_line_and_stops_the_running_one_unless_asked_not_to(harness):
    h = harness
    running = blocker(h)
    ids = [detached(h, body_for("sd1", steps=2, seed=i)) for i in range(3)]
    r = post(h, "/queue/cancel", json={"running": False})
    assert r.status_code == 200 and r.json() == {"cancelled": ids, "cancelling": None, "cancelling_all": []}
    assert pending_ids(h) == [] and h.client.queue()["running"]["request_id"] == running
    for request_id in ids:
        frames = list(h.client.frames(request_id))
        assert [f.header["code"] for f in frames if f.type == "error"] == ["cancelled"]
    later = detached(h, body_for("sd1", steps=2))
    r = post(h, "/queue/cancel")  # no body: the running one too
    assert r.status_code == 200
    assert r.json() == {"cancelled": [later], "cancelling": running, "cancelling_all": [running]}
    wait_for(lambda: h.client.queue()["running"] is None, 60, "the running request to stop")
    assert [f.header["code"] for f in h.client.frames(running) if f.type == "error"] == ["cancelled"]
    r = post(h, "/queue/cancel", json={"running": "sometimes"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "running"]
    r = post(h, "/queue/cancel", json={"all": True})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "all"]
    assert post(h, "/queue/cancel", json={}).json() == {"cancelled": [], "cancelling": None, "cancelling_all": []}


def test_queue_rows_carry_etas_from_measured_runs_and_the_running_progress(harness):
    h = harness
    assert h.client.queue() == {"running": None, "sharing": [], "pending": []}
    measured = body_for("sd1", steps=4, seed=3)
    assert h.client.generate_wait(measured)["result"]["seed"] == 3  # one run of this model, size and steps
    running = blocker(h)
    waiting = [detached(h, measured), detached(h, body_for("sd1", steps=8)), detached(h, body_for("sd1", width=128))]
    q = h.client.queue()
    head = q["running"]
    assert head["request_id"] == running and head["seed"] == 1
    assert head["progress"]["total"] == 500 and 1 <= head["progress"]["step"] <= 500 and head["progress"]["it_s"] > 0
    assert head["progress"]["image"] == 1 and head["progress"]["images"] == 1
    assert head["eta_s"] > 0  # its steps left at its own rate
    rows = q["pending"]
    assert [r["request_id"] for r in rows] == waiting
    assert [r["eta_basis"] for r in rows] == ["measured", "scaled", None]
    assert rows[0]["run_s"] > 0 and rows[0]["eta_s"] >= head["eta_s"] + rows[0]["run_s"] - 0.05
    assert rows[1]["run_s"] > 0 and rows[1]["eta_s"] == pytest.approx(rows[0]["eta_s"] + rows[1]["run_s"], abs=0.05)
    assert rows[2]["run_s"] is None and rows[2]["eta_s"] is None  # a size nothing has run at
    post(h, "/queue/cancel")
    wait_for(lambda: h.client.queue()["running"] is None, 60, "the line to empty")
