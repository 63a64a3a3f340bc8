"""How fast this machine copies page-locked host memory to its GPU.

A streamed denoiser's step waits on exactly these copies, and their speed differs between machines and PCIe
slots; the memory plan prices a stream by it (``toolkit/memory_plan.py`` ``STREAM_COPY_GBPS``). The host buffer is
page-locked the way the streamed weights' copies are (``toolkit/models/pinned.py``), and the copies are timed with
CUDA events on one stream: a quarter of a GiB five times takes a few tens of milliseconds.
"""

from __future__ import annotations

import statistics
from typing import Optional

PROBE_BYTES = 256 * 1024**2
REPEATS = 5


def pinned_h2d_gbps(device, nbytes: int = PROBE_BYTES, repeats: int = REPEATS) -> Optional[float]:
    """The median host-to-device bandwidth of ``repeats`` copies of ``nbytes`` in GB/s; None off CUDA."""
    import torch

    from toolkit.models.pinned import empty_like_all

    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    [host] = empty_like_all([torch.empty(nbytes, dtype=torch.uint8, device="meta")], lock=True)
    target = torch.empty(nbytes, dtype=torch.uint8, device=device)
    stream = torch.cuda.current_stream(device)
    target.copy_(host, non_blocking=True)  # the first copy pays for mapping the pages: not timed
    timed = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        target.copy_(host, non_blocking=True)
        end.record(stream)
        timed.append((start, end))
    timed[-1][1].synchronize()
    seconds = statistics.median(start.elapsed_time(end) / 1000.0 for start, end in timed)
    del target, host  # the device copy back to the allocator, the pages unregistered
    return round(nbytes / seconds / 1e9, 1) if seconds > 0 else None
