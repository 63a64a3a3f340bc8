"""Requests that share steps: the engine's side of step batching (toolkit/models/step_batching.py has the model's).

The main thread runs the head of the line as it always did. When that request may share its steps (same model,
LoRAs, speed tier, size and frames as the one running: ``batch_key``; nothing in the holder that follows one
request: ``step_batching.refusal``), it opens a ``BatchGroup`` as it starts sampling. From then on, at every step
of every member, the next request in line joins if it has the group's key: it runs on a thread of its own on the
group's holder (no plan, no load: the key guarantees the same ones) and its first denoiser call joins the next
step. Only the head of the line joins, so the line keeps its order: a request with another key waits for the
group to empty, and nobody is passed. When the main thread's request is done it waits for the others, letting
more join, then closes the group.

``engine.max_batch`` caps the requests sampling together (0: as many as the memory plan's spare memory holds
working sets for, at most ``AUTO_MAX``; 1: off); ``engine.batch_wait_ms`` lets a lone request wait that long for
company before it starts (0: never slower alone). A base class of ``Engine`` (engine.py).
"""

from __future__ import annotations

import collections
import json
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Optional

# Requests ``max_batch: 0`` admits at most, whatever the plan's spare memory holds: a cap until docs/BENCHMARKS.md
# "Batching" measures where a step stops gaining from more.
AUTO_MAX = 8


class BatchGroup:
    """One holder's requests sharing steps: who is in it, and the denoiser wrapped while it is open."""

    def __init__(self, key: tuple, holder, plan, limit: int):
        from toolkit.models import step_batching

        self.key, self.holder, self.plan, self.limit = key, holder, plan, limit
        self.batcher = step_batching.StepBatcher()
        self._wrapped = step_batching.gathering(
            step_batching.denoisers(holder), step_batching.other_modules(holder), self.batcher.one_at_a_time
        )
        self._wrapped.__enter__()
        self.members: set = set()  # request ids
        self.changed = threading.Condition()

    def join(self, request_id: str) -> None:
        with self.changed:
            self.members.add(request_id)

    def leave(self, request_id: str) -> None:
        with self.changed:
            self.members.discard(request_id)
            self.changed.notify_all()

    def others(self, request_id: str) -> bool:
        with self.changed:
            return bool(self.members - {request_id})

    def wait(self, timeout: float) -> bool:
        """True once nobody is left."""
        with self.changed:
            if self.members:
                self.changed.wait(timeout)
            return not self.members

    def close(self) -> None:
        self._wrapped.__exit__(None, None, None)


class EngineBatching:
    _group: Optional[BatchGroup] = None

    def _init_batching(self) -> None:
        self._group = None
        self._admitting = threading.Lock()
        self._member_threads: Optional[ThreadPoolExecutor] = None
        self._running: list = []  # the open group's joined requests (futures)
        self.batch_sizes: collections.Counter = collections.Counter()  # requests per denoiser call, closed groups
        self.batch_halvings = 0
        self.batch_own_s: collections.deque = collections.deque(maxlen=4096)  # StepBatcher.own_s, closed groups
        self.batch_round_s: collections.deque = collections.deque(maxlen=4096)

    # ------------------------------------------------------------------ who may join
    def batch_key(self, req) -> Optional[tuple]:
        """What requests must share to share steps (None: this one runs alone). The holder and its plan follow
        from the model config, LoRAs and size; steps, sampler, prompts, seeds and guidance may all differ."""
        if self.settings.max_batch == 1:
            return None
        gen = req.sample
        model = json.dumps(req.model.identity(), sort_keys=True, default=str)
        return (req.model_class.arch, model, gen.width, gen.height, gen.num_frames, gen.speed)

    def _batch_limit(self, plan) -> int:
        """Requests sampling together: the setting, or what the plan's spare memory holds working sets for."""
        if self.settings.max_batch:
            return self.settings.max_batch
        if plan is None:
            return AUTO_MAX
        spare = max(0, plan.available - plan.peak)
        per_request = plan.work_of("sampling")
        return max(1, min(AUTO_MAX, 1 + (spare // per_request if per_request else AUTO_MAX)))

    def _member_for(self, req, holder, plan):
        """The request's place in the open group, opening one for the main thread's request where it may share;
        None: it runs alone."""
        from toolkit.models import step_batching

        group = self._group
        if group is not None and req.id in group.members:
            return group.batcher.member(req.id)
        key = self.batch_key(req)
        if group is not None or key is None:  # (a request that joined a group never comes here)
            return None
        limit = self._batch_limit(plan)
        if limit < 2 or step_batching.refusal(holder, req.sample) is not None:
            return None
        self._group = group = BatchGroup(key, holder, plan, limit)
        group.join(req.id)
        member = group.batcher.member(req.id)
        self._admit()  # those already waiting (engine.batch_wait_ms) start with it rather than a step later
        return member

    def _joins(self, group: BatchGroup, req) -> bool:
        from toolkit.models import step_batching

        return (
            not req.cancelled.is_set()
            and self.batch_key(req) == group.key
            and step_batching.refusal(group.holder, req.sample) is None
        )

    # ------------------------------------------------------------------ joining and draining
    def _admit(self) -> None:
        """The head of the line joins the open group while it has the group's key and room (from any member's
        step, and from the main thread while it waits for the group to empty). Room: the group's limit, or fewer
        once a merged call ran out of memory (``StepBatcher.max_calls``)."""
        group = self._group
        if group is None or not self._admitting.acquire(blocking=False):
            return
        try:
            while len(group.members) < min(group.limit, group.batcher.max_calls or group.limit):
                req = self.queue.pop(0, accept=lambda r: self._joins(group, r))
                if req is None:
                    return
                group.join(req.id)
                self._announce_positions()
                self._running.append(self._threads_for_members().submit(self._execute, req, group))
        finally:
            self._admitting.release()

    def _threads_for_members(self) -> ThreadPoolExecutor:
        """The threads joined requests run on, kept from one request to the next. cuDNN's execution plans for
        convolutions and attention are cached per thread (PyTorch keeps them ``thread_local``): a request on a
        thread of its own built every plan of its encoders and VAE again. An engine stopping (Ctrl+C) cancels its
        requests, so the wait for these threads at exit is the wait for one step."""
        if self._member_threads is None:
            workers = max(AUTO_MAX, self.settings.max_batch)
            self._member_threads = ThreadPoolExecutor(workers, thread_name_prefix="batch-member")
        return self._member_threads

    def _drain_group(self) -> None:
        """Main thread, after its own request: the group's other requests finish (more may still join), then
        the denoiser is unwrapped and what no request uses may leave the pool."""
        group = self._group
        if group is None:
            return
        while not group.wait(0.05):
            self._admit()
        with self._admitting:  # no member's step hook is admitting now; none will find the group again
            self._group = None
        wait(self._running)
        self._running.clear()
        group.close()
        self.batch_sizes.update(group.batcher.sizes)
        self.batch_halvings += group.batcher.halvings
        self.batch_own_s.extend(group.batcher.own_s)
        self.batch_round_s.extend(group.batcher.round_s)
        self.pool.release_unused(stop=lambda: len(self.queue) > 0)

    def _wait_for_company(self, req) -> None:
        """``engine.batch_wait_ms``: a lone request that may share waits that long for a second to arrive."""
        wait_s = self.settings.batch_wait_ms / 1000
        if wait_s <= 0 or len(self.queue) or self.batch_key(req) is None:
            return
        deadline = time.monotonic() + wait_s
        while not len(self.queue) and time.monotonic() < deadline and not req.cancelled.is_set():
            time.sleep(min(0.005, wait_s))

    def batching_stats(self) -> dict:
        """``/health``'s and ``/metrics``' view: denoiser calls by how many requests each carried."""
        sizes = collections.Counter(self.batch_sizes)
        group = self._group
        if group is not None:
            sizes.update(group.batcher.sizes)
        own, rounds = list(self.batch_own_s), list(self.batch_round_s)
        if group is not None:
            own, rounds = own + list(group.batcher.own_s), rounds + list(group.batcher.round_s)
        rows = sum(n * count for n, count in sizes.items())
        shared = sum(n * count for n, count in sizes.items() if n > 1)
        return {
            "max_batch": self.settings.max_batch,
            "calls_by_size": {str(n): sizes[n] for n in sorted(sizes)},
            "shared_share": round(shared / rows, 4) if rows else 0.0,
            "halvings": self.batch_halvings + (group.batcher.halvings if group is not None else 0),
            "open": sorted(group.members) if group is not None else [],
            # medians of the recent steps: a member's own work between two calls, and a round on the denoiser thread
            "member_own_ms": _median_ms(own),
            "round_ms": _median_ms(rounds),
        }


def _median_ms(seconds: list) -> Optional[float]:
    return round(statistics.median(seconds) * 1000, 3) if seconds else None
