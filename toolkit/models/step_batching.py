"""Step-level batching: requests sampling on one resident model share each denoiser call.

Every batched request runs diffusers' own pipeline call, on its own thread, on a shallow copy of the resident
pipeline with a scheduler of its own (``Member.pipeline``): its encoding, noise, schedule, guidance and decoding
are what they are alone. Only the denoiser's ``forward`` is shared. While a batch runs it is wrapped
(``gathering``): a call from a member waits until every member that is sampling has made its call, then one of
them (the leader) has them run as one call (step_merge.py: what carries the batch is concatenated along dim 0, the
rest must agree) and hands each its slice (``split``). A request that arrives mid-run joins at its first call;
one that finishes leaves at its last step and decodes while the others go on; a cancel raises on its own thread.

Why the loop stays diffusers': the pipelines' loops differ per family in ways that decide the image (SDXL's
added time ids, Flux's shifted schedule and guidance embedding, Z-Image's per-sample lists, Wan 2.2's two
experts by timestep). Sharing the one call they all make batches every family whose denoiser takes a batch,
with each family's math unchanged, and image-to-image's cut schedule and inpainting's blend stay the hooks on
the member's own scheduler that they are alone (toolkit/models/latent_start.py).

Every round runs on one thread kept for the process (``on_denoiser_thread``), whichever member completes it: cuDNN
caches its convolution and attention plans per thread, and a round led by each request's own thread built them
all again, every round (docs/BENCHMARKS.md "Batching").

Members take turns between their calls (``StepBatcher.turn``): one member's code between two denoiser calls runs
while the others wait on a lock rather than for the GIL. PyTorch lets go of the GIL around every op, so eight
threads stepping at once hand it over at every launch, and on a fast GPU the handovers, not the work, set the
pace of a round (docs/BENCHMARKS.md "Batching"). Sampling in turn loses nothing: the GIL ran them one at a
time anyway.

What cannot be merged is never forced: calls that disagree run as separate groups in the same round; a batch out
of memory is halved until it fits (one call alone that does not fit raises to its own request only); any other
failure of a merged call reruns its calls one by one, so batching never fails a request that runs alone.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import inspect
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Optional

from toolkit.models.step_merge import Incompatible, merge, split

RESIDENT_ATTR = "_aitk_resident"  # on a request's copy: the pipeline it copies (TaskPipelines.is_resident)
_local = threading.local()  # the member whose thread this is (None outside a batch)


@dataclass(eq=False)
class _Call:
    member: "Member"
    forward: Any  # the module's forward as it was before the batch wrapped it
    args: tuple
    kwargs: dict
    names: tuple = ()  # the forward's parameter names, for positional arguments
    done: bool = False
    result: Any = None
    error: Optional[BaseException] = None


@dataclass(eq=False)  # members are told apart by identity (sets of them)
class Member:
    """One request in a batch: its thread's pipelines, and whether it is between its first call and last step."""

    batcher: "StepBatcher"
    name: str
    copies: dict = field(default_factory=dict)
    has_turn: bool = False
    returned_at: Optional[float] = None  # when its last call handed it its result (``StepBatcher.own_s``)

    def pipeline(self, pipeline):
        """The request's own copy of ``pipeline``: the same modules, its own scheduler and per-call state, and
        its tokenizers and processors used one thread at a time (``OneAtATime``)."""
        own = self.copies.get(id(pipeline))
        if own is None:
            own = copy.copy(pipeline)
            own.scheduler = copy.deepcopy(pipeline.scheduler)
            for name, value in _stateful_helpers(pipeline):
                # past DiffusionPipeline.__setattr__, which would write the proxy into the shared config
                object.__setattr__(own, name, OneAtATime(value, self.batcher.one_at_a_time))
            setattr(own, RESIDENT_ATTR, pipeline)
            self.copies[id(pipeline)] = own
        return own

    @contextlib.contextmanager
    def sampling(self):
        """This thread's denoiser calls go through the batch for the duration; leaving (a finish, a cancel, an
        error) lets the others go on without it."""
        _local.member = self
        try:
            yield self
        finally:
            _local.member = None
            self.batcher.leave(self)

    def done_sampling(self) -> None:
        """After the last step: the others stop waiting for this one's next call (it decodes now)."""
        self.batcher.leave(self)


def _stateful_helpers(pipeline):
    """The pipeline's components without weights that a call drives through shared state: tokenizers and
    processors. A fast tokenizer sets padding and truncation on its one Rust object and then encodes; SD 1.5's
    pipeline asks for ``padding="max_length"`` and then ``"longest"`` (its truncation warning), so two requests
    encoding at once got a 2-token negative prompt beside a 77-token prompt (``testing/test_batching.py``)."""
    import torch

    for name, value in (getattr(pipeline, "components", None) or {}).items():
        if name != "scheduler" and callable(value) and not isinstance(value, torch.nn.Module):
            yield name, value


class OneAtATime:
    """``inner`` (a tokenizer, a processor) called, and its methods run, under ``lock``; everything else read
    through. ``isinstance`` sees the inner object's class, as pipelines that test a tokenizer's type expect."""

    def __init__(self, inner, lock):
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_lock", lock)

    @property
    def __class__(self):
        return type(self._inner)

    def __call__(self, *args, **kwargs):
        with self._lock:
            return self._inner(*args, **kwargs)

    def __getattr__(self, name):
        value = getattr(self._inner, name)
        if not callable(value) or isinstance(value, type):
            return value

        def locked(*args, **kwargs):
            with self._lock:
                return value(*args, **kwargs)

        return locked

    def __len__(self):  # len(tokenizer): its vocabulary
        return len(self._inner)


class StepBatcher:
    """The rounds of one batch. ``sizes``: requests per merged call (a histogram), for ``/metrics``.
    ``one_at_a_time``: the lock the encoders, VAE and tokenizers of a batch run under (``gathering``)."""

    def __init__(self):
        self.one_at_a_time = threading.RLock()
        self.turn = threading.Lock()  # held by the member running its own code between two calls
        self._cv = threading.Condition()
        self._sampling: set = set()
        self._waiting: list[_Call] = []
        self._busy = False
        self.sizes: collections.Counter = collections.Counter()
        self.halvings = 0
        # Where a round's time goes, for /health: each member's own seconds between two of its calls (its loop,
        # scheduler, hook and frames), and each round's seconds on the denoiser thread (on a GPU, launching it).
        self.own_s: collections.deque = collections.deque(maxlen=4096)
        self.round_s: collections.deque = collections.deque(maxlen=4096)
        # Calls one merged call may carry: after a merged call runs out of memory, half of it, so later rounds
        # do not run out of memory (and halve) again every step. None: no limit found.
        self.max_calls: Optional[int] = None

    def member(self, name: str) -> Member:
        return Member(self, name)

    def leave(self, member: Member) -> None:
        self._give_turn(member)
        with self._cv:
            self._sampling.discard(member)
            self._cv.notify_all()

    def _give_turn(self, member: Member) -> None:
        if member.has_turn:
            member.has_turn = False
            self.turn.release()

    def _take_turn(self, member: Member) -> None:
        # never under the condition's lock: the member holding the turn takes that lock to make its next call
        self.turn.acquire()
        member.has_turn = True

    def sampling_members(self) -> int:
        with self._cv:
            return len(self._sampling)

    def call(self, member: Member, forward, args: tuple, kwargs: dict, names: tuple = ()):
        """``forward(*args, **kwargs)`` for ``member``, run with the other members' calls of this round."""
        call = _Call(member, forward, args, kwargs, names)
        if member.returned_at is not None:
            self.own_s.append(time.perf_counter() - member.returned_at)
        self._give_turn(member)
        with self._cv:
            self._sampling.add(member)
            self._waiting.append(call)
            # No wake-up for the others: a round this call completes, this thread runs itself (below); one that
            # is running wakes them all when it ends.
            while not call.done:
                if not self._busy and self._round_ready():
                    batch, self._waiting, self._busy = self._waiting, [], True
                    self._cv.release()
                    started = time.perf_counter()
                    try:
                        on_denoiser_thread(run_round, batch, self)
                    finally:
                        self.round_s.append(time.perf_counter() - started)
                        self._cv.acquire()
                        self._busy = False
                        self._cv.notify_all()
                else:
                    self._cv.wait()
        self._take_turn(member)
        member.returned_at = time.perf_counter()
        if call.error is not None:
            raise call.error
        return call.result

    def _round_ready(self) -> bool:
        """Every member that is sampling has its call in: a member encoding or decoding is not waited for."""
        return bool(self._waiting) and {c.member for c in self._waiting} >= self._sampling


@contextlib.contextmanager
def gathering(denoisers: list, others: list = (), one_at_a_time=None):
    """For the duration: each denoiser's ``forward`` goes through the batch when called from a member's thread (a
    thread outside any batch calls it as before), and the other modules (encoders, VAE) run for one thread at a
    time, under ``one_at_a_time`` (the batcher's lock, which its members' tokenizers take too). Causal video VAEs
    keep each chunk's features on the module between calls (Wan's, Qwen-Image's): two decodes at once read each
    other's, and the video came out wrong."""
    wrapped = []
    one_at_a_time = one_at_a_time or threading.RLock()
    for module in denoisers:
        wrapped.append((module, "forward", _wrap(module, "forward", _gathered)))
    for module in others:
        for name in ("encode", "decode", "forward", "clear_cache"):  # a cancelled request's clean-up too
            if callable(getattr(type(module), name, None)):
                wrapped.append((module, name, _wrap(module, name, lambda inner: _locked(inner, one_at_a_time))))
    try:
        yield
    finally:
        for module, name, own in reversed(wrapped):
            if own is None:
                module.__dict__.pop(name, None)
            else:
                setattr(module, name, own)


def _wrap(module, name: str, make):
    """Sets ``module.<name>`` to ``make(what it was)``; returns the instance attribute it replaced (None: the
    class's method was in use)."""
    own = module.__dict__.get(name)
    inner = own if own is not None else getattr(type(module), name).__get__(module)
    setattr(module, name, make(inner))
    return own


def _locked(inner, lock):
    def call(*args, **kwargs):
        with lock:
            return inner(*args, **kwargs)

    return call


def _gathered(inner):
    try:
        names = tuple(inspect.signature(inner).parameters)
    except (TypeError, ValueError):
        names = ()

    def forward(*args, **kwargs):
        member = getattr(_local, "member", None)
        if member is None:
            return inner(*args, **kwargs)
        return member.batcher.call(member, inner, args, kwargs, names)

    return forward


# ---------------------------------------------------------------------------------------------- who may batch
# Samplers that draw from torch's global generator (DPM++ SDE seeds its Brownian tree from it): two threads
# would draw from one stream, and neither image would be the one it is alone.
GLOBAL_RNG_SAMPLERS = {"DPM++ SDE"}


def denoisers(model) -> list:
    """The holder's denoiser modules: the calls a batch shares."""
    return [
        model.parts[role]
        for role, comp in model.components.items()
        if comp.source == "main" and hasattr(model.parts.get(role), "forward")
    ]


def other_modules(model) -> list:
    """The holder's other modules with weights (encoders, VAE): one thread at a time (``gathering``)."""
    shared = denoisers(model)
    return [
        part
        for part in model.parts.values()
        if hasattr(part, "forward") and hasattr(part, "parameters") and not any(part is d for d in shared)
    ]


def refusal(model, gen) -> Optional[str]:
    """Why a request on this holder runs alone (None: it may share steps). Everything here is either state the
    denoiser holds for one request at a time, or what would make its image differ from its image alone."""
    from toolkit.memory_plan import OFF_GPU
    from toolkit.models import from_image
    from toolkit.models.speed import wants_cache

    if not model.batchable:
        return f"{model.arch} runs one request at a time"
    if from_image.task_of(gen) == from_image.VID2VID:
        return "a request that starts from a video runs alone"
    if model.plan is not None and any(p in OFF_GPU for p in model.plan.placements.values()):
        return "weights that visit or stream the GPU run one request at a time"
    if wants_cache(gen.speed) and model.step_cache:
        return "the step cache follows one request's steps"
    if gen.sampler in GLOBAL_RNG_SAMPLERS:
        return f"{gen.sampler} draws from the process's global generator"
    for module in denoisers(model):
        # Regionally compiled blocks take a batch like any other size (one recompile, dynamic, then reused);
        # a denoiser compiled whole replays CUDA graphs recorded at one batch size.
        if getattr(module, "_compiled_call_impl", None) is not None or getattr(module, "_aitk_compiled", 0) == "whole":
            return "a denoiser compiled whole (engine.compile: max) runs one request at a time"
        if getattr(module, "_aitk_modulation", None) is not None:
            return "the modulation table follows one request's schedule"
    return None


# ---------------------------------------------------------------------------------------------- one round
_denoiser_thread = None
_denoiser_thread_made = threading.Lock()


def on_denoiser_thread(fn, *args):
    """``fn(*args)`` on the process's one denoiser thread, under the caller's grad and inference modes (both are
    per thread in torch); its error raises here."""
    global _denoiser_thread
    import torch

    with _denoiser_thread_made:
        if _denoiser_thread is None:
            _denoiser_thread = ThreadPoolExecutor(1, thread_name_prefix="denoiser")
    inference, grad = torch.is_inference_mode_enabled(), torch.is_grad_enabled()

    def run():
        with torch.inference_mode(inference), torch.set_grad_enabled(grad):
            return fn(*args)

    return _denoiser_thread.submit(run).result()


def run_round(calls: list[_Call], batcher: StepBatcher) -> None:
    """Every call of the round gets its result or its own error: groups of calls that merge run as one call each,
    in arrival order. Nothing leaves a call unanswered (its thread would wait forever)."""
    try:
        for group in _groups(calls, batcher.max_calls):
            _run_group(group, batcher)
    except BaseException as e:
        for call in calls:
            if not call.done:
                call.error, call.done = e, True
        raise


def _groups(calls: list[_Call], max_calls: Optional[int] = None) -> list[list[_Call]]:
    """Calls to the same module whose arguments merge, first come first placed, at most ``max_calls`` a group.
    A call joins a group whose first call it merges with: what merges (the shapes past the batch, the values
    that must agree) is the same between any two of a group, so each call is tried once per group, not with the
    whole group again."""
    groups: list[list[_Call]] = []
    for call in calls:
        for group in groups:
            room = max_calls is None or len(group) < max_calls
            if room and group[0].forward == call.forward and _merges([group[0], call]):
                group.append(call)
                break
        else:
            groups.append([call])
    return groups


def _merges(calls: list[_Call]) -> bool:
    try:
        merge(calls)
        return True
    except Incompatible:
        return False


def _run_group(calls: list[_Call], batcher: StepBatcher) -> None:
    from toolkit.device import is_oom

    if len(calls) == 1:
        _run_alone(calls[0])
        return
    try:
        args, kwargs, sizes = merge(calls)
        out = calls[0].forward(*args, **kwargs)
        parts = split(out, sizes)
    except Exception as e:
        if is_oom(e):  # half the batch may fit: never fail a request for its company
            _free_after_oom()
            batcher.halvings += 1
            half = len(calls) // 2
            batcher.max_calls = max(1, min(batcher.max_calls or half, half))
            _run_group(calls[:half], batcher)
            _run_group(calls[half:], batcher)
        else:  # a merge the model did not take: each call as it would run alone
            for call in calls:
                _run_alone(call)
        return
    batcher.sizes[len(calls)] += 1
    for call, part in zip(calls, parts):
        call.result, call.done = part, True


def _run_alone(call: _Call) -> None:
    try:
        call.result = call.forward(*call.args, **call.kwargs)
        call.member.batcher.sizes[1] += 1
    except BaseException as e:  # the caller's own error, raised on its own thread
        call.error = e
    call.done = True


def _free_after_oom() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
