"""Streaming a model through the GPU block by block, for models too large to visit whole, keeping on the GPU
the blocks that fit beside the plan.

diffusers' group offloading streams bf16 encoders (``toolkit/models/components/loading.py``), but it moves each tensor
by re-pointing ``.data``, which torchao's quantized tensors refuse across devices. FLUX.2-dev needs both: in 8 bits
its transformer (34 GiB) and Mistral encoder (25 GiB) are each larger than a 24 GiB card, and in bf16 their host
copies (104 GiB) are larger than a 64 GiB machine's RAM. Here each block list of the model (``transformer_blocks``,
an encoder's ``layers``) runs one block at a time: a block's weights arrive from their pinned host copies
(``toolkit/models/offload.py``, which moves quantized tensors too) while the block before runs, on a side CUDA
stream, and go back to pointing at their host copies as soon as it has run (nothing is copied back: inference
does not change weights). What lies outside the block lists (embeddings, norms, heads) comes to the GPU for
each call, or, for a denoiser, stays there.

Denoisers in bf16 stream here too, for what diffusers' group offloading does not do: keep part of the model on the GPU
(``BlockStream.keep``). A streamed denoiser moves all of itself through PCIe every step (2.7x Flux's resident step:
docs/BENCHMARKS.md "Memory plan"); the memory plan gives the blocks that fit beside its peak a permanent place on the
GPU, as ComfyUI's partial loading does, and only the others stream. Encoders run once per request and keep diffusers'
leaf-level group offloading.
"""

from __future__ import annotations

import functools
import time
import weakref
from typing import Callable, Optional

from toolkit.models.offload import _tensors, move_to_device, move_to_host, tensor_parts
from toolkit.models.pinned import empty_like_all

STREAM_ATTR = "_aitk_block_stream"
_live: "weakref.WeakSet[BlockStream]" = weakref.WeakSet()
# CPU time spent in the streams' hooks since the process started: on a step that waits for its CPU (eager 8-bit
# layers) it adds to the step, so the engine reports it per step (``stream_ms``) beside the step time.
_hook_seconds = [0.0, 0]  # seconds, and how deep in timed hooks the caller is (an arrival sends blocks back)


def hook_seconds() -> float:
    return _hook_seconds[0]


def _timed(method: Callable) -> Callable:
    @functools.wraps(method)
    def timed(self, *args):
        if _hook_seconds[1]:  # inside another timed hook, which counts this time already
            return method(self, *args)
        started, _hook_seconds[1] = time.perf_counter(), 1
        try:
            return method(self, *args)
        finally:
            _hook_seconds[0] += time.perf_counter() - started
            _hook_seconds[1] = 0

    return timed


def time_denoiser_waits(device) -> list:
    """From now on, time how long the compute stream waits for the blocks of the denoisers streamed on
    ``device`` (``BlockStream.time_waits``; an encoder's waits are no step's). Returns those streams."""
    import torch

    device = torch.device(device)
    streams = [s for s in list(_live) if s.rest_stays and _same_device(s.device, device)]
    for s in streams:
        s.time_waits()
    return streams


def _timing_event():
    import torch

    return torch.cuda.Event(enable_timing=True)


def kept_bytes(device) -> int:
    """Bytes of streamed models' kept blocks on ``device``: memory the pool does not list (a streamed component
    waits on the host), which the next plan may count on as its own (``RequestMemory.refresh``)."""
    import torch

    device = torch.device(device)
    return sum(s.kept_bytes for s in list(_live) if _same_device(s.device, device))


def _same_device(a, b) -> bool:
    return a.type == b.type and (a.index or 0) == (b.index or 0)


def module_bytes(module, only: Optional[Callable[[str], bool]] = None) -> int:
    return sum(
        part.numel() * part.element_size()
        for name, t in _tensors(module).items()
        if only is None or only(name)
        for part in tensor_parts(t)
    )


def block_lists(module) -> list:
    """The module's block lists, in registration order (a transformer's double then single blocks): the
    shallowest ``ModuleList`` s whose every member has weights (an attention's ``to_out`` holds a dropout, so it
    is no block list; an encoder's ``language_model.layers`` lies a few levels down)."""
    import torch

    found = [
        (name, child)
        for name, child in module.named_modules()
        if isinstance(child, torch.nn.ModuleList)
        and len(child)
        and all(next(block.parameters(), None) is not None for block in child)
    ]
    if not found:
        return []
    depth = min(name.count(".") for name, _ in found)
    return [(name, child) for name, child in found if name.count(".") == depth]


class BlockStream:
    """Forward hooks that bring each block in just before it runs and send it back right after; the next
    block is prefetched meanwhile. At most the running block and the one arriving are on the GPU (a block that
    never runs, like a vision tower's for a text prompt, is sent back when another arrives)."""

    def __init__(self, module, device, allocate: Callable = empty_like_all, rest_stays: bool = False):
        import torch

        self.device = torch.device(device)
        lists = block_lists(module)
        if not lists:
            raise ValueError(f"{type(module).__name__} has no block list to stream")
        self.blocks = [block for _, blocks in lists for block in blocks]
        inside = tuple(f"{name}." for name, _ in lists)
        self.module, self.rest = module, (lambda name: not name.startswith(inside))
        move_to_host(module, allocate, only=self.rest)
        for block in self.blocks:
            move_to_host(block, allocate)
        self.on_device: dict = {}  # streamed block index -> CUDA event its arrival was recorded with (None off CUDA)
        self.kept: set = set()  # blocks that stay on the device (``keep``)
        self.sizes = [module_bytes(block) for block in self.blocks]
        self.side = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        # The compute stream's stalls on this stream's copies, as pairs of events around each (``time_waits``).
        self.new_event: Optional[Callable] = _timing_event if self.side is not None else None
        self.waits: Optional[list] = None
        # What lies outside the block lists (embeddings, norms, heads): an encoder's is on the GPU only while it
        # runs (a Mistral encoder's embedding table alone is 1.3 GB, which the plan does not count once it is
        # done); a denoiser's (``rest_stays``: small, and needed every step) stays, which also lets a pipeline
        # find its execution device on it when every other component waits on the host.
        self.rest_stays, self.rest_here = rest_stays, False
        self.rest_bytes = module_bytes(module, self.rest)
        self.handles = [
            module.register_forward_pre_hook(lambda m, args: self._rest_arrives()),
            module.register_forward_hook(lambda m, args, out: self.end_call()),
        ]
        for i, block in enumerate(self.blocks):
            self.handles.append(block.register_forward_pre_hook(lambda m, args, i=i: self._arrive(i)))
            self.handles.append(block.register_forward_hook(lambda m, args, out, i=i: self._leave(i)))
        setattr(module, STREAM_ATTR, self)
        _live.add(self)
        if rest_stays:
            self._rest_arrives()

    @property
    def kept_bytes(self) -> int:
        """What stays on the device between calls: the kept blocks, and a denoiser's rest."""
        return sum(self.sizes[i] for i in self.kept) + (self.rest_bytes if self.rest_stays and self.rest_here else 0)

    def keep(self, budget: int) -> int:
        """Keep the first blocks on the device, as many as fit in ``budget`` bytes; the others stream. Called
        per request with the plan's figure (0 gives the memory back); only the blocks whose place changes
        move. Returns the bytes kept."""
        if self.rest_stays:
            self._rest_arrives()
        kept, total = set(), 0
        for i, size in enumerate(self.sizes):
            if total + size > budget:
                break
            kept.add(i)
            total += size
        for i in sorted(self.kept - kept):
            self.kept.discard(i)
            self._record_use(self.blocks[i])
            move_to_host(self.blocks[i], write_back=True)  # a hot-swapped LoRA changed it where it was kept
        for i in sorted(kept - self.kept):
            self._leave(i)  # a streamed copy in flight becomes the kept one
            move_to_device(self.blocks[i], self.device)
            self.kept.add(i)
        return total

    def release(self) -> None:
        """Everything back on its host copies, a denoiser's rest too: its holder is gone, and the pool, which
        lists the component as waiting on the host, would not free this memory for the next model. Blocks in
        flight go back too: a call that ended in an error (out of memory) never reached the hook that sends them."""
        self.keep(0)
        self.end_call()
        self._send_rest()

    def _next_streamed(self, i: int) -> Optional[int]:
        n = len(self.blocks)
        return next(((i + k) % n for k in range(1, n + 1) if (i + k) % n not in self.kept), None)

    @_timed
    def _arrive(self, i: int) -> None:
        import torch

        nxt = self._next_streamed(i)
        if i not in self.kept:
            for j in [j for j in self.on_device if j not in (i, nxt)]:
                self._leave(j)
            if i not in self.on_device:
                self._stalled(lambda: self._bring(i, None))  # copied on the compute stream itself
            event = self.on_device[i]
            if event is not None:
                self._stalled(lambda: torch.cuda.current_stream(self.device).wait_event(event))
        if nxt is not None and nxt not in self.on_device:
            self._bring(nxt, self.side)

    def time_waits(self) -> None:
        """Time, from now on, how long the compute stream stalls on this stream's copies: a block it copies
        itself, or waits for from the side stream (``wait_seconds``). Off without CUDA events to time with."""
        self.waits = [] if self.new_event is not None else None

    def wait_seconds(self) -> Optional[float]:
        """The stalls timed since ``time_waits``, summed, and timing off; None where none were timed. The events
        are read once, after the last has completed: one wait per request, none per step."""
        waits, self.waits = self.waits, None
        if waits:
            waits[-1][1].synchronize()
        return None if waits is None else sum(begin.elapsed_time(end) for begin, end in waits) / 1000.0

    def _stalled(self, stall: Callable) -> None:
        """``stall`` between two events on the compute stream, while timing is on: what the GPU spent there is
        what a resident block would not have cost."""
        if self.waits is None:
            return stall()
        import torch

        compute = torch.cuda.current_stream(self.device) if self.device.type == "cuda" else None
        begin, end = self.new_event(), self.new_event()
        begin.record(compute)
        stall()
        end.record(compute)
        self.waits.append((begin, end))

    def _bring(self, i: int, stream) -> None:
        import torch

        if stream is None:
            move_to_device(self.blocks[i], self.device)
            self.on_device[i] = None
            return
        stream.wait_stream(torch.cuda.current_stream(self.device))  # the host copies are ready, memory is free
        with torch.cuda.stream(stream):
            move_to_device(self.blocks[i], self.device)
            event = torch.cuda.Event()
            event.record(stream)
        self.on_device[i] = event

    @_timed
    def _leave(self, i: int) -> None:
        if i not in self.on_device:
            return
        del self.on_device[i]
        self._record_use(self.blocks[i])
        move_to_host(self.blocks[i])

    @_timed
    def _rest_arrives(self) -> None:
        if not self.rest_here:
            move_to_device(self.module, self.device, self.rest)
            self.rest_here = True

    def end_call(self) -> None:
        """What a call brought leaves: the blocks in flight, and an encoder's rest. The module's forward hook;
        after a call that raised (out of memory, a cancel), the holder's. Moving the module itself (``.to``)
        instead would leave the hooks believing its blocks were where they had put them."""
        for j in list(self.on_device):
            self._leave(j)
        if not self.rest_stays:
            self._send_rest()

    def _send_rest(self) -> None:
        if self.rest_here:
            self._record_use(self.module, self.rest)
            move_to_host(self.module, only=self.rest, write_back=self.rest_stays)
            self.rest_here = False

    def _record_use(self, module, only=None) -> None:
        """Memory allocated on the side stream and used on the main one: the allocator must not hand it to the
        next prefetch before the main stream's kernels that read it are done."""
        import torch

        if self.device.type != "cuda":
            return
        main = torch.cuda.current_stream(self.device)
        for name, t in _tensors(module).items():
            if only is None or only(name):
                for part in tensor_parts(t):
                    if part.device.type == "cuda":
                        part.record_stream(main)

    def remove(self) -> None:
        self.release()
        for handle in self.handles:
            handle.remove()
        _live.discard(self)
