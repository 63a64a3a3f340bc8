"""FrameStream: the buffer between the generating thread and the HTTP response."""

import asyncio
import threading

import numpy as np

from extensions_built_in.inference_engine.protocol import read_frames
from extensions_built_in.inference_engine.stream import FrameStream


def decode(stream):
    return read_frames(b"".join(stream.collect()))


def test_unsent_latents_are_replaced_by_newer_ones_and_ordered_frames_are_kept():
    s = FrameStream("r1")
    for step in range(1, 11):
        s.emit("progress", step=step, total=10, eta_s=0.0, it_s=1.0)
        s.emit_latent(step, np.full((1, 4, 2, 2), step, dtype=np.float32), "BCHW")
    frames = decode(s)
    assert [f.header["step"] for f in frames if f.type == "progress"] == list(range(1, 11))
    latents = [f for f in frames if f.type == "latent"]
    assert len(latents) == 1 and latents[0].header["step"] == 10 and latents[0].array()[0, 0, 0, 0] == 10
    assert s.dropped_latents == 9
    seqs = [f.seq for f in frames]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_buffer_stays_bounded_by_latents_for_a_reader_that_never_reads():
    s = FrameStream("r2")
    big = np.zeros((1, 16, 64, 64), dtype=np.float32)
    for step in range(200):
        s.emit_latent(step, big, "BCHW")
    assert sum(len(b) for b in s.collect()) < 2 * big.size * 2  # one float16 frame, not 200


def test_nothing_after_end_and_finish_is_idempotent():
    s = FrameStream("r3")
    s.finish(False, "cancelled", "stop")
    s.finish(False, "internal", "again")
    assert s.emit("progress", step=1, total=1, eta_s=0.0, it_s=1.0) is False
    frames = decode(s)
    assert [f.type for f in frames] == ["error", "end"]
    assert frames[0].header["code"] == "cancelled" and s.drained


def test_reader_wakes_for_frames_written_from_another_thread():
    async def main():
        s = FrameStream("r4", asyncio.get_running_loop())
        threading.Timer(0.05, lambda: s.emit("status", stage="loading", message="x")).start()
        chunk = await s.next_chunk(timeout=5)
        assert read_frames(chunk)[0].header["stage"] == "loading"
        assert await s.next_chunk(timeout=0.05) == b""  # timeout with nothing new

    asyncio.run(main())


def test_a_held_step_wakes_the_reader_once_for_all_its_frames():
    class CountingLoop:
        calls = 0

        def call_soon_threadsafe(self, fn):
            CountingLoop.calls += 1

    loop = asyncio.new_event_loop()
    try:
        stream = FrameStream("r1", loop)
    finally:
        loop.close()
    stream._loop = CountingLoop()
    with stream.held():
        stream.emit("progress", step=1, total=2, eta_s=0.0, it_s=1.0)
        stream.emit_latent(1, np.zeros((1, 4, 2, 2), dtype=np.float16), "BCHW")
        assert CountingLoop.calls == 0
    assert CountingLoop.calls == 1 and len(stream.take()) == 2
    stream.emit("progress", step=2, total=2, eta_s=0.0, it_s=1.0)
    assert CountingLoop.calls == 2  # outside a held block every frame wakes the reader


# ------------------------------------------------------------------ what the mutation run found unguarded
def test_the_stream_knows_its_request_and_stamps_it_on_every_frame():
    s = FrameStream("req-7")
    s.emit("status", stage="queued", message="m")
    s.emit_latent(1, np.zeros((1, 4, 2, 2)), "BCHW")
    assert s.request_id == "req-7"
    assert {f.request_id for f in decode(s)} == {"req-7"}


def test_emit_says_whether_the_frame_was_taken_and_stamps_the_time():
    import time

    s = FrameStream("r")
    before = s.last_emit
    assert isinstance(before, float) and abs(before - time.monotonic()) < 5
    time.sleep(0.01)
    assert s.emit("status", stage="queued", message="m") is True
    after_emit = s.last_emit
    assert after_emit > before
    time.sleep(0.01)
    assert s.emit_latent(1, np.zeros((1, 4, 2, 2)), "BCHW", kind="x0") is True
    assert s.last_emit > after_emit
    [_, latent] = decode(s)
    assert latent.header["kind"] == "x0"  # extra fields travel with the latent
    s.finish(True)
    assert s.emit("status", stage="queued", message="late") is False
    assert s.emit_latent(2, np.zeros((1, 4, 2, 2)), "BCHW") is False


def test_finish_sends_the_code_and_message_it_is_given_or_internal():
    s = FrameStream("r")
    s.finish(False, "oom", "Out of memory: 80 GiB")
    error, end = decode(s)
    assert (error.header["code"], error.header["message"]) == ("oom", "Out of memory: 80 GiB")
    assert end.header["ok"] is False
    s = FrameStream("r")
    s.finish(False)
    error, end = decode(s)
    assert error.header["code"] == "internal" and error.header["message"] == ""
    s = FrameStream("r")
    s.finish(True)
    [end] = decode(s)
    assert end.type == "end" and end.header["ok"] is True


def test_next_chunk_returns_exactly_the_buffered_frames_or_nothing_after_the_timeout():
    async def main():
        s = FrameStream("r", asyncio.get_running_loop())
        assert await s.next_chunk(0.05) == b""
        s.emit("status", stage="queued", message="a")
        s.emit("status", stage="queued", message="b")
        expected = b"".join(data for _, data in s.main.frames)
        chunk = await s.next_chunk(1)
        assert chunk == expected
        assert [f.header["message"] for f in read_frames(chunk)] == ["a", "b"]

        def two_at_once():
            with s.held():  # one wake-up for both: they come back as one chunk
                s.emit("status", stage="queued", message="c")
                s.emit("status", stage="queued", message="d")

        threading.Timer(0.2, two_at_once).start()
        chunk, deadline = b"", asyncio.get_running_loop().time() + 5
        while not chunk:  # b"" is "nothing new" (a stale wake-up from a and b may come first)
            assert asyncio.get_running_loop().time() < deadline
            chunk = await s.next_chunk(5)
        assert [f.header["message"] for f in read_frames(chunk)] == ["c", "d"]

    asyncio.run(main())


def test_next_chunk_rechecks_after_clearing_its_wakeup():
    """A frame that lands between the first look and clearing the wake-up (its notify then cleared) is found
    by the second look instead of waiting for the timeout."""

    async def main():
        s = FrameStream("r", asyncio.get_running_loop())
        real_take, looks = s.take, []

        def take(reader=None):
            looks.append(1)
            if len(looks) == 1:  # the first look sees nothing; the frame arrives right after it
                s.main.frames.append(("status", s._encoder.frame("status", stage="queued", message="raced")))
                return []
            return real_take(reader)

        s.take = take
        chunk = await s.next_chunk(2)
        assert [f.header["message"] for f in read_frames(chunk)] == ["raced"]

    asyncio.run(main())


def test_an_attaching_reader_gets_where_the_run_stands_then_live_frames_and_leaves_the_others_alone():
    """``GET /requests/{id}/frames``: start, the newest status/progress/latent, every result; never a stale
    status or progress, never a second copy for the main reader."""
    import numpy as np

    def progress(step):
        s.emit("progress", step=step, total=9, eta_s=None, it_s=None)

    s = FrameStream("r")
    s.emit("start", config={}, output={}, latent={})
    for step in (1, 2, 3):
        s.emit("status", stage="sampling", message=f"s{step}")
        progress(step)
        s.emit_latent(step, np.zeros((1, 4, 2, 2)), "BCHW")
    s.emit("result", path="a.png", url="u", kind="image", ext="png", bytes=1, timings={})
    late = s.attach()
    replay = [f for chunk in s.take(late) for f in read_frames(chunk)]
    assert [f.type for f in replay] == ["start", "status", "progress", "latent", "result"]
    assert replay[1].header["message"] == "s3" and replay[2].header["step"] == 3 and replay[3].header["step"] == 3
    progress(4)
    assert [f.header["step"] for chunk in s.take(late) for f in read_frames(chunk)] == [4]
    main = [f for chunk in s.take() for f in read_frames(chunk)]
    assert [f.type for f in main].count("progress") == 4  # the main reader lost nothing to the attach
    s.release(late)
    progress(5)
    assert s.take(late) == [] and not s.detached
    s.release(s.main)
    assert s.detached and s.emit("end", ok=True)
    after = s.attach()  # a finished run: its replay ends with its end frame, and nobody is registered
    assert [f.type for chunk in s.take(after) for f in read_frames(chunk)][-1] == "end"
    assert s.drained_for(after) and s.drained


# ------------------------------------------------------------------ the second mutation run (multi-reader stream)
def test_a_second_finish_while_the_first_is_still_ending_sends_nothing():
    """A cancel racing a failure: the engine's ``finish(False, "oom")`` is inside ``on_finish`` (not yet closed)
    when the server's cancel calls ``finish`` too. The stream ends with the first caller's error alone."""
    s = FrameStream("r")
    calls, inside, second_done = [], threading.Event(), threading.Event()

    def on_finish(ok, code):
        calls.append((ok, code))
        if len(calls) == 1:
            inside.set()
            assert second_done.wait(5)

    s.on_finish = on_finish

    def cancel():
        assert inside.wait(5)
        s.finish(False, "cancelled", "stop")
        second_done.set()

    other = threading.Thread(target=cancel)
    other.start()
    s.finish(False, "oom", "Out of memory")
    other.join(5)
    frames = decode(s)
    assert [f.type for f in frames] == ["error", "end"]
    assert frames[0].header["code"] == "oom" and calls == [(False, "oom")]


def test_a_finish_called_from_on_finish_sends_nothing_either():
    s = FrameStream("r")
    calls = []

    def on_finish(ok, code):
        calls.append((ok, code))
        s.finish(False, "internal", "again")  # e.g. a metrics hook that fails and reports it

    s.on_finish = on_finish
    s.finish(True)
    assert [f.type for f in decode(s)] == ["end"] and calls == [(True, None)]


def test_on_finish_gets_ok_and_the_code_sent_before_the_end_frame():
    seen = []

    def finished(stream, ok, error_code=None):
        def on_finish(got_ok, got_code):  # two positional arguments: metrics.py's lambda ok, code
            frames = [f.type for f in read_frames(b"".join(data for _, data in stream.main.frames))]
            seen.append((got_ok, got_code, stream.closed, frames))

        stream.on_finish = on_finish
        stream.finish(ok, error_code, "msg")

    finished(FrameStream("a"), True)
    finished(FrameStream("b"), False, "oom")
    finished(FrameStream("c"), False)  # no code given: counted as internal, like the error frame says
    assert seen == [
        (True, None, False, []),
        (False, "oom", False, ["error"]),
        (False, "internal", False, ["error"]),
    ]


def test_drained_for_is_false_until_the_stream_has_ended_and_the_reader_has_read_it():
    s = FrameStream("r")
    late = s.attach()
    assert not s.drained_for(late) and not s.drained_for(None) and not s.drained  # open, nothing buffered
    s.emit("status", stage="queued", message="m")
    s.take(late)
    assert not s.drained_for(late)
    s.finish(True)
    assert not s.drained_for(late) and not s.drained  # the end frame is still unread
    s.take(late)
    assert s.drained_for(late) and not s.drained  # each reader drains on its own
    s.take()
    assert s.drained and s.drained_for(None)


def test_next_chunk_for_an_attached_reader_takes_its_frames_and_leaves_the_main_readers_alone():
    """The main reader has a backlog the late reader never had: the late reader's chunks hold only its own
    frames, it waits (and is woken from another thread) like the main one, and the main backlog stays."""

    async def main():
        s = FrameStream("r", asyncio.get_running_loop())
        s.emit("progress", step=1, total=3, eta_s=0.0, it_s=1.0)
        s.emit("progress", step=2, total=3, eta_s=0.0, it_s=1.0)
        late = s.attach()
        replay = read_frames(await s.next_chunk(1, reader=late))
        assert [f.header["step"] for f in replay] == [2]  # the newest progress only
        assert await s.next_chunk(0.05, reader=late) == b""  # nothing new for it, whatever the main one holds
        threading.Timer(0.05, lambda: s.emit("progress", step=3, total=3, eta_s=0.0, it_s=1.0)).start()
        chunk = await s.next_chunk(5, reader=late)
        assert [f.header["step"] for f in read_frames(chunk)] == [3]
        assert [f.header["step"] for f in read_frames(b"".join(s.take()))] == [1, 2, 3]

    asyncio.run(main())
