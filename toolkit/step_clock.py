"""Per-step durations without stalling the GPU: CUDA events (read once, at the end) or wall time on a CPU.

The engine reports the median in ``result.timings.step_s`` and the GPU suite measures the bare pipeline with
the same clock, so streaming overhead is compared step for step rather than from noisy whole-call times.
"""

from __future__ import annotations

import statistics
import time
from typing import Optional

from toolkit.gc_heap import collector_seconds
from toolkit.models import streaming


class StepClock:
    def __init__(self, device: str):
        self.cuda = str(device).startswith("cuda")
        self.marks: list = []
        self.hooks: list = []  # the engine's step hook's CPU seconds, one per step
        self.streamed_before = streaming.hook_seconds()
        self.stages: list = []  # (stage, its start mark), in order (``stage_started``)
        self.collected_before = collector_seconds()
        self.waited = streaming.time_denoiser_waits(device)  # streamed denoisers' stalls on their copies

    def gc_seconds(self) -> float:
        """What the garbage collector held the process for since sampling began (toolkit/gc_heap.py): a pause
        no step or stage timer names, and one the frozen heap should keep near zero."""
        return round(collector_seconds() - self.collected_before, 4)

    def _now(self):
        if self.cuda:
            import torch

            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def _between(self, a, b) -> float:
        if self.cuda:
            b.synchronize()
            return a.elapsed_time(b) / 1000.0
        return b - a

    def mark(self) -> None:
        self.marks.append(self._now())

    def durations(self) -> list[float]:
        return [self._between(a, b) for a, b in zip(self.marks, self.marks[1:])]

    def stage_started(self, stage: str) -> None:
        """A request's stage starts here; the one before it ends. On a GPU the marks are events, so a stage is
        what the GPU spent on it (the CPU runs up to a step ahead: its clock would put the last steps in
        ``decoding``)."""
        self.stages.append((stage, self._now()))

    def stage_seconds(self) -> dict:
        """Seconds per stage, each ended by the next one's start (the last, unended, is left out: the engine's
        ``saving``, which ``save_s`` times); a stage entered twice sums. Why: a request's time outside its steps
        (encoding, the first step's extra, decoding) had no figure of its own (docs/MEASURED.md
        "Where a Flux.1 request's time goes")."""
        out: dict = {}
        for (stage, a), (_, b) in zip(self.stages, self.stages[1:]):
            out[stage] = round(out.get(stage, 0.0) + self._between(a, b), 4)
        return out

    def median(self) -> Optional[float]:
        d = self.durations()
        return round(statistics.median(d), 5) if d else None

    def timings(self) -> dict:
        """The median step (hook and streaming included); the CPU time the engine's hook takes per step (where the
        sampler is launch-bound, as SDXL's is on a fast GPU, it adds to every step directly, and unlike step times it
        barely moves with the machine's load); and the CPU time per step of a streamed model's block moves
        (``toolkit/models/streaming.py``: denoisers, and encoders streamed in 8 bits), which adds to a step that waits
        for its CPU; and the GPU time per step the streamed denoisers' compute waited for their copies
        (``stream_wait_ms``: a resident step would be the step less it, which the engine checks the plan's predicted
        slowdown against)."""
        streamed = streaming.hook_seconds() - self.streamed_before
        steps = max(1, len(self.hooks))
        waits = [w for w in (s.wait_seconds() for s in self.waited) if w is not None]
        return {
            "step_s": self.median(),
            "hook_ms": round(statistics.median(self.hooks) * 1000, 3) if self.hooks else None,
            "stream_ms": round(streamed * 1000 / steps, 3) if streamed else None,
            "stream_wait_ms": round(sum(waits) * 1000 / steps, 3) if waits else None,
        }
