"""Streaming an 8-bit model through the GPU block by block, for models too large to visit whole.

diffusers' group offloading streams bf16 models (``toolkit/models/v2/loading.py``), but it moves each tensor by
re-pointing ``.data``, which torchao's quantized tensors refuse across devices. FLUX.2-dev needs both: in 8 bits
its transformer (34 GiB) and Mistral encoder (25 GiB) are each larger than a 24 GiB card, and in bf16 their host
copies (104 GiB) are larger than a 64 GiB machine's RAM. Here each block list of the model (``transformer_blocks``,
an encoder's ``layers``) runs one block at a time: a block's weights arrive from their pinned host copies
(``toolkit/models/offload.py``, which moves quantized tensors too) while the block before runs, on a side CUDA
stream, and go back to pointing at their host copies as soon as it has run (nothing is copied back: inference
does not change weights). Everything outside the block lists (embeddings, norms, heads) stays on the GPU.
"""

from __future__ import annotations

from typing import Callable

from toolkit.models.offload import _pinned, move_to_device, move_to_host, tensor_parts

STREAM_ATTR = "_aitk_block_stream"


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

    def __init__(self, module, device, allocate: Callable = _pinned):
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
        self.on_device: dict = {}  # block index -> CUDA event its arrival was recorded with (None off CUDA)
        self.side = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        # What lies outside the block lists (embeddings, norms, heads) is on the GPU only while the model runs:
        # a Mistral encoder's embedding table alone is 1.3 GB, which the plan does not count once it is done.
        self.handles = [
            module.register_forward_pre_hook(lambda m, args: move_to_device(m, self.device, self.rest)),
            module.register_forward_hook(lambda m, args, out: self._rest_leaves()),
        ]
        for i, block in enumerate(self.blocks):
            self.handles.append(block.register_forward_pre_hook(lambda m, args, i=i: self._arrive(i)))
            self.handles.append(block.register_forward_hook(lambda m, args, out, i=i: self._leave(i)))
        setattr(module, STREAM_ATTR, self)

    def _arrive(self, i: int) -> None:
        import torch

        for j in [j for j in self.on_device if j not in (i, (i + 1) % len(self.blocks))]:
            self._leave(j)
        if i not in self.on_device:
            self._bring(i, None)
        event = self.on_device[i]
        if event is not None:
            torch.cuda.current_stream(self.device).wait_event(event)
        nxt = (i + 1) % len(self.blocks)
        if nxt not in self.on_device:
            self._bring(nxt, self.side)

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

    def _leave(self, i: int) -> None:
        if i not in self.on_device:
            return
        del self.on_device[i]
        self._record_use(self.blocks[i])
        move_to_host(self.blocks[i])

    def _rest_leaves(self) -> None:
        for j in list(self.on_device):
            self._leave(j)
        self._record_use(self.module, self.rest)
        move_to_host(self.module, only=self.rest)

    def _record_use(self, module, only=None) -> None:
        """Memory allocated on the side stream and used on the main one: the allocator must not hand it to the
        next prefetch before the main stream's kernels that read it are done."""
        import torch

        if self.device.type != "cuda":
            return
        main = torch.cuda.current_stream(self.device)
        for name, t in list(module.named_parameters()) + list(module.named_buffers()):
            if only is None or only(name):
                for part in tensor_parts(t):
                    if part.device.type == "cuda":
                        part.record_stream(main)

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
