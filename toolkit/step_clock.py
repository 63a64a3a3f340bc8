"""Per-step durations without stalling the GPU: CUDA events (read once, at the end) or wall time on a CPU.

The engine reports the median in ``result.timings.step_s`` and the GPU suite measures the bare pipeline with
the same clock, so streaming overhead is compared step for step rather than from noisy whole-call times.
"""

from __future__ import annotations

import statistics
import time
from typing import Optional


class StepClock:
    def __init__(self, device: str):
        self.cuda = str(device).startswith("cuda")
        self.marks: list = []

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
