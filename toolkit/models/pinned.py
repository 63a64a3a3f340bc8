"""Page-locked host memory of the size asked for.

Every weight that waits on the host between uses (a visiting model, a streamed block, the pool's RAM tier) keeps a
page-locked copy there, so that it reaches the GPU at copy-engine speed (~55 GB/s: docs/BENCHMARKS.md "Memory plan").
torch's ``pin_memory=True`` rounds every allocation up to the next power of two: on the GPU machine (torch 2.11) a
1.2 GiB tensor held 2.0 GiB, and the setting that stops it (``pinned_max_round_threshold_mb``) is not in that release
(docs/MEASURED.md "torch's pinned allocator rounding to powers of two"). Tensor by tensor that costs up to twice
the weights: FLUX.2-dev's 8-bit transformer and encoder (56 GiB of copies) took the 125 GiB machine out of memory
while loading.

Here the copies made together (a block's, a visiting model's) are views into one anonymous mapping of their
summed size, page-locked with ``cudaHostRegister`` (as torch's own ``torch.cuda._pin_memory_utils`` does for
memory it did not allocate), and unregistered when the last view is gone.
"""

from __future__ import annotations

import logging
import mmap
from typing import Callable, Optional

logger = logging.getLogger(__name__)

ALIGN = 512  # every copy starts on this boundary: any dtype's alignment, and DMA-friendly
# Private anonymous memory, as malloc's: a shared mapping (mmap's default) would count as shmem, which containers
# cap separately. Windows has no flags (its anonymous mappings are private already).
PRIVATE = {"flags": mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS} if hasattr(mmap, "MAP_PRIVATE") else {}


class LockedPages(mmap.mmap):
    """An anonymous mapping that unregisters itself before it is unmapped. The tensors made from it with
    ``torch.frombuffer`` hold a reference to it, so this happens when the last of them is freed."""

    address = 0  # set once registered

    def __del__(self) -> None:
        if self.address and _capturing():
            _deferred.append(self)  # kept mapped until the capture is over (``_release_deferred``)
        elif self.address:
            _unregister(self.address)
            self.address = 0


# Mappings freed while a CUDA graph was being captured (the last copy of a dropped module, collected by the garbage
# collector at any moment): synchronizing or unregistering is not allowed then, so they wait for the next allocation.
_deferred: list = []


def _release_deferred() -> None:
    while _deferred and not _capturing():
        pages = _deferred.pop()
        _unregister(pages.address)
        pages.address = 0  # dropped here: unmapped now, its finalizer having run once already


def _capturing() -> bool:
    try:
        import torch

        return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
    except Exception:
        return False


def empty_like_all(tensors: list, lock: bool | None = None) -> list:
    """Uninitialised host tensors shaped like ``tensors``, carved from one block of their summed size and
    page-locked where there is a GPU to copy to (``lock`` None: decide by that)."""
    import torch

    _release_deferred()
    sizes = [t.numel() * t.element_size() for t in tensors]
    total = sum(_aligned(size) for size in sizes)
    if total == 0:
        return [torch.empty(t.shape, dtype=t.dtype) for t in tensors]
    lock = torch.cuda.is_available() if lock is None else lock
    if lock and _refused:
        return _torch_pinned(tensors)
    pages = LockedPages(-1, total, **PRIVATE)
    block = torch.frombuffer(pages, dtype=torch.uint8)
    if lock and not _register(pages, block.data_ptr(), total):
        return _torch_pinned(tensors)
    copies, offset = [], 0
    for t, size in zip(tensors, sizes):
        copies.append(block[offset : offset + size].view(t.dtype).view(t.shape))
        offset += _aligned(size)
    return copies


def _torch_pinned(tensors: list) -> list:
    """Where the driver will not page-lock memory torch did not allocate: torch's own pinned memory, rounded up."""
    import torch

    return [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in tensors]


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


_refused: list = []  # why the driver refused to page-lock memory torch did not allocate, once it has


def _register(pages: LockedPages, address: int, size: int) -> bool:
    import torch

    error = int(torch.cuda.cudart().cudaHostRegister(address, size, 0))
    if error:
        _refused.append(f"cudaHostRegister refused {size / 2**30:.2f} GiB (CUDA error {error})")
        logger.warning("%s: host copies use torch's pinned memory, rounded up to powers of two", _refused[0])
        return False
    pages.address = address
    return True


def _unregister(address: int) -> None:
    """Never raises: it runs while a mapping is freed, possibly as the interpreter exits. The GPU is
    synchronized first, so no copy from these pages is still in flight when they become pageable again."""
    try:
        import torch

        torch.cuda.synchronize()
        torch.cuda.cudart().cudaHostUnregister(address)
    except Exception:
        pass


def tensor_bytes(t) -> int:
    """What a tensor's storage takes. A torchao tensor subclass reports its logical dtype (bf16) while it stores
    8-bit data and scales: counted by its inner tensors, or a quantized Qwen-Image transformer counts as 40 GB
    instead of ~20, and a memory plan believes it has 41.9 GiB under a 24 GiB budget
    (testing/test_memory_plan_engine.py::test_a_quantized_module_counts_its_8_bit_storage_not_its_logical_dtype)."""
    inner = getattr(t, "__tensor_flatten__", None)
    if inner is None or type(t).__name__ in ("Tensor", "Parameter"):
        return t.numel() * t.element_size()
    names, _ = inner()
    return sum(tensor_bytes(getattr(t, name)) for name in names)


def host_buffers(tensors: dict, previous: Optional[dict], allocate: Callable = empty_like_all) -> dict:
    """One host buffer per tensor name; the new ones come from ``allocate`` (a list of tensors -> buffers shaped
    like them; by default page-locked views into one block, ``empty_like_all`` above). A returning module may
    have changed since its last park (a LoRA adapter wraps layers and renames their weights): buffers that still
    match are reused (pinning is slow) and only new names get buffers, unless more than ``STALE_SHARE`` of the old
    bytes went stale. Then all are new, because a live view keeps its whole block allocated, stale bytes too."""
    previous = previous or {}
    matching = {
        name: b
        for name, b in previous.items()
        if name in tensors and b.shape == tensors[name].shape and b.dtype == tensors[name].dtype
    }
    old_bytes = sum(tensor_bytes(b) for b in previous.values())
    if old_bytes - sum(tensor_bytes(b) for b in matching.values()) > STALE_SHARE * old_bytes:
        matching = {}
    missing = [name for name in tensors if name not in matching]
    fresh = dict(zip(missing, allocate([tensors[name] for name in missing])))
    return {name: matching[name] if name in matching else fresh[name] for name in tensors}


STALE_SHARE = 0.25  # a LoRA on the attention's q only (a few % of a UNet) keeps its block; one on every linear not
