"""Which fused attention kernel PyTorch's SDPA runs, chosen per family from measurements rather than assumed.

Every family's attention goes through ``torch.nn.functional.scaled_dot_product_attention`` (diffusers' default
``native`` backend, or the UNets' ``AttnProcessor2_0``), which picks flash, memory-efficient or cuDNN kernels in
a fixed priority order. On Hopper, cuDNN's fused attention can beat the flash kernel PyTorch ships (FlashAttention
2), but PyTorch ranks it lower; the published Flux.1-dev figure this engine is measured against (0.125 s/step on
an H200) needed FlashAttention 3. So the order is a setting, ``engine.attention``:

- ``auto``: on CUDA, the kernel measured fastest for the family (``MEASURED``, from
  ``testing/bench/compile_bench.py --stages attention``, docs/BENCHMARKS.md); PyTorch's order otherwise.
- ``default``: PyTorch's own order.
- ``flash`` | ``cudnn`` | ``efficient``: that kernel first, the others behind it (a kernel that cannot take a
  call, e.g. an unsupported head size, falls through to the next rather than failing the request).

The order is a context around the whole generation, so a compiled denoiser is traced (and its kernel picked)
under the same order it runs with.
"""

from __future__ import annotations

import contextlib
from typing import Optional

ATTENTION_MODES = ("auto", "default", "flash", "cudnn", "efficient")
KERNELS = ("flash", "cudnn", "efficient")

# arch -> the kernel measured fastest for it on the H200 (bf16, native size). A family not listed keeps
# PyTorch's order under ``auto``.
MEASURED: dict[str, str] = {}


def resolve_attention(mode: str, arch: str, device: str) -> Optional[str]:
    """The kernel to put first for ``arch`` on ``device``, or None for PyTorch's own order."""
    if mode not in ATTENTION_MODES:
        raise ValueError(f"engine.attention must be one of {', '.join(ATTENTION_MODES)} (got {mode!r})")
    if not str(device).startswith("cuda") or mode == "default":
        return None
    return MEASURED.get(arch) if mode == "auto" else mode


@contextlib.contextmanager
def attention_kernels(first: Optional[str]):
    """SDPA tries ``first`` before the other fused kernels, then the math fallback; None changes nothing."""
    if first is None:
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
    }
    order = [backends[first]] + [b for name, b in backends.items() if name != first] + [SDPBackend.MATH]
    with sdpa_kernel(order, set_priority=True):
        yield
