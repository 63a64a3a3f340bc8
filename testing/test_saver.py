"""Results are saved on their own thread: in order, bounded, and never holding up the next request."""

import threading
import time

from extensions_built_in.inference_engine import outputs as outputs_module
from extensions_built_in.inference_engine.saver import ResultSaver
from testing.stream_contract import body_for


def test_jobs_run_in_order_and_drain_waits_for_them():
    saver, done = ResultSaver(), []
    for i in range(5):
        saver.submit(lambda i=i: (time.sleep(0.01), done.append(i)))
    assert saver.drain(10) and done == [0, 1, 2, 3, 4]


def test_a_failing_job_does_not_stop_the_worker():
    saver, done = ResultSaver(), []
    saver.submit(lambda: 1 / 0)
    saver.submit(lambda: done.append("next"))
    assert saver.drain(10) and done == ["next"]


def test_submit_blocks_while_the_queue_is_full():
    saver, release = ResultSaver(max_waiting=1), threading.Event()
    saver.submit(release.wait)  # running
    saver.submit(lambda: None)  # waiting: the queue is full now
    third = threading.Thread(target=saver.submit, args=(lambda: None,), daemon=True)
    third.start()
    third.join(0.3)
    assert third.is_alive()  # the main thread would wait here instead of piling media up
    release.set()
    third.join(10)
    assert not third.is_alive() and saver.drain(10)
    assert saver.drain(0)  # nothing left: returns at once


def test_a_slow_save_does_not_hold_up_the_next_request(engine_server, monkeypatch):
    real, slow_once = outputs_module.save_generated, {"left": 1}

    def slow_save(media, gen, *args, **kwargs):
        if slow_once["left"]:
            slow_once["left"] -= 1
            time.sleep(2.0)
        return real(media, gen, *args, **kwargs)

    engine_server.client.generate_wait(body_for("sd1", steps=2))  # resident
    monkeypatch.setattr(outputs_module, "save_generated", slow_save)
    events = []

    def run(name, seed):
        for frame in engine_server.client.generate(body_for("sd1", steps=3, seed=seed)):
            if frame.type in ("progress", "result", "error"):
                events.append((time.monotonic(), name, frame.type))

    first = threading.Thread(target=run, args=("a", 1))
    first.start()
    deadline = time.monotonic() + 60
    while not any(e[1:] == ("a", "progress") for e in events):
        assert time.monotonic() < deadline, "request a never reached sampling"
        time.sleep(0.01)
    second = threading.Thread(target=run, args=("b", 2))
    second.start()
    first.join(60)
    second.join(60)
    a_result = next(t for t, name, kind in events if (name, kind) == ("a", "result"))
    b_progress = next(t for t, name, kind in events if (name, kind) == ("b", "progress"))
    assert b_progress < a_result  # b sampled while a's file was being written
    assert [kind for _, name, kind in events if name == "b"][-1] == "result"


def test_a_failed_save_is_an_error_frame_and_the_next_request_works(engine_server, monkeypatch):
    def full_disk(media, gen, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs_module, "save_generated", full_disk)
    frames = list(engine_server.client.generate(body_for("sd1", steps=2)))
    errors = [f.header for f in frames if f.type == "error"]
    assert errors and errors[0]["code"] == "internal" and "No space left on device" in errors[0]["message"]
    assert frames[-1].type == "end" and frames[-1].header["ok"] is False
    monkeypatch.undo()
    assert engine_server.client.generate_wait(body_for("sd1", steps=2))["http_status"] == 200


def test_stopping_the_engine_while_a_result_is_saved_still_delivers_it(tmp_path, tiny_cache, monkeypatch):
    """The job's stop path (shutdown, then drain the saver): a result already sampled is not lost."""
    from testing.engine_harness import EngineHarness

    real = outputs_module.save_generated
    saving = threading.Event()

    def slow_save(media, gen, *args, **kwargs):
        saving.set()
        time.sleep(1.0)
        return real(media, gen, *args, **kwargs)

    monkeypatch.setattr(outputs_module, "save_generated", slow_save)
    harness = EngineHarness(tmp_path)
    frames = []
    try:
        reader = threading.Thread(target=lambda: frames.extend(harness.client.generate(body_for("sd1", steps=2))))
        reader.start()
        assert saving.wait(60)
        harness.engine.shutdown("Engine stopping")
        assert harness.engine.saver.drain(30)
        reader.join(30)
    finally:
        harness.close()
    kinds = [f.type for f in frames]
    assert "result" in kinds and kinds[-1] == "end" and frames[-1].header["ok"] is True


def test_a_disk_that_fills_mid_write_leaves_no_partial_file_and_loses_nothing_written(engine_server, monkeypatch):
    """The disk fills while a result is encoded (half its bytes written, then ENOSPC), and then again while its
    sidecar is written: each is an ``error`` frame, no partial file is listed, served or left in the folder, and
    the files written before are untouched."""
    import errno
    import hashlib
    import os

    from toolkit import media as media_module

    folder = engine_server.engine.output_folder
    before = engine_server.client.generate_wait(body_for("sd1", steps=2))["result"]["path"]

    def digests():
        return {
            os.path.join(root, n): hashlib.sha256(open(os.path.join(root, n), "rb").read()).hexdigest()
            for root, _, names in os.walk(folder)
            for n in names
        }

    kept = digests()
    real_save = media_module._save_by_kind

    def fills_mid_write(kind, media, path, *args, **kwargs):
        real_save(kind, media, path, *args, **kwargs)
        with open(path, "r+b") as f:  # what a write cut short by a full disk leaves
            f.truncate(os.path.getsize(path) // 2)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(media_module, "_save_by_kind", fills_mid_write)
    frames = list(engine_server.client.generate(body_for("sd1", steps=2, seed=5)))
    errors = [f.header for f in frames if f.type == "error"]
    assert errors and errors[0]["code"] == "internal" and "No space left" in errors[0]["message"]
    assert frames[-1].type == "end" and not any(f.type == "result" for f in frames)
    monkeypatch.undo()

    real_dump = outputs_module.json.dump

    def sidecar_fills(data, f, **kwargs):
        f.write("{")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs_module.json, "dump", sidecar_fills)
    frames = list(engine_server.client.generate(body_for("sd1", steps=2, seed=6)))
    assert [f.header["code"] for f in frames if f.type == "error"] == ["internal"]
    monkeypatch.setattr(outputs_module.json, "dump", real_dump)

    assert digests() == kept, "a failed save added, changed or removed a file"
    listed = [row["name"] for row in engine_server.client.outputs()]
    assert os.path.basename(before) in listed
    after = engine_server.client.generate_wait(body_for("sd1", steps=2, seed=7))
    assert after["http_status"] == 200 and os.path.isfile(after["result"]["path"])


def test_an_engine_starting_removes_what_a_killed_one_left_half_written_and_keeps_every_result(tmp_path):
    """``kill -9`` mid-save leaves ``.tmp/<name>`` and ``<name>.json.tmp``: the next engine on the folder removes
    them, and nothing else (results, their sidecars and thumbnails, a link that only looks like a temp file)."""
    folder = tmp_path / "outputs"
    (folder / ".tmp").mkdir(parents=True)
    (folder / ".thumbs").mkdir()
    half = [folder / ".tmp" / "a.png", folder / ".tmp" / "a.png.thumb.jpg", folder / "b.json.tmp"]
    kept = [folder / "c.png", folder / "c.json", folder / ".thumbs" / "c.png.jpg"]
    for path in half + kept:
        path.write_bytes(b"x")
    outside = tmp_path / "outside.json.tmp"
    outside.write_bytes(b"mine")
    (folder / "d.json.tmp").symlink_to(outside)
    outputs_module.Outputs(str(folder), "/outputs")
    assert [p for p in half if p.exists()] == [] and all(p.exists() for p in kept)
    assert outside.read_bytes() == b"mine"
