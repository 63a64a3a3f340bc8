"""Per-step durations without stalling the GPU: CUDA events (read once, at the end) or wall time on a CPU.

The engine reports the median in ``result.timings.step_s`` and the GPU suite measures the bare pipeline with
the same clock, so streaming overhead is compared step for step rather than from noisy whole-call times.
"""

from __future__ import annotations

import statistics
import time
from typing import Optional

from toolkit.models import streaming


class StepClock:
    def __init__(self, device: str):
        self.cuda = str(device).startswith("cuda")
        self.marks: list = []
        self.hooks: list = []  # the engine's step hook's CPU seconds, one per step
        self.streamed_before = streaming.hook_seconds()

    def mark(self) -> None:
        if self.cuda:
            import torch

            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)
        else:
            self.marks.append(time.perf_counter())

    def durations(self) -> list[float]:
        if len(self.marks) < 2:
            return []
        if self.cuda:
            self.marks[-1].synchronize()
            return [a.elapsed_time(b) / 1000.0 for a, b in zip(self.marks, self.marks[1:])]
        return [b - a for a, b in zip(self.marks, self.marks[1:])]

    def median(self) -> Optional[float]:
        d = self.durations()
        return round(statistics.median(d), 5) if d else None

    def timings(self) -> dict:
        """The median step (hook and streaming included); the CPU time the engine's hook takes per step (where
        the sampler is launch-bound, SDXL on an H200, it adds to every step directly, and unlike step times it
        barely moves with the machine's load); and the CPU time per step of a streamed model's block moves
        (``toolkit/models/streaming.py``: denoisers, and encoders streamed in 8 bits), which adds to a step that
        waits for its CPU."""
        streamed = streaming.hook_seconds() - self.streamed_before
        return {
            "step_s": self.median(),
            "hook_ms": round(statistics.median(self.hooks) * 1000, 3) if self.hooks else None,
            "stream_ms": round(streamed * 1000 / max(1, len(self.hooks)), 3) if streamed else None,
        }
