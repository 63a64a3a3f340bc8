"""GEMM epilogues inductor does not make: a feed-forward's GELU inside its projection's cuBLASLt call, and Flux's
single-block output projection without the concatenated copy in front of it.

Why: Flux.1-dev's compiled step spent 13 of its 129 ms in inductor's Triton kernels between the cuBLAS GEMMs
(docs/MEASURED.md "Flux.1 step with GEMM epilogues"). Two of them only move memory: the double
blocks' GELU (2.1 ms: the 12288-wide projection read and written again) and the single blocks' GELU fused with
``torch.cat([attn_output, mlp_hidden_states])`` (4.1 ms: 141 MB written per block to be read once by ``proj_out``).
cuBLASLt applies a tanh GELU in the GEMM's epilogue (``torch._addmm_activation``), and ``proj_out(cat(a, m))`` is
``a @ Wa.T + m @ Wm.T + b``: two GEMMs, the second accumulating into the first's output, read straight from ``a`` and
``m``. Each is wrapped in a custom op so inductor keeps them as they are (it would split an ``addmm`` and a GELU apart
again and fuse the GELU into a Triton kernel). They take 3.0 % off Flux's step, the Triton kernels' share from 13.0 to
7.0 ms; Wan 2.1's blocks take the GELU epilogue alone (their feed-forwards are tanh GELU too), 2.2 % off its step
(docs/BENCHMARKS.md "Compile tiers").

What changes numerically: the GELU is computed from the GEMM's fp32 accumulator instead of from its bf16 output, and
the attention half of ``proj_out`` is rounded to bf16 once before the MLP half adds to it: each a rounding of the size
every bf16 op makes, no approximation (docs/BENCHMARKS.md "Compile tiers" has the PSNR against eager). A projection that
is not a plain ``nn.Linear`` with a plain weight (a LoRA's PEFT layer, a torchao float8 weight, a quantized one) keeps
diffusers' own path: the fused ops would drop the LoRA's delta or could not read the weight.
"""

from __future__ import annotations

import types

import torch
import torch.nn.functional as F


@torch.library.custom_op("aitk::linear_gelu_tanh", mutates_args=())
def linear_gelu_tanh(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``gelu(linear(x, weight, bias), approximate="tanh")`` in one cuBLASLt call on CUDA (its GELU epilogue is
    the tanh form: PyTorch's aten/src/ATen/native/cuda/Blas.cpp applies ``gelu_(…, "tanh")`` where it cannot
    fuse). On the CPU ``_addmm_activation`` computes the exact GELU instead, so the CPU takes the two ops."""
    rows = x.reshape(-1, x.shape[-1])
    if x.is_cuda:
        out = torch._addmm_activation(bias, rows, weight.t(), use_gelu=True)
    else:
        out = F.gelu(F.linear(rows, weight, bias), approximate="tanh")
    return out.view(*x.shape[:-1], weight.shape[0])


@linear_gelu_tanh.register_fake
def _(x, weight, bias):
    return x.new_empty(*x.shape[:-1], weight.shape[0])


@torch.library.custom_op("aitk::linear_of_concat", mutates_args=())
def linear_of_concat(a: torch.Tensor, m: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``linear(cat([a, m], -1), weight, bias)`` without the concatenated tensor: ``a``'s columns of the weight
    with the bias in the epilogue, then ``m``'s accumulated in place (beta 1)."""
    width = a.shape[-1]
    out = torch.addmm(bias, a.reshape(-1, width), weight[:, :width].t())
    out.addmm_(m.reshape(-1, m.shape[-1]), weight[:, width:].t())
    return out.view(*a.shape[:-1], weight.shape[0])


@linear_of_concat.register_fake
def _(a, m, weight, bias):
    return a.new_empty(*a.shape[:-1], weight.shape[0])


def plain(linear) -> bool:
    """A projection the fused ops can take: an ``nn.Linear`` itself (not a PEFT LoRA layer around one) whose
    weight and bias are ordinary floating-point tensors (not torchao's float8 subclasses)."""
    if type(linear) is not torch.nn.Linear or linear.bias is None:
        return False
    return all(
        type(p) in (torch.Tensor, torch.nn.Parameter) and type(p.data) is torch.Tensor and p.is_floating_point()
        for p in (linear.weight, linear.bias)
    )


def gelu_forward(self, hidden_states):
    """diffusers' ``GELU`` (``activations.py``: ``proj`` then the tanh GELU) with the GELU in the GEMM."""
    if plain(self.proj):
        return linear_gelu_tanh(hidden_states, self.proj.weight, self.proj.bias)
    return self.gelu(self.proj(hidden_states))


def flux_single_block_forward(
    self, hidden_states, encoder_hidden_states, temb, image_rotary_emb=None, joint_attention_kwargs=None
):
    """``FluxSingleTransformerBlock.forward`` of diffusers 0.42.1 (transformer_flux.py), with the MLP's GELU in
    its projection and ``proj_out`` read from the attention and MLP outputs without concatenating them.
    testing/test_epilogues.py holds it to diffusers' own forward."""
    if not (plain(self.proj_mlp) and plain(self.proj_out)):
        return type(self).forward(
            self, hidden_states, encoder_hidden_states, temb, image_rotary_emb, joint_attention_kwargs
        )
    text_seq_len = encoder_hidden_states.shape[1]
    hidden_states = torch.cat([encoder_hidden_states, hidden_states], dim=1)
    residual = hidden_states
    norm_hidden_states, gate = self.norm(hidden_states, emb=temb)
    mlp_hidden_states = linear_gelu_tanh(norm_hidden_states, self.proj_mlp.weight, self.proj_mlp.bias)
    attn_output = self.attn(
        hidden_states=norm_hidden_states, image_rotary_emb=image_rotary_emb, **(joint_attention_kwargs or {})
    )
    projected = linear_of_concat(attn_output, mlp_hidden_states, self.proj_out.weight, self.proj_out.bias)
    hidden_states = residual + gate.unsqueeze(1) * projected
    if hidden_states.dtype == torch.float16:
        hidden_states = hidden_states.clip(-65504, 65504)
    return hidden_states[:, :text_seq_len], hidden_states[:, text_seq_len:]


# Blocks compiled with the epilogues (each measured faster with them: docs/BENCHMARKS.md "Compile tiers"), and the
# forward each compiles instead of its class's own where it has one; the one dict this module adds.
EPILOGUE_BLOCKS = ("FluxTransformerBlock", "FluxSingleTransformerBlock", "WanTransformerBlock")
BLOCK_FORWARDS = {"FluxSingleTransformerBlock": flux_single_block_forward}


def block_forward(cls):
    """The forward to compile for a block class: ours where we have one, else the class's own."""
    return BLOCK_FORWARDS.get(cls.__name__, cls.forward)


def use_gelu_epilogues(blocks, classes=EPILOGUE_BLOCKS) -> int:
    """Every tanh ``GELU`` feed-forward projection inside ``blocks`` of ``classes`` (Flux's double blocks: ``ff``
    and ``ff_context``; None: every block, as testing/bench/compile_bench.py's ``gelu_all`` measures other
    families) with its GELU in the GEMM; returns how many. Bound per instance, so ``_uncompile`` in the bench
    (which drops instance forwards) takes them off again."""
    from diffusers.models.activations import GELU

    found = {  # by identity: a block listed with its parent would be counted twice
        id(sub): sub
        for block in blocks
        if classes is None or type(block).__name__ in classes
        for sub in block.modules()
        if type(sub) is GELU and sub.approximate == "tanh"
    }.values()
    for sub in found:
        sub.forward = types.MethodType(gelu_forward, sub)
    return len(found)


def bind_epilogues(module) -> int:
    """The epilogue forwards bound to ``module``'s Flux blocks themselves, for code that compiles the whole
    transformer rather than its blocks (testing/bench/compile_bench.py's ``whole_graphs_epilogues``); returns how
    many modules changed. Regional compile does not need it: ``_compile_blocks`` compiles ``block_forward``."""
    blocks = [sub for sub in module.modules() if type(sub).__name__ in EPILOGUE_BLOCKS]
    singles = [block for block in blocks if type(block).__name__ in BLOCK_FORWARDS]
    for block in singles:
        block.forward = types.MethodType(block_forward(type(block)), block)
    return use_gelu_epilogues(blocks) + len(singles)
