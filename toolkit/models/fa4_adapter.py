"""FlashAttention 4's kernels in the form PyTorch's FA4 registration calls them.

torch's ``torch/nn/attention/_fa4.py`` (2.11, and still 2.13) unpacks ``out, lse = module._flash_attn_fwd(...)``, but
flash-attn-4's ``_flash_attn_fwd`` returns five values (out, lse and three optional tensors; 4.0.0b36 and b40 alike), so
through the stock registration every FA4 call failed with "too many values to unpack (expected 2)" after its kernel had
compiled and run (docs/MEASURED.md "FlashAttention 4 through torch's registration"). The engine registers FA4
with this module as its path (toolkit/models/attention.py), which hands torch the first two.
"""

from __future__ import annotations

from flash_attn.cute import interface

_flash_attn_bwd = interface._flash_attn_bwd  # torch checks the module has both; inference never calls it


def _flash_attn_fwd(*args, **kwargs):
    out, lse, *_ = interface._flash_attn_fwd(*args, **kwargs)
    return out, lse
