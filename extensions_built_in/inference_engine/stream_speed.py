"""What a streamed denoiser's copies cost on this machine, for the memory plan's stream cost.

The plan's stream cost (``toolkit/memory_plan.py`` ``stream_slowdown``) was fitted on one machine; host-to-device
bandwidth differs between machines and PCIe slots. So the engine measures its own pinned bandwidth at start
(``toolkit/h2d_probe.py``) and scales the fit's copy term by the fit machine's bandwidth over this one's. A step
can still be slower than predicted (a shared PCIe switch, another process's copies): each request with a streamed
denoiser measures how long its compute waited for the copies (``BlockStream.time_waits``), and where its step
ran more than ``TOLERANCE`` slower than predicted, the copy term takes a correction for this machine (in memory,
on ``/health``) and the next request is planned afresh with it, its status frame saying why.
"""

from __future__ import annotations

from typing import Optional

from toolkit.memory_plan import STREAM_COPY_GBPS, copy_scale_for

TOLERANCE = 0.15  # a step this much slower than predicted corrects the copy term (less is noise)
MAX_CORRECTION = 8.0  # a measurement that asks for more is something else than copies


class StreamSpeed:
    def __init__(self):
        self.h2d_gbps: Optional[float] = None  # this machine's pinned host-to-device bandwidth, once measured
        self.probed = False
        self.correction = 1.0  # on the copy term, learnt from steps that ran slower than predicted
        self.pending: Optional[str] = None  # why the next plan must not keep the loaded placements
        self.last: Optional[dict] = None  # the last streamed step checked: measured and predicted slowdowns

    @property
    def link_scale(self) -> float:
        """The fit machine's bandwidth over this one's (1.0 until measured)."""
        return STREAM_COPY_GBPS / self.h2d_gbps if self.h2d_gbps else 1.0

    @property
    def copy_scale(self) -> float:
        """This machine's copy term over the fit's: what ``plan_memory`` takes as ``copy_scale``."""
        return round(self.link_scale * self.correction, 4)

    def measure_link(self, device) -> Optional[float]:
        """The pinned bandwidth, measured once (CUDA only). A probe that cannot run (no room for its quarter
        GiB on a full card) leaves the fit's own bandwidth assumed."""
        if not self.probed and str(device).startswith("cuda"):
            from toolkit.h2d_probe import pinned_h2d_gbps

            self.probed = True
            try:
                self.h2d_gbps = pinned_h2d_gbps(device)
            except RuntimeError as e:  # torch.OutOfMemoryError is one
                print(f"[engine] host-to-device bandwidth not measured: {e}"[:300], flush=True)
        return self.h2d_gbps

    def observe(self, plan, timings: dict) -> Optional[str]:
        """After a request: its streamed denoiser's step against the plan's prediction. The step less what its
        compute waited for copies is what it would have taken resident, so ``step / (step - wait)`` is the
        slowdown measured. More than ``TOLERANCE`` above the prediction: the copy term is corrected to what
        predicts it and the next plan starts afresh. Returns the re-plan's reason, or None."""
        step, wait_ms = timings.get("step_s"), timings.get("stream_wait_ms")
        predicted = plan.stream_slowdowns() if plan is not None else {}
        if not predicted or not step or wait_ms is None or wait_ms / 1000.0 >= step:
            return None
        role = max(predicted, key=predicted.get)
        measured = round(step / (step - wait_ms / 1000.0), 2)
        self.last = {"role": role, "measured": measured, "predicted": predicted[role]}
        if measured <= predicted[role] * (1 + TOLERANCE):
            return None
        part = next(p for p in plan.parts if p.role == role)
        tokens, kept = plan.workload.tokens, plan.kept.get(role, 0)
        needed = copy_scale_for(part, plan.placements[role], kept, tokens, measured)
        if needed is None or needed <= plan.copy_scale:
            return None
        self.correction = round(min(MAX_CORRECTION, needed / self.link_scale), 3)
        self.pending = (
            f"re-planned: the streamed {role}'s step measured {measured:.2f}x resident, predicted "
            f"{predicted[role]:.2f}x"
        )
        return self.pending

    def take_pending(self) -> Optional[str]:
        """The re-plan's reason, once: the plan that uses the correction says it."""
        reason, self.pending = self.pending, None
        return reason

    def describe(self) -> dict:
        return {
            "h2d_gbps": self.h2d_gbps,
            "reference_h2d_gbps": STREAM_COPY_GBPS,
            "copy_correction": self.correction,
            "copy_scale": self.copy_scale,
            "last_streamed_step": self.last,
        }
