"""The engine's line as the server sees it: places, a full line's 429, cancel, move, cancel all, and ``GET
/queue``'s rows with their ETAs. A base class of ``Engine`` (engine.py): torch-free methods the HTTP thread calls,
over the queue, the running request and the recent ones the engine keeps."""

from __future__ import annotations

import statistics
from typing import Optional

from extensions_built_in.inference_engine.queue_eta import queue_etas, run_key
from extensions_built_in.inference_engine.request import Request
from extensions_built_in.inference_engine.request_queue import QueueFull


class EngineLine:
    def refusal_if_full(self) -> Optional[QueueFull]:
        """The 429 a new request would get now, decided before its body is read or checked: under overload
        most requests are refused, and reading, validating and planning each only to refuse it took the HTTP
        thread's time from the streams it serves."""
        if not self.queue.full():
            return None
        return QueueFull(self.queue.max_pending, self._retry_after_s())

    def position_field(self, req: Request) -> dict:
        """``{"position": n}`` while queued (1-based place in line), ``{}`` once it runs."""
        position = self.queue.position(req.id)
        return {} if position is None else {"position": position}

    def _retry_after_s(self) -> int:
        """A full queue's ``Retry-After``: roughly one request's time, from the latest finished one."""
        recent = [r.timings.get("total_s") for r in list(self._recent)[-8:] if r.timings.get("total_s")]
        return max(1, min(60, round(statistics.median(recent)))) if recent else 5

    def cancel(self, request_id: str) -> Optional[str]:
        """'cancelled' (was queued, now removed), 'cancelling' (running; stops at the next step) or None."""
        req = self.queue.remove(request_id)
        running = self.running_request(request_id)
        if req is not None:
            req.cancelled.set()
            req.stream.finish(False, "cancelled", "Cancelled while queued")
            self._announce_positions()
            return "cancelled"
        if running is not None:
            running.cancelled.set()
            return "cancelling"
        if any(r.id == request_id for r in list(self._recent)):
            return "finished"
        return None

    def move(self, request_id: str, position: int) -> Optional[int]:
        """A waiting request to ``position`` (1-based; past the end: last); its new place, or None when it is not
        waiting. Every waiting stream hears its new place at once."""
        place = self.queue.move(request_id, position)
        if place is not None:
            self._announce_positions()
        return place

    def cancel_all(self, include_running: bool = True) -> dict:
        """Every waiting request cancelled at once (and the running one stopped at its next step, unless
        ``include_running`` is false); what was cancelled."""
        waiting = self.queue.clear()
        for req in waiting:
            req.cancelled.set()
            req.stream.finish(False, "cancelled", "Cancelled while queued")
        running = self.queue.running_items() if include_running else []
        for req in running:
            req.cancelled.set()
        cancelling = [r.id for r in running]
        # ``cancelling``: the oldest running request (one runs unless requests share steps); ``cancelling_all``:
        # every one stopping at its next step.
        return {
            "cancelled": [r.id for r in waiting],
            "cancelling": cancelling[0] if cancelling else None,
            "cancelling_all": cancelling,
        }

    def running_request(self, request_id: str) -> Optional[Request]:
        """The running request with this id (several run while requests share steps), or None."""
        return next((r for r in self.queue.running_items() if r.id == request_id), None)

    def find_request(self, request_id: str) -> Optional[Request]:
        """Queued, running, or among the last finished (``_recent``): what ``GET /requests/{id}/frames`` reaches."""
        return next((r for r in reversed(self._recent) if r.id == request_id), None)

    def open_streams(self) -> list[Request]:
        return [r for r in list(self._recent) if not r.stream.drained]

    def queue_snapshot(self) -> dict:
        """``GET /queue``: the rows, each with its ETA fields (queue_eta.py), the running one with its progress."""
        running, pending = self.queue.snapshot()
        holder = self.holder
        resident = (holder.arch, holder.model_config.name_or_path) if holder is not None else None
        running_eta, pending_eta = queue_etas(self.run_times, running, pending, self._run_key, resident)
        # ``running``: the oldest running request; ``sharing``: the others sampling with it (batching.py).
        sharing = [r.queue_row(0) for r in self.queue.running_items() if r is not running]
        return {
            "running": running.queue_row(0) | running_eta if running else None,
            "sharing": sharing,
            "pending": [r.queue_row(i + 1) | eta for i, (r, eta) in enumerate(zip(pending, pending_eta))],
        }

    @staticmethod
    def _run_key(req: Request) -> tuple:
        return run_key(req.model_class.arch, req.model.name_or_path, req.sample), req.batch_count

    def _announce_positions(self) -> None:
        for req, position in self.queue.positions():
            req.stream.emit("status", stage="queued", message="Waiting in queue", position=position)
