"""The training loop's bookkeeping: the loss log (CSV), the cosine learning-rate schedule with warm-up, an EMA of
the weights, and how many steps fit the time budget (measured, then restored)."""

from __future__ import annotations

import copy
import csv
import math
import time

import numpy as np


class LossLog:
    def __init__(self, every: int = 50):
        self.every, self.rows, self._acc, self._n, self.t0 = every, [], 0.0, 0, time.monotonic()

    def add(self, phase: str, step: int, total: int, loss, lr: float, **extra) -> None:
        self._acc = self._acc + loss.detach()  # a tensor: no device sync until a row is written
        self._n += 1
        if (step + 1) % self.every == 0 or step + 1 == total:
            row = dict(
                phase=phase,
                step=step + 1,
                loss=float(self._acc) / self._n,
                lr=lr,
                seconds=round(time.monotonic() - self.t0, 2),
                **extra,
            )
            self.rows.append(row)
            self._acc, self._n = 0.0, 0
            if len(self.rows) % 20 == 0 or step + 1 == total:
                print(
                    f"[{row['seconds']:7.1f}s] {phase} {step + 1}/{total} loss {row['loss']:.5f} lr {lr:.2e}",
                    flush=True,
                )

    def last(self, phase: str, n: int = 5) -> float:
        rows = [r["loss"] for r in self.rows if r["phase"] == phase][-n:]
        return float(np.mean(rows)) if rows else float("nan")

    def write_csv(self, path: str) -> None:
        keys = ["phase", "step", "loss", "lr", "seconds"]
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, keys, extrasaction="ignore")
            w.writeheader()
            for r in self.rows:
                w.writerow({k: (f"{r[k]:.6g}" if isinstance(r[k], float) else r[k]) for k in keys})


def lr_at(step: int, total: int, base: float, warmup: int = 200) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    p = (step - warmup) / max(1, total - warmup)
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


class EMA:
    def __init__(self, modules, decay: float):
        import torch

        self.decay = decay
        self.params = [p for m in modules for p in m.parameters()]
        self.shadow = [p.detach().clone().float() for p in self.params]
        self._torch = torch

    def update(self, step: int) -> None:
        d = min(self.decay, (1 + step) / (10 + step))
        with self._torch.no_grad():
            self._torch._foreach_lerp_(self.shadow, [p.detach().float() for p in self.params], 1 - d)

    def copy_to(self) -> None:
        with self._torch.no_grad():
            for p, s in zip(self.params, self.shadow):
                p.copy_(s)


def plan_steps(step_fn, state_modules, budget_s: float, probe: int = 25) -> int:
    """Steps that fit ``budget_s``: times ``probe`` steps on deep copies (the real models stay untouched)."""
    import torch

    copies = [copy.deepcopy(m) for m in state_modules]
    fn = step_fn(copies)
    for i in range(5):
        fn(i)
    sync_device()
    t0 = time.perf_counter()
    for i in range(probe):
        fn(i)
    sync_device()
    per_step = (time.perf_counter() - t0) / probe
    del copies, fn
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return max(1, int(budget_s / per_step)), per_step


def sync_device():
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
