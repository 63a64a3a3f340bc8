"""What a running request reports while it runs: its status and stage, its progress and its latent frames, from
whichever thread runs it (the main thread, or a batched request's own: batching.py). A base class of ``Engine``
(engine.py), whose holder calls ``_status_of_running`` and whose step hook calls ``_on_step``."""

from __future__ import annotations

import threading
import time
from typing import Optional

from extensions_built_in.inference_engine.latent_preview import LatentSender, shrink_tensor
from extensions_built_in.inference_engine.request import Request
from toolkit.sample_step_hook import GenerationCancelled


class EngineProgress:
    latents: LatentSender
    _thread: threading.local

    def _latents(self) -> LatentSender:
        """This thread's sender: it reads back on the thread that queued the copies (latent_preview.py)."""
        if getattr(self._thread, "joined", False) is False:  # the serving thread's request
            return self.latents
        sender = getattr(self._thread, "latents", None)
        if sender is None:
            sender = self._thread.latents = LatentSender()
        return sender

    def _status_of_running(self, message: str, stage: Optional[str]) -> None:
        """The holder's one status hook: it reports to the request this thread runs (none at warm load)."""
        req = getattr(self._thread, "req", None)
        if req is not None:
            self._on_status(req, message, stage)
        elif stage == "loading":
            self._set_info(message, force=True)

    def _on_status(self, req: Request, message: str, stage: Optional[str]) -> None:
        if req.cancelled.is_set():
            raise GenerationCancelled()  # between components while loading, or before sampling
        if stage and stage != req.stage:
            self.memory.end_stage(req.stage, req.timings)  # its peak and what was on the GPU, in the timings
            if req.clock is not None:
                req.clock.stage_started(stage)
        req.stage, req.message = stage or req.stage, message
        req.stream.emit("status", stage=req.stage, message=message)
        if stage == "loading":
            self._set_info(message, force=True)

    def _on_step(self, req: Request, step, state: dict) -> None:
        started = time.perf_counter()
        try:
            with req.stream.held():
                self._stream_step(req, step, state)
        finally:
            req.clock.hooks.append(time.perf_counter() - started)
        self._admit()  # the next in line joins at the next step, if it may (batching.py)

    def _stream_step(self, req: Request, step, state: dict) -> None:
        req.clock.mark()
        if req.cancelled.is_set():
            raise GenerationCancelled()
        latents = self._latents()
        latents.pump()
        done = step.step + 1
        elapsed = time.monotonic() - state["t0"]
        it_s = done / elapsed if elapsed > 0 else 0.0
        progress = self.run_times.progress
        if progress is not None and progress.request_id == req.id:
            progress.step, progress.total, progress.it_s = done, step.num_steps, it_s
        req.stream.emit(
            "progress",
            step=done,
            total=step.num_steps,
            eta_s=round((step.num_steps - done) / it_s, 3) if it_s else None,
            it_s=round(it_s, 4),
        )
        opts = req.options
        if opts.latents != "none" and (step.step % opts.every_n_steps == 0 or done == step.num_steps):
            tensor = shrink_tensor(
                step.latents(opts.latents), req.model_class.latent.layout, opts.max_frames, opts.downsample
            )
            latents.send(req.stream, done, tensor, req.model_class.latent.layout)
        self._set_info(f"Generating {done}/{step.num_steps}")
