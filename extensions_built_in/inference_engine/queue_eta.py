"""How long the runs in line will take: ``GET /queue``'s ``run_s`` and ``eta_s``, from runs this engine measured.

A run's length is decided by its model, its size (width, height, frames, audio seconds) and its step count, so
finished runs are remembered under that key: seconds per image (sampling, decoding and handing the file to the
saver; the save itself overlaps the next run), the median step, and separately the load a model took when the
run before it used another model. An estimate for a waiting run is, best first:

- ``measured``: the median seconds per image of the latest runs with the same key;
- ``scaled``: a run of the same model and size with another step count, its fixed part kept and its steps
  rescaled by its median step;
- ``rate``: the running request's own step rate (same model and size), times the steps;
- none: ``run_s`` and ``eta_s`` are ``null`` (nothing comparable has run yet).

``eta_s`` is when a waiting run should end, counted from now: what is left of the running one (its steps left at
its current rate, plus the fixed part of its estimate, plus its batch's images still to come), then every run
ahead in line, then its own; a model switch adds that model's last measured load. One unknown run ahead makes
every later ``eta_s`` unknown. No torch and no HTTP here: the engine records and asks from its threads.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Optional

KEEP = 8  # latest runs remembered per key: a median over them shrugs off one slow outlier (a cold cache)


@dataclass(frozen=True)
class RunKey:
    arch: str
    model: str
    width: int
    height: int
    frames: int
    duration_s: float
    steps: int

    @property
    def shape(self) -> tuple:
        return (self.arch, self.model, self.width, self.height, self.frames, self.duration_s)


def run_key(arch: str, model: str, sample) -> RunKey:
    """The key of a request's sample (a ``GenerateImageConfig`` or anything with its fields)."""

    def number(name, default=0):
        value = getattr(sample, name, None)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else default

    return RunKey(
        arch,
        model,
        int(number("width")),
        int(number("height")),
        int(number("num_frames", 1) or 1),
        float(number("duration_s")),
        int(number("num_inference_steps")),
    )


@dataclass
class Progress:
    """The running request as the step hook last saw it."""

    request_id: str
    image: int  # 0-based image of its batch
    images: int
    step: int = 0
    total: int = 0
    it_s: float = 0.0


class RunTimes:
    def __init__(self, keep: int = KEEP):
        self.keep = keep
        self._image_s: dict[RunKey, deque] = {}
        self._step_s: dict[tuple, deque] = {}  # by shape: a step's cost does not depend on the step count
        self._load_s: dict[tuple, float] = {}  # (arch, model) -> the last load when the model switched
        self._lock = threading.Lock()
        self.progress: Optional[Progress] = None  # replaced whole by the main thread: readers see one or the other
        self.picked: Optional[tuple[str, float]] = None  # (request id, monotonic time it left the line)

    # ------------------------------------------------------------------ recording (main thread)
    def record(self, key: RunKey, image_s: float, step_s: Optional[float], load_s: Optional[float]) -> None:
        """A finished run: seconds per image, its median step (None: not measured), and its load when the model
        before it was another one (None: no switch)."""
        with self._lock:
            self._image_s.setdefault(key, deque(maxlen=self.keep)).append(max(0.0, image_s))
            if step_s:
                self._step_s.setdefault(key.shape, deque(maxlen=self.keep)).append(step_s)
            if load_s is not None:
                self._load_s[(key.arch, key.model)] = max(0.0, load_s)

    # ------------------------------------------------------------------ estimates (any thread)
    def image_estimate(
        self, key: RunKey, progress_key: Optional[RunKey] = None
    ) -> tuple[Optional[float], Optional[str]]:
        """Seconds for one image of ``key`` and how that was found (module docstring)."""
        with self._lock:
            same = self._image_s.get(key)
            if same:
                return statistics.median(same), "measured"
            steps = self._step_s.get(key.shape)
            if steps:
                step = statistics.median(steps)
                for other, runs in self._image_s.items():
                    if other.shape == key.shape and other.steps:
                        fixed = max(0.0, statistics.median(runs) - other.steps * step)
                        return fixed + key.steps * step, "scaled"
        progress = self.progress
        if progress is not None and progress_key is not None and progress.it_s > 0 and progress_key.shape == key.shape:
            return key.steps / progress.it_s, "rate"
        return None, None

    def switch_load(self, arch: str, model: str) -> float:
        with self._lock:
            return self._load_s.get((arch, model), 0.0)

    def running_left(
        self, request_id: str, key: RunKey, images: int, progress_key: Optional[RunKey]
    ) -> Optional[float]:
        """Seconds until the running request ends; None when nothing says."""
        per_image, _ = self.image_estimate(key, progress_key)
        progress = self.progress if self.progress and self.progress.request_id == request_id else None
        if progress is not None and progress.it_s > 0 and progress.total:
            sampling = progress.total / progress.it_s
            fixed = max(0.0, per_image - sampling) if per_image is not None else 0.0
            this_image = (progress.total - progress.step) / progress.it_s + fixed
            later = progress.images - progress.image - 1
            return this_image + later * (per_image if per_image is not None else sampling)
        if per_image is None:
            return None
        picked = self.picked
        elapsed = time.monotonic() - picked[1] if picked and picked[0] == request_id else 0.0
        index = progress.image if progress is not None else 0
        return max(0.0, (images - index) * per_image - elapsed)


def queue_etas(
    times: RunTimes, running, pending: list, key_of, resident: Optional[tuple] = None
) -> tuple[dict, list[dict]]:
    """The ETA fields of ``GET /queue``'s running row and of each waiting row, in line order.

    ``running``: the running request or None; ``pending``: the waiting ones; ``key_of(req)``: its
    ``(RunKey, images)``; ``resident``: the (arch, model) loaded now, when nothing runs."""
    progress_key = key_of(running)[0] if running is not None else None
    clock: Optional[float] = 0.0
    previous: Optional[tuple] = resident
    running_fields: dict = {}
    if running is not None:
        key, images = key_of(running)
        progress = times.progress if times.progress and times.progress.request_id == running.id else None
        left = times.running_left(running.id, key, images, progress_key)
        running_fields = {"eta_s": _round(left)}
        if progress is not None and progress.total:  # from its first step on
            running_fields["progress"] = {
                "step": progress.step,
                "total": progress.total,
                "it_s": round(progress.it_s, 4),
                "image": progress.image + 1,
                "images": progress.images,
            }
        clock = left
        previous = (key.arch, key.model)
    rows = []
    estimates: dict = {}  # a long line holds few distinct keys: each is estimated once per answer
    for req in pending:
        key, images = key_of(req)
        if key not in estimates:
            estimates[key] = times.image_estimate(key, progress_key)
        per_image, basis = estimates[key]
        run_s = None
        if per_image is not None:
            load = times.switch_load(key.arch, key.model) if previous and previous != (key.arch, key.model) else 0.0
            run_s = per_image * images + load
        clock = clock + run_s if clock is not None and run_s is not None else None
        rows.append({"run_s": _round(run_s), "eta_s": _round(clock), "eta_basis": basis})
        previous = (key.arch, key.model)
    return running_fields, rows


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 2)
