"""The engine as users run it, for benchmarks: ``python run.py`` in its own process (so client and engine share
no GIL), a client once engine.json exists, and a batch of requests sent at once."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[2]
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
PR_SET_PDEATHSIG = 1

# A Python thread, not faulthandler's watchdog: that one reads other threads' frames without the GIL, and an
# engine sampled every 2 s died silently during its imports once on the build box.
STACK_SAMPLER = """import runpy, sys, threading, time, traceback
def sample(path, every):
    with open(path, "w") as out:
        while True:
            time.sleep(every)
            out.write(f"--- {time.strftime('%H:%M:%S')}\\n")
            for ident, frame in sys._current_frames().items():
                if ident != threading.get_ident():
                    out.write(f"thread {ident}\\n" + "".join(traceback.format_stack(frame)[-25:]))
            out.flush()
threading.Thread(target=sample, args=(sys.argv[1], float(sys.argv[2])), daemon=True).start()
sys.argv = sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@contextlib.contextmanager
def engine_process(
    folder: Path,
    device: str,
    log: Optional[Path] = None,
    start_timeout: float = 120,
    stacks: Optional[Path] = None,
    stacks_every_s: float = 30,
    **engine_options,
):
    """``stacks``: a file the engine writes every thread's Python stack to every ``stacks_every_s`` seconds
    (a sampling thread), for a wait no timer explains: a float8 Flux's first compiled request spent 344 s before
    its first step with dynamo's timers counting 18 s (docs/BENCHMARKS.md, "Compiled, fifth run")."""
    from extensions_built_in.inference_engine.client import EngineClient

    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "engine_config.json"
    config.write_text(
        json.dumps(
            {
                "job": "extension",
                "config": {
                    "name": "bench",
                    "process": [
                        {
                            "type": "InferenceEngine",
                            "device": device,
                            "engine": {"job_folder": str(folder), **engine_options},
                        }
                    ],
                },
            }
        )
    )
    # A killed engine (a bench run cut at its time limit) leaves engine.json behind: waiting for the file would
    # hand the client the dead engine's port (seen on the H200: every request "Connection refused").
    (folder / "engine.json").unlink(missing_ok=True)
    out = open(log, "w") if log else subprocess.DEVNULL
    command = [sys.executable, "run.py", str(config)]
    if stacks:
        command[1:2] = ["-c", STACK_SAMPLER, str(stacks), str(stacks_every_s), "run.py"]
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=out,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=die_with_parent,
    )
    try:
        deadline = time.monotonic() + start_timeout
        while not (folder / "engine.json").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text()[-2000:] if log else ""
                raise RuntimeError("the engine did not start " + tail)
            time.sleep(0.1)
        with EngineClient.from_engine_json(str(folder / "engine.json"), timeout=600) as client:
            try:
                yield client
            except Exception as e:
                died = _died(proc)
                if died:  # "peer closed connection" alone hides that the engine is gone, and how
                    raise RuntimeError(f"{died}; the client saw {type(e).__name__}: {e}") from e
                raise
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log:
            out.close()


def die_with_parent() -> None:
    """``preexec_fn``: the engine gets SIGTERM when the bench that started it dies. A bench killed outright (kill,
    a time limit) runs no ``finally``, and its engine went on holding the GPU beside the next stage's engine and
    neighbour (testing/bench/neighbour.py). Linux only; libc is loaded before the fork, so the child runs no
    import."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _died(proc: subprocess.Popen, wait_s: float = 5) -> Optional[str]:
    """How the engine process ended, if it did: the first sweep of FLUX.2-dev at 24 GiB was killed by the host's
    out-of-memory killer, which the client only saw as a closed connection."""
    try:
        code = proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        return None
    if code == -9:
        return "the engine process was killed (SIGKILL: the host's out-of-memory killer, or a time limit)"
    return f"the engine process exited with code {code}"


def send_at_once(requests: list[Callable[[], dict]]) -> tuple[float, list[dict]]:
    """Run each request on its own thread, started 20 ms apart so the queue's FIFO order is the list's; returns
    (wall seconds, the requests' results in order)."""
    results: list = [None] * len(requests)

    def run(i):
        results[i] = requests[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    t0 = time.monotonic()
    for t in threads:
        t.start()
        time.sleep(0.02)
    for t in threads:
        t.join()
    return time.monotonic() - t0, results


def queue_row(wall: float, timings: list[dict]) -> dict:
    """Wall time against the sum of what the engine reports per request: below 1 when saving one result
    overlaps sampling the next."""
    busy = sum(t["load_s"] + t["sample_s"] + t["save_s"] for t in timings)
    # Between one request's end of sampling and the next one's start on the main thread: handing the result to
    # the saver (blocks when two wait), freeing unused components, the loop's own overhead.
    gaps = [b["picked_at"] - a["sampled_at"] for a, b in zip(timings, timings[1:]) if "sampled_at" in a]
    return {
        "requests": len(timings),
        "wall_s": round(wall, 3),
        "sum_busy_s": round(busy, 3),
        "sum_save_s": round(sum(t["save_s"] for t in timings), 3),
        "wall_over_sum": round(wall / busy, 3),
        "gaps_s": [round(g, 3) for g in gaps],
        # Each request's own timings, so a wall time above the sum can be placed (Flux with engine.compile auto
        # on the H200: 12.2 s of wall for 7.8 s of work, no gap between requests on the main thread).
        "timings": [{k: v for k, v in t.items() if isinstance(v, (int, float))} for t in timings],
    }
