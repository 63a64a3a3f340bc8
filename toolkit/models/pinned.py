"""Page-locked host memory of the size asked for.

Every weight that waits on the host between uses (a visiting model, a streamed block, the pool's RAM tier) keeps
a page-locked copy there, so that it reaches the GPU at copy-engine speed (53 GB/s on the H200, 1.1 GB/s from
pageable memory). torch's ``pin_memory=True`` rounds every allocation up to the next power of two: on the GPU
machine (torch 2.11) a 1.2 GiB tensor held 2.0 GiB, and the setting that stops it
(``pinned_max_round_threshold_mb``) is not in that release (``docs/bench/pinned_probe_2026-12-02/pinned_probe.json``).
Tensor by tensor that costs up to twice the weights: FLUX.2-dev's 8-bit transformer and encoder (56 GiB of
copies) took the 125 GiB machine out of memory while loading.

Here the copies made together (a block's, a visiting model's) are views into one anonymous mapping of their
summed size, page-locked with ``cudaHostRegister`` (what torch does for memory it did not allocate, see
``torch/cuda/_pin_memory_utils.py``), and unregistered when the last view is gone.
"""

from __future__ import annotations

import mmap

ALIGN = 512  # every copy starts on this boundary: any dtype's alignment, and DMA-friendly
# Private anonymous memory, as malloc's: a shared mapping (mmap's default) would count as shmem, which containers
# cap separately. Windows has no flags (its anonymous mappings are private already).
PRIVATE = {"flags": mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS} if hasattr(mmap, "MAP_PRIVATE") else {}


class LockedPages(mmap.mmap):
    """An anonymous mapping that unregisters itself before it is unmapped. The tensors made from it with
    ``torch.frombuffer`` hold a reference to it, so this happens when the last of them is freed."""

    address = 0  # set once registered

    def __del__(self) -> None:
        if self.address:
            _unregister(self.address)
            self.address = 0


def empty_like_all(tensors: list, lock: bool | None = None) -> list:
    """Uninitialised host tensors shaped like ``tensors``, carved from one block of their summed size and
    page-locked where there is a GPU to copy to (``lock`` None: decide by that)."""
    import torch

    sizes = [t.numel() * t.element_size() for t in tensors]
    total = sum(_aligned(size) for size in sizes)
    if total == 0:
        return [torch.empty(t.shape, dtype=t.dtype) for t in tensors]
    pages = LockedPages(-1, total, **PRIVATE)
    block = torch.frombuffer(pages, dtype=torch.uint8)
    if torch.cuda.is_available() if lock is None else lock:
        _register(pages, block.data_ptr(), total)
    copies, offset = [], 0
    for t, size in zip(tensors, sizes):
        copies.append(block[offset : offset + size].view(t.dtype).view(t.shape))
        offset += _aligned(size)
    return copies


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


def _register(pages: LockedPages, address: int, size: int) -> None:
    import torch

    error = int(torch.cuda.cudart().cudaHostRegister(address, size, 0))
    if error:
        raise RuntimeError(f"could not page-lock {size / 2**30:.2f} GiB of host memory (CUDA error {error})")
    pages.address = address


def _unregister(address: int) -> None:
    """Never raises: it runs while a mapping is freed, possibly as the interpreter exits. The GPU is
    synchronized first, so no copy from these pages is still in flight when they become pageable again."""
    try:
        import torch

        torch.cuda.synchronize()
        torch.cuda.cudart().cudaHostUnregister(address)
    except Exception:
        pass
