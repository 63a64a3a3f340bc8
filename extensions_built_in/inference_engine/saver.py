"""Saving results off the generating thread.

Encoding a result (a 1024² PNG ~0.2 s, 33 frames of animated WebP ~1.5 s on the GPU machine: docs/MEASURED.md
"Saving a result on the generating thread") used to hold the main thread, so the next queued request waited for it.
Results now go to one worker thread, in order, while the main thread starts sampling the next request; Pillow and PyAV
release the GIL while they encode. The queue is bounded: when saving falls behind, the main thread waits instead of
piling decoded media up in memory.

Neither torch nor HTTP here: the engine hands over closures that write the file and emit the result frame.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Optional


class ResultSaver:
    def __init__(self, max_waiting: int = 2):
        self._jobs: queue.Queue = queue.Queue(maxsize=max_waiting)
        self._thread = threading.Thread(target=self._work, name="engine-saver", daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        """Queue ``job``; blocks while ``max_waiting`` jobs are already waiting. ``job`` handles its own errors."""
        self._jobs.put(job)

    def busy(self) -> bool:
        return self._jobs.unfinished_tasks > 0

    def drain(self, timeout: Optional[float] = None) -> bool:
        """Wait until everything submitted is saved (the engine stopping must not lose a finished result).
        ``Queue.join`` with a deadline: the queue's own count of unfinished jobs and the condition it signals."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._jobs.all_tasks_done:
            while self._jobs.unfinished_tasks:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._jobs.all_tasks_done.wait(remaining)
        return True

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except Exception as e:  # a job reports its own errors; this only keeps the worker alive
                print(f"[engine] saving failed: {type(e).__name__}: {e}", flush=True)
            finally:
                self._jobs.task_done()
