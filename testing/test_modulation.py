"""The modulation table of toolkit/models/modulation.py: a resident Flux.1 transformer, compiled whole or
regionally, reads its adaLN modulations from rows computed once per request, and each step gets the row of its
own timestep. Run eager here (``torch_compile`` swapped for the function itself) so every projection call can be
counted; the compiled code's use of the table is testing/test_compile_whole.py's."""

import types

import pytest
import torch

from testing.test_epilogues import flux_inputs, tiny_flux
from toolkit.models import compile as compile_module
from toolkit.models.compile import compile_denoiser
from toolkit.models.modulation import follow_schedule


@pytest.fixture(params=["max", "auto"])
def model(request, monkeypatch):
    """A tiny Flux.1 compiled whole (``max``) or regionally (``auto``): both read the table."""
    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: fn)
    monkeypatch.setattr(compile_module, "_COMPILED_FORWARDS", {})
    model = tiny_flux()
    assert compile_denoiser(model, request.param) == {"max": "whole", "auto": "regional"}[request.param]
    return model


@pytest.fixture()
def projections(model):
    """Calls of every adaLN projection (``norm*.linear``) and the rows each computed."""
    calls = []
    for name, sub in model.named_modules():
        if name.endswith(".linear") and name.split(".")[-2].startswith("norm"):
            sub.register_forward_hook(lambda m, args, out: calls.append(out.shape[0]))
    return calls


def scheduler(steps=6):
    from diffusers import FlowMatchEulerDiscreteScheduler

    s = FlowMatchEulerDiscreteScheduler(shift=3.0)
    s.set_timesteps(steps)
    return s


def steps_of(model, timesteps, **changes):
    """The model's outputs for ``timesteps`` as FluxPipeline passes them (one pooled prompt and one guidance
    tensor for the whole loop, a new timestep tensor each step), beside the class's own forward's."""
    call = flux_inputs(model) | changes
    got, expected = [], []
    with torch.inference_mode():
        for t in timesteps:
            call["timestep"] = t.expand(call["hidden_states"].shape[0]).to(torch.float32) / 1000
            got.append(model(**call)[0])
            table, on = model._aitk_modulation, model._aitk_modulation.on
            expected.append(type(model).forward(model, **call)[0])
            assert not on and not table.on
    return got, expected


def test_a_request_projects_its_modulations_once_and_each_step_reads_its_own_row(model, projections):
    norms = len(model.transformer_blocks) * 2 + len(model.single_transformer_blocks) + 1
    s = scheduler()
    with follow_schedule(types.SimpleNamespace(transformer=model, scheduler=s)):
        got, expected = steps_of(model, s.timesteps)
    assert model._aitk_modulation.builds == 1
    assert projections[:norms] == [6] * norms  # all six timesteps in one product per projection ...
    assert projections[norms:] == [1] * norms * 6  # ... then only the reference forwards projected
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(got[0], got[1])  # each step its own row


def test_a_loop_starting_part_way_down_the_schedule_finds_its_rows_by_timestep(model):
    """An img2img request (``strength``) loops over the schedule's tail: rows are found by timestep value, not by
    the call's position."""
    s = scheduler(8)
    with follow_schedule(types.SimpleNamespace(transformer=model, scheduler=s)):
        got, expected = steps_of(model, s.timesteps[3:])
    assert model._aitk_modulation.builds == 1
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_calls_without_a_schedule_or_off_it_compute_their_own_row(model):
    """A script calling the transformer has no scheduler in hand, and a timestep that is not one of the
    scheduler's cannot use the plan: each such call computes its row alone (the cost of a step before)."""
    got, expected = steps_of(model, scheduler(4).timesteps)  # no schedule followed
    assert model._aitk_modulation.builds == 4
    s = scheduler(4)
    with follow_schedule(types.SimpleNamespace(transformer=model, scheduler=s)):
        more, more_expected = steps_of(model, torch.tensor([123.0, 456.0]))  # not the scheduler's
    assert model._aitk_modulation.builds == 6
    for a, b in zip(got + more, expected + more_expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_a_batch_of_two_runs_the_blocks_without_the_table(model):
    call = flux_inputs(model)
    two = {
        k: torch.cat([v, v.flip(-1)]) if k in ("hidden_states", "pooled_projections") else v for k, v in call.items()
    }
    two["encoder_hidden_states"] = call["encoder_hidden_states"].expand(2, -1, -1)
    two["timestep"], two["guidance"] = call["timestep"].expand(2), call["guidance"].expand(2)
    got, expected = steps_of(model, scheduler(2).timesteps, **two)
    assert model._aitk_modulation.builds == 0
    for a, b in zip(got, expected):
        assert torch.equal(a, b)


def test_the_next_request_plans_again_under_its_own_schedule(model):
    """The engine's prompt cache hands the next request the same pooled prompt object: the plan ends with each
    request, so a request of another step count is not served the last one's rows."""
    call = flux_inputs(model)
    for steps in (4, 7):
        s = scheduler(steps)
        with follow_schedule(types.SimpleNamespace(transformer=model, scheduler=s)):
            same = {k: call[k] for k in ("pooled_projections", "guidance")}  # the same objects
            got, expected = steps_of(model, s.timesteps, **same)
        for a, b in zip(got, expected):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert model._aitk_modulation.builds == 2


def test_compiled_again_after_its_forwards_were_dropped_it_reads_the_table_again(model, projections):
    """testing/bench/compile_bench.py drops every instance forward between its variants to start from eager; the
    next ``max`` binds the table's forwards again (without them the model computed every step's projections,
    correctly but at the old cost)."""
    for sub in model.modules():
        sub.__dict__.pop("forward", None)
    how, model._aitk_compiled = model._aitk_compiled, None
    assert compile_denoiser(model, "max" if how == "whole" else "auto") == how
    s = scheduler(5)
    with follow_schedule(types.SimpleNamespace(transformer=model, scheduler=s)):
        got, expected = steps_of(model, s.timesteps)
    norms = len(model.transformer_blocks) * 2 + len(model.single_transformer_blocks) + 1
    assert projections[:norms] == [5] * norms and projections[norms:] == [1] * norms * 5
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_the_row_index_is_one_tensor_at_one_address_across_steps_and_requests(model):
    """CUDA graphs take a tensor reached through the module as a static input and record the graph again when its
    address moves: a fresh index each call did that on the H100 whenever the allocator handed out a new address
    (docs/BENCHMARKS.md, twenty-third run). The index is a buffer of the transformer (it moves with it) written in
    place."""
    table = model._aitk_modulation
    index = dict(model.named_buffers())["_aitk_index"]
    address, seen = index.data_ptr(), []
    prepare = table.prepare
    table.prepare = lambda kwargs: (prepare(kwargs), seen.append((table.index.data_ptr(), int(table.index))))[0]
    for steps in (3, 5):
        s = scheduler(steps)
        with follow_schedule(types.SimpleNamespace(transformer=model, scheduler=s)):
            steps_of(model, s.timesteps)
    assert table.index is index and all(ptr == address for ptr, _ in seen)
    assert [row for _, row in seen] == [0, 1, 2, 0, 1, 2, 3, 4]  # each step its own row, written in place
