"""Which fused attention kernel PyTorch's SDPA runs, chosen per family from measurements rather than assumed.

Every family's attention goes through ``torch.nn.functional.scaled_dot_product_attention`` (diffusers' default
``native`` backend, or the UNets' ``AttnProcessor2_0``), which picks flash, memory-efficient or cuDNN kernels in a
priority order. On Hopper and Blackwell data-centre GPUs PyTorch (2.11) puts cuDNN first, and cuDNN measured fastest
there (Flux.1-dev's 1024² forward: eager 178 ms against flash's 198, compiled 133 against 155, docs/BENCHMARKS.md
"Compile tiers"); elsewhere flash comes first. The published Flux.1-dev figure this engine is measured against
(0.125 s/step, docs/BENCHMARKS.md "Peers") needed FlashAttention 3. So the order is a setting, ``engine.attention``:

- ``auto``: on CUDA, the kernel measured fastest for the family (``MEASURED``, from
  ``testing/bench/compile_bench.py --stages attention``, docs/BENCHMARKS.md "Compile tiers"); PyTorch's order otherwise.
- ``default``: PyTorch's own order.
- ``flash`` | ``cudnn`` | ``efficient``: that kernel first, the others behind it (a kernel that cannot take a
  call, e.g. an unsupported head size, falls through to the next rather than failing the request).
- ``fa4``: FlashAttention 4 (the ``flash-attn-4`` package, CuTe DSL kernels for Hopper and Blackwell) in place of
  PyTorch's own flash kernel, through PyTorch's FA4 registration (with toolkit/models/fa4_adapter.py as the
  module it calls, which the package's releases need), then flash first. FA3,
  which the published figure used, has no wheel on the package index; FA4's Hopper forward kernel is its
  successor and installs with pip. Its kernels are JIT-compiled at first use and kept on disk (next to the
  compile cache), so a restart reuses them. The engine refuses to start, naming the setting, where the package or
  a compute capability 9.x/10.x GPU is missing. Unlike the others, a call that SDPA sends to the flash kernel and
  FA4 then refuses fails the request instead of falling through; which shapes that could be is the GPU bench's
  question (``testing/bench/attention_kernels.py``).

The order is a context around the whole generation, so a compiled denoiser is traced (and its kernel picked)
under the same order it runs with.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from typing import Optional

ATTENTION_MODES = ("auto", "default", "flash", "cudnn", "efficient", "fa4")
KERNELS = ("flash", "cudnn", "efficient", "fa4")
FA4_MODULE = "flash_attn.cute.interface"  # the flash-attn-4 package's kernels
# FA4 registered with toolkit/models/fa4_adapter.py as its module (torch's stock registration fails every call
# with the flash-attn-4 releases on the package index: see there), under a name of our own.
FA4_IMPL = "aitk_fa4"
FA4_ADAPTER = "toolkit.models.fa4_adapter"

# arch -> the kernel measured fastest for it on the GPU machine (bf16, native size). A family not listed keeps
# PyTorch's order under ``auto``.
MEASURED: dict[str, str] = {}


def resolve_attention(mode: str, arch: str, device: str) -> Optional[str]:
    """The kernel to put first for ``arch`` on ``device``, or None for PyTorch's own order."""
    if mode not in ATTENTION_MODES:
        raise ValueError(f"engine.attention must be one of {', '.join(ATTENTION_MODES)} (got {mode!r})")
    if not str(device).startswith("cuda") or mode == "default":
        return None
    if mode != "auto":
        return mode
    measured = MEASURED.get(arch)
    return None if measured == "fa4" and fa4_unavailable(device) else measured  # auto never fails a request


def fa4_unavailable(device: str) -> Optional[str]:
    """Why ``engine.attention: fa4`` cannot run on ``device`` (None: it can). Imports the kernels, so the first
    request does not find out."""
    import torch
    import torch.nn.attention as attention

    if not hasattr(attention, "activate_flash_attention_impl"):
        return f"torch {torch.__version__} has no FA4 registration (torch.nn.attention, 2.11 or later)"
    try:
        importlib.import_module(FA4_MODULE)
    except Exception as e:  # not installed, or its CUDA DSL failed to load
        return f"the flash-attn-4 package does not import ({type(e).__name__}: {e}); pip install --pre flash-attn-4"
    major, minor = torch.cuda.get_device_capability(torch.device(device))
    if major not in (9, 10):
        return f"FA4 runs on compute capability 9.x or 10.x (Hopper, Blackwell); {device} is {major}.{minor}"
    return None


def check_attention(mode: str, device: str, cache_dir: str) -> None:
    """At start-up: a bad ``engine.attention`` or an FA4 that cannot run stops the engine, not the requests.
    FA4's compiled kernels go to ``cache_dir`` (unless the user set FlashAttention's own variable)."""
    resolve_attention(mode, "", device)
    if not str(device).startswith("cuda"):
        return
    settle_pytorch_order(device)  # on the engine's own GPU, not the process's current one
    if mode != "fa4":
        return
    os.environ.setdefault("FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED", "1")
    os.environ.setdefault("FLASH_ATTENTION_CUTE_DSL_CACHE_DIR", os.path.abspath(cache_dir))
    why = fa4_unavailable(device)
    if why:
        raise ValueError(f"engine.attention: fa4 cannot run here: {why}")


@contextlib.contextmanager
def flash_impl(name: Optional[str]):
    """PyTorch's flash kernel replaced by ``name`` (``FA4_IMPL``) inside, the previous one back after, so two families
    with different settings in one engine each get their own."""
    if name is None:
        yield
        return
    import torch.nn.attention as attention

    if name == FA4_IMPL and name not in attention.list_flash_attention_impls():
        from torch.nn.attention._fa4 import register_flash_attention_fa4

        attention.register_flash_attention_impl(name, register_fn=lambda: register_flash_attention_fa4(FA4_ADAPTER))
    before = attention.current_flash_attention_impl()
    if before != name:
        attention.activate_flash_attention_impl(name)
    try:
        yield
    finally:
        if before is None:
            attention.restore_flash_attention_impl()
        elif before != name:
            attention.activate_flash_attention_impl(before)


_settled = False  # PyTorch's own default order is in place (settle_pytorch_order)


def settle_pytorch_order(device: str = "cuda") -> None:
    """PyTorch sets its default order (cuDNN first on sm90/sm100 with a recent cuDNN) at the first CUDA SDPA call of the
    process, over any order set before it (``priority_order_init_`` in aten's sdp_utils.cpp). An engine whose first
    generation ran under ``flash`` ran cuDNN instead, its compiled blocks kept cuDNN, and the compile cache stored them
    under flash's key (0.132 s/step against flash's 0.151: docs/MEASURED.md
    "The attention order PyTorch sets at its first call"). One small call before the first order is set lets PyTorch do
    that first."""
    global _settled
    import torch

    if _settled or not torch.cuda.is_available():
        return
    _first_cuda_sdpa_call(device)
    _settled = True


def _first_cuda_sdpa_call(device: str) -> None:
    import torch

    q = torch.zeros(1, 1, 16, 64, device=device, dtype=torch.float16)
    torch.nn.functional.scaled_dot_product_attention(q, q, q)


@contextlib.contextmanager
def attention_kernels(first: Optional[str]):
    """SDPA tries ``first`` before the other fused kernels, then the math fallback; None changes nothing. Graphs
    compiled inside are cached under the order's own key (``sdpa_cache_key``)."""
    if first is None:
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
    }
    settle_pytorch_order()
    kernel = "flash" if first == "fa4" else first
    order = [backends[kernel]] + [b for name, b in backends.items() if name != kernel] + [SDPBackend.MATH]
    with (
        sdpa_kernel(order, set_priority=True),
        flash_impl(FA4_IMPL if first == "fa4" else None),
        sdpa_cache_key(),
    ):
        yield


@contextlib.contextmanager
def sdpa_cache_key():
    """The SDPA kernels in effect (priority order, the ones enabled, the flash implementation) added to the key of every
    graph torch.compile caches inside. Inductor's caches (FX graph, AOT autograd) key a graph by its code before the
    SDPA call is lowered to one kernel, so without it a graph compiled under one kernel order came back from the cache
    (and ran its kernel) under another: the reason compiled flash, cuDNN and efficient runs once measured alike
    (docs/MEASURED.md "Compiled graphs cached across attention orders"). Enter it inside the order it is to record."""
    import torch
    import torch.compiler.config as config
    from torch.nn.attention import current_flash_attention_impl

    cuda = torch.backends.cuda
    enabled = (cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled())
    enabled += (cuda.cudnn_sdp_enabled(),)
    state = f"sdpa={torch._C._get_sdp_priority_order()}{''.join('1' if on else '0' for on in enabled)}"
    state += f"{current_flash_attention_impl() or ''}"
    before = config.cache_key_tag
    config.cache_key_tag = f"{before}+{state}" if before else state
    try:
        yield
    finally:
        config.cache_key_tag = before
