"""queue_eta on its own: which estimate a waiting run gets, and how the ETAs of a line add up."""

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from extensions_built_in.inference_engine.queue_eta import Progress, RunTimes, queue_etas, run_key


def sample(width=64, height=64, steps=10, **more):
    return SimpleNamespace(width=width, height=height, num_inference_steps=steps, **more)


@dataclass(eq=False)
class Req:
    id: str
    key: object
    images: int = 1


def key_of(req):
    return req.key, req.images


def test_the_key_is_model_size_frames_seconds_and_steps():
    key = run_key("wan21", "tiny:wan21", sample(num_frames=9, duration_s=None))
    assert (key.arch, key.model, key.width, key.height, key.frames, key.duration_s, key.steps) == (
        "wan21",
        "tiny:wan21",
        64,
        64,
        9,
        0.0,
        10,
    )
    assert run_key("sd1", "m", sample()).frames == 1  # an image: one frame
    assert run_key("sd1", "m", sample()) == run_key("sd1", "m", sample())
    assert run_key("sd1", "m", sample()) != run_key("sd1", "m", sample(steps=11))


def test_measured_beats_scaled_beats_rate_beats_nothing():
    times = RunTimes()
    key = run_key("sd1", "m", sample(steps=10))
    assert times.image_estimate(key) == (None, None)
    # nothing measured, but the running request has the same model and size: its step rate
    times.progress = Progress("r", 0, 1, step=2, total=20, it_s=4.0)
    assert times.image_estimate(key, progress_key=run_key("sd1", "m", sample(steps=20))) == (2.5, "rate")
    assert times.image_estimate(key, progress_key=run_key("sd1", "m", sample(width=128))) == (None, None)
    # a measured run with 20 steps of 0.1 s and 1 s besides: 10 steps are 1 + 10 * 0.1
    times.record(run_key("sd1", "m", sample(steps=20)), 3.0, 0.1, None)
    estimate, basis = times.image_estimate(key)
    assert basis == "scaled" and estimate == pytest.approx(2.0)
    times.record(key, 1.5, 0.1, None)
    times.record(key, 9.0, 0.1, None)  # one slow run among three: the median stands
    times.record(key, 1.7, 0.1, None)
    assert times.image_estimate(key) == (1.7, "measured")


def test_only_the_latest_runs_count():
    times = RunTimes(keep=3)
    key = run_key("sd1", "m", sample())
    for seconds in (100, 100, 100, 1, 1, 1):
        times.record(key, seconds, None, None)
    assert times.image_estimate(key) == (1, "measured")


def test_etas_add_up_along_the_line_with_batches_and_model_switches():
    times = RunTimes()
    a, b = run_key("sd1", "a", sample()), run_key("sd1", "b", sample())
    times.record(a, 2.0, None, None)
    times.record(b, 3.0, None, 5.0)  # b's load when the run before it used another model
    running = Req("run", a)
    times.progress = Progress("run", 0, 1, step=5, total=10, it_s=5.0)  # 1 s of sampling left
    pending = [Req("p1", a, images=2), Req("p2", b), Req("p3", b), Req("p4", run_key("sd1", "c", sample()))]
    head, rows = queue_etas(times, running, pending, key_of)
    assert head["progress"] == {"step": 5, "total": 10, "it_s": 5.0, "image": 1, "images": 1}
    assert head["eta_s"] == pytest.approx(1.0)  # 5 steps at 5 it/s; its 2 s estimate is all sampling (10 / 5)
    assert [r["run_s"] for r in rows] == [4.0, 8.0, 3.0, None]  # 2 images; b loads once; c never ran
    assert [r["eta_s"] for r in rows] == [5.0, 13.0, 16.0, None]
    assert [r["eta_basis"] for r in rows] == ["measured", "measured", "measured", None]
    behind_unknown = queue_etas(times, running, [pending[3], pending[0]], key_of)[1]
    assert behind_unknown[1]["run_s"] == 4.0 and behind_unknown[1]["eta_s"] is None


def test_a_running_batch_counts_its_images_still_to_come():
    times = RunTimes()
    key = run_key("sd1", "a", sample())
    times.record(key, 3.0, None, None)
    times.progress = Progress("run", 1, 4, step=0, total=10, it_s=0.0)  # image 2 of 4, before its first step
    times.picked = ("run", 0.0)  # picked long ago: the estimate is spent, never negative
    head, _ = queue_etas(times, Req("run", key, images=4), [], key_of)
    assert head["eta_s"] == 0.0
    times.progress = Progress("run", 1, 4, step=5, total=10, it_s=10.0)  # 2 s: 1 s sampling + 2 s fixed
    head, _ = queue_etas(times, Req("run", key, images=4), [], key_of)
    assert head["eta_s"] == pytest.approx(0.5 + 2.0 + 2 * 3.0)


def test_nothing_running_the_resident_model_decides_the_first_load():
    times = RunTimes()
    b = run_key("sd1", "b", sample())
    times.record(b, 1.0, None, 4.0)
    assert queue_etas(times, None, [Req("p", b)], key_of, resident=("sd1", "b"))[1][0]["run_s"] == 1.0
    assert queue_etas(times, None, [Req("p", b)], key_of, resident=("sd1", "a"))[1][0]["run_s"] == 5.0
    assert queue_etas(times, None, [], key_of) == ({}, [])
