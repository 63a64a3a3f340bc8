"""Flux.1's adaLN modulations computed for all of a request's timesteps at once, for the transformer compiled
regionally (``auto``) or whole (``max``) (toolkit/models/compile.py ``_compile_tabled_dit``).

Why: every step, each of Flux.1-dev's 77 adaptive norms (``norm1`` and ``norm1_context`` of 19 double blocks,
``norm`` of 38 single blocks, ``norm_out``) projects one 3072-wide vector, ``silu(temb)``, through its own
weights: 6.5 GB read to multiply a single row, 1.87 ms of a 126 ms step at the GPU's memory bandwidth
(docs/MEASURED.md "Flux.1's modulation projections"). ``temb`` depends only on the timestep, the guidance and
the pooled prompt, and the scheduler knows every timestep before the first step, so one GEMM per norm over all
of them reads each weight once per request instead of once per step. Nothing is approximated: the rows are what
each step computed, from a GEMM of more rows.

How it stays right. Each norm keeps its rows in a buffer of its own (a fixed address, which a CUDA graph reads
as it is when it replays; an input of the compiled code like the norm's weights, so the one graph of a block
class serves all 19 blocks), and the table holds the index of the row the next call takes. While the table is
on, each norm takes its row instead of computing its projection (the transformer still computes ``temb``, which
then feeds nothing: the whole graph drops it). Before each call ``prepare`` makes sure the row is there and
points the index at it, outside the compiled code and by the timestep the call was given, compared exactly with
the schedule's as the pipeline computes them (not by the call's position: an img2img request starts part-way
down the schedule; and not inside the graph, where inductor computes ``timestep * 1000`` in fp32 while eager
rounds it to bf16). The row comes from the request's plan when the call's guidance and pooled prompt are the
objects the plan was made with (its first timestep is checked against the schedule, one read-back a request),
else it is computed for that call alone (the old cost, nothing lost): what a transformer called without a
scheduler in hand gets (a script). A batch of more than one image returns False: the caller runs the
transformer's own forward with the table off.
"""

from __future__ import annotations

import contextlib
import types

CAPACITY = 50  # timesteps a request's plan holds: 2.1 MB a row for Flux.1-dev, 105 MB in all


class ModulationTable:
    """The rows of one transformer, the norms that read them, and the plan of the request running now."""

    def __init__(self, module):
        import torch

        self.module = module
        self.norms = _norms(module)
        for norm in self.norms:
            weight = norm.linear.weight
            rows = torch.zeros(CAPACITY, weight.shape[0], dtype=weight.dtype, device=weight.device)
            norm.register_buffer("_aitk_rows", rows, False)
        # The row the next call reads (``prepare`` writes it in place). One tensor at one address, a buffer of the
        # transformer so it moves with it: CUDA graphs take a tensor reached through a module as a static input,
        # and a fresh index each call made them record the graph again whenever the allocator handed it a new
        # address (0.2 s on each request's first step, 1.2 % a step with latents streamed: docs/MEASURED.md
        # "CUDA graphs re-recorded on a moving index").
        module.register_buffer("_aitk_index", torch.zeros(1, dtype=torch.int64, device=weight.device), False)
        self.keys = None  # the timesteps the rows are for, as the pipeline passes them
        self.on = False  # read by the traced forwards: dynamo guards on it
        self.scheduler = None  # the request's, while ``follow_schedule`` holds it
        self.plan = None  # (pooled, guidance) of the planned request
        self.builds = 0  # times the projections ran (the tests count them)

    def bind(self) -> None:
        """The norms' forwards that read the table while it is on (again after code that drops instance forwards
        to start from eager: testing/bench/compile_bench.py between its variants)."""
        for norm in self.norms:
            norm._aitk_table = self
            norm.forward = types.MethodType(NORM_FORWARDS[type(norm).__name__], norm)

    def prepare(self, kwargs) -> bool:
        """Whether the call can run on the table: its row is there and the index points at it once this
        returns True."""
        timestep, pooled = kwargs.get("timestep"), kwargs.get("pooled_projections")
        hidden = kwargs.get("hidden_states")
        if timestep is None or pooled is None or hidden is None or timestep.numel() != 1 or pooled.shape[0] != 1:
            return False
        guidance = kwargs.get("guidance")
        if self.plan is None or self.plan[0] is not pooled or self.plan[1] is not guidance:
            self.plan = None
            keys = self._planned_keys(timestep)
            if keys is not None:
                self.plan = (pooled, guidance)
            self._fill(timestep.reshape(1) if keys is None else keys, guidance, pooled)
        self.index.copy_((self.keys == timestep.reshape(())).int().argmax().reshape(1))  # on the device: no read-back
        return True

    @property
    def index(self):
        return self.module._aitk_index

    def _planned_keys(self, timestep):
        """The scheduler's timesteps as this call's ``timestep`` reached the transformer (FluxPipeline: the
        scheduler's ``t`` in the latents' dtype, over 1000), or None when there is no plan to make."""
        timesteps = getattr(self.scheduler, "timesteps", None)
        if timesteps is None or not 0 < len(timesteps) <= CAPACITY:
            return None
        keys = timesteps.to(timestep.device).to(timestep.dtype) / 1000
        if not bool((keys == timestep.reshape(())).any()):  # one read-back a request: the plan's own check
            return None
        return keys

    def _fill(self, keys, guidance, pooled) -> None:
        """The rows for ``keys``, through FluxTransformer2DModel.forward's own scaling of the timestep and the
        guidance, in eager code: each row is what that step's eager forward projects."""
        from torch.nn.functional import silu

        embed, dtype = self.module.time_text_embed, self.norms[0].linear.weight.dtype
        count = len(keys)
        scaled, pooled = keys.to(dtype) * 1000, pooled.expand(count, -1)
        if guidance is None:
            temb = embed(scaled, pooled)
        else:
            temb = embed(scaled, (guidance.to(dtype) * 1000).reshape(1).expand(count), pooled)
        activated = silu(temb).to(dtype)  # every norm's ``silu`` is ``nn.SiLU``
        for norm in self.norms:
            norm._aitk_rows[:count] = norm.linear(activated)
        self.keys = keys
        self.builds += 1

    @contextlib.contextmanager
    def turned_on(self):
        self.on = True
        try:
            yield
        finally:
            self.on = False


def _norms(module) -> list:
    found = [sub for sub in module.modules() if type(sub).__name__ in NORM_FORWARDS]
    return [norm for norm in found if getattr(norm, "emb", None) is None]  # a norm embedding its own timestep: none


def install(module) -> ModulationTable:
    """The table for a resident Flux.1 transformer about to be compiled (its rows on its device)."""
    table = getattr(module, "_aitk_modulation", None)
    if table is None:
        table = module._aitk_modulation = ModulationTable(module)
    table.bind()
    return table


def untabled_forward(self, *args, **kwargs):
    """The transformer's own forward with the table off: what a call runs that the whole graph could not take
    (past dynamo's recompile limit, or once compiling it failed), so the blocks' compiled code is the one traced
    with the table off."""
    table = self._aitk_modulation
    on, table.on = table.on, False
    try:
        return type(self).forward(self, *args, **kwargs)
    finally:
        table.on = on


@contextlib.contextmanager
def follow_schedule(pipeline):
    """A request's scheduler, for the plan its first call makes; the plan ends with the request (a prompt cache
    hands the next request the same pooled prompt, under another schedule)."""
    table = getattr(getattr(pipeline, "transformer", None), "_aitk_modulation", None)
    if table is None:
        yield
        return
    table.scheduler, table.plan = pipeline.scheduler, None
    try:
        yield
    finally:
        table.scheduler, table.plan = None, None


# The norms' forwards of diffusers 0.42.1 (models/normalization.py) for an ``emb`` given, with the projection read
# from the norm's row while the table is on; off, the class's own.
def _modulation(self):
    """The row ``prepare`` pointed the index at, a batch of one (``index_select``: compiled code takes the index
    as a tensor, not a number)."""
    return self._aitk_rows.index_select(0, self._aitk_table.index)


def zero_forward(self, x, timestep=None, class_labels=None, hidden_dtype=None, emb=None):
    if not self._aitk_table.on:
        return type(self).forward(self, x, timestep, class_labels, hidden_dtype, emb)
    shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = _modulation(self).chunk(6, dim=1)
    x = self.norm(x) * (1 + scale_msa[:, None]) + shift_msa[:, None]
    return x, gate_msa, shift_mlp, scale_mlp, gate_mlp


def zero_single_forward(self, x, emb=None):
    if not self._aitk_table.on:
        return type(self).forward(self, x, emb)
    shift_msa, scale_msa, gate_msa = _modulation(self).chunk(3, dim=1)
    x = self.norm(x) * (1 + scale_msa[:, None]) + shift_msa[:, None]
    return x, gate_msa


def continuous_forward(self, x, conditioning_embedding):
    if not self._aitk_table.on:
        return type(self).forward(self, x, conditioning_embedding)
    scale, shift = _modulation(self).chunk(2, dim=1)
    return self.norm(x) * (1 + scale)[:, None, :] + shift[:, None, :]


NORM_FORWARDS = {
    "AdaLayerNormZero": zero_forward,
    "AdaLayerNormZeroSingle": zero_single_forward,
    "AdaLayerNormContinuous": continuous_forward,
}
