"""``engine.compile: max`` on a resident Flux.1 (toolkit/models/compile.py ``WHOLE_DITS``): the transformer as
one graph (with CUDA graphs on a GPU) for lossless requests, its blocks' compiled code under a step cache, which a
graph could not skip blocks in. Real dynamo tracing with a backend that counts each graph's runs (no inductor and
no CUDA graphs on this CPU: what they buy is the GPU bench's question, testing/bench/compile_bench.py
``--variants auto,max``)."""

import collections
import types

import numpy as np
import pytest
import torch
from PIL import Image

from testing.engine_harness import EngineHarness
from testing.stream_contract import body_for
from testing.test_lora_hotswap import graphs
from toolkit.models import compile as compile_module
from toolkit.models.compile import compile_denoiser

WHOLE = "FluxTransformer2DModel.forward"
SINGLE_BLOCKS = "flux_single_block_forward"


@pytest.fixture()
def runs(monkeypatch):
    """How many times each compiled function's graphs ran, by the compiled function's name."""
    counts = collections.Counter()
    counts.compiled = collections.Counter()  # graphs compiled, by the same name

    def counting(fn, **kw):
        def backend(gm, example_inputs):
            counts.compiled[fn.__qualname__] += 1

            def run(*args):
                counts[fn.__qualname__] += 1
                return gm.forward(*args)

            return run

        return torch.compile(fn, backend=backend, **{k: v for k, v in kw.items() if k != "mode"})

    torch._dynamo.reset()
    monkeypatch.setattr(compile_module, "_COMPILED_FORWARDS", {})
    monkeypatch.setattr(compile_module, "COMPILE_FAILURES", {})
    monkeypatch.setattr(compile_module, "torch_compile", counting)
    return counts


@pytest.fixture()
def fills(monkeypatch):
    """How many timesteps each fill of a modulation table computed rows for (toolkit/models/modulation.py)."""
    from toolkit.models.modulation import ModulationTable

    counts, fill = [], ModulationTable._fill
    monkeypatch.setattr(
        ModulationTable, "_fill", lambda self, keys, *a: counts.append(len(keys)) or fill(self, keys, *a)
    )
    return counts


def image(h, body) -> np.ndarray:
    out = h.client.generate_wait(body)
    assert out["http_status"] == 200, out
    return np.asarray(Image.open(out["result"]["path"]), dtype=np.int16)


def test_lossless_requests_run_the_whole_graph_and_a_cached_one_runs_the_blocks(tmp_path, tiny_cache, runs, fills):
    from diffusers import FluxTransformer2DModel

    from toolkit.models.tiny import tiny_checkpoint

    singles = FluxTransformer2DModel.load_config(tiny_checkpoint("flux"), subfolder="transformer")["num_single_layers"]
    lossless_body, cached_body = body_for("flux", steps=20, seed=5), body_for("flux", steps=20, seed=5, speed="cache")
    h = EngineHarness(tmp_path / "max", compile="max")
    try:
        lossless = image(h, lossless_body)
        assert dict(runs) == {WHOLE: 20}  # one graph a step; no block compiled on its own
        assert fills == [20]  # the modulations of all 20 steps at once (toolkit/models/modulation.py)
        cached = image(h, cached_body)
        whole, blocks, compiled = runs[WHOLE], runs[SINGLE_BLOCKS], graphs(h)
        again = image(h, lossless_body)
        assert graphs(h) == compiled  # the cache's hooks came off: the whole graph again, not a recompile of it
    finally:
        h.close()
    assert whole == 20  # the cached request never entered the whole graph ...
    assert 0 < blocks < 20 * singles  # ... but the blocks' compiled forwards, where MagCache did not skip them
    assert runs[WHOLE] == 40 and runs[SINGLE_BLOCKS] == blocks
    assert fills == [20, 20, 20]  # the cached request's blocks read a table of their own request's too
    assert np.array_equal(again, lossless)
    h = EngineHarness(tmp_path / "off", compile="off")
    try:
        eager, eager_cached = image(h, lossless_body), image(h, cached_body)
    finally:
        h.close()
    # the epilogues' split GEMM rounds apart from eager's: within 2, as testing/test_lora_hotswap.py
    assert np.abs(lossless - eager).max() <= 2 and np.abs(cached - eager_cached).max() <= 2
    assert not np.array_equal(cached, lossless)


def test_only_a_resident_unquantized_flux_is_compiled_whole(tiny_cache, monkeypatch):
    from toolkit.models.components.loading import load_component

    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: fn)  # the rule, not the compile
    for placement, expected in (("gpu", "whole"), (None, "whole"), ("visit", "regional"), ("quantized", "regional")):
        flux = load_component("diffusers.FluxTransformer2DModel", "tiny:flux", "transformer", dtype="float32")
        assert compile_denoiser(flux, "max", placement) == expected, placement
        assert compile_denoiser(flux, "auto", placement) == expected  # a pool hit keeps how it was compiled
    eight_bit = load_component(
        "diffusers.FluxTransformer2DModel", "tiny:flux", "transformer", dtype="bfloat16", device="cpu", qtype="int8"
    )
    assert compile_denoiser(eight_bit, "max") == "regional"  # the user's own ``quantize``, no plan


def test_a_size_past_dynamos_recompile_limit_runs_the_blocks_and_the_compiled_sizes_keep_their_graph(runs):
    """Each size is a whole graph of its own (no dynamic shapes), and dynamo refuses a ``fullgraph`` compile past
    its recompile limit (eight) by raising: the engine's ninth size failed its request. Called here, not through
    testing/engine_harness.py: dynamo's settings are per thread, and a limit patched on this thread is not the
    one the harness's worker thread reads."""
    from testing.test_epilogues import flux_inputs, tiny_flux

    model = tiny_flux()
    small, big = flux_inputs(model), flux_inputs(model)
    big["hidden_states"] = torch.randn(1, 36, model.config.in_channels)
    rows = torch.stack(torch.meshgrid(torch.arange(6), torch.arange(6), indexing="ij"), -1).reshape(36, 2)
    big["img_ids"] = torch.cat([torch.zeros(36, 1), rows.float()], 1)
    # the config's own patch: monkeypatch's undo deleted the setting ("recompile_limit does not exist")
    with torch.inference_mode(), torch._dynamo.config.patch(recompile_limit=1):
        expected = model(**big)[0]
        assert compile_denoiser(model, "max") == "whole"
        model(**small)
        assert dict(runs) == {WHOLE: 1}
        assert torch.allclose(model(**big)[0], expected, atol=1e-5)  # one graph too many: the blocks' code
        assert runs[WHOLE] == 1 and runs[SINGLE_BLOCKS] > 0
        model(**small)
        assert runs[WHOLE] == 2  # the first size keeps its whole graph
    assert compile_module.compile_failures() == {}  # nothing failed for good


@pytest.mark.parametrize("mode", ["max", "auto"])
def test_the_whole_graph_in_bf16_computes_what_eager_does_to_a_rounding(mode, tmp_path, monkeypatch):
    """Real inductor on this CPU, bf16 weights, a request's four steps. The H100's Flux image under ``max`` was
    39.7 dB from eager's against ``auto``'s 48.2 (docs/BENCHMARKS.md, twenty-second run): one graph, inductor
    computed the timestep embedding and the 77 modulation projections in fp32 where eager rounds each op to bf16
    (on this model 0.077 from eager's output, 0.0094 from the float32 forward's). Read from the modulation table
    (toolkit/models/modulation.py), which eager code fills, the modulations are eager's again, and the whole
    graph is as close to eager as the regional compile (0.0117: one to two bf16 steps at these values). Each
    step finds its own row although inductor's ``timestep * 1000`` is not eager's: the row is picked outside
    the graph. ``auto``'s blocks, compiled by real inductor on the same table, too."""
    from testing.test_epilogues import flux_inputs, tiny_flux
    from testing.test_modulation import scheduler
    from toolkit.models.modulation import follow_schedule

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compile_module, "_COMPILED_FORWARDS", {})
    torch._dynamo.reset()
    model = tiny_flux().to(torch.bfloat16)
    call = {
        k: v.bfloat16() if k in ("hidden_states", "encoder_hidden_states", "pooled_projections") else v
        for k, v in flux_inputs(model).items()
    }
    s = scheduler(4)
    timesteps = [t.expand(1).to(torch.bfloat16) / 1000 for t in s.timesteps]
    with torch.inference_mode():
        eager = [model(**call | {"timestep": t})[0].float() for t in timesteps]
        assert compile_denoiser(model, mode) == {"max": "whole", "auto": "regional"}[mode]
        with follow_schedule(types.SimpleNamespace(transformer=model, scheduler=s)):
            whole = [model(**call | {"timestep": t})[0].float() for t in timesteps]
    assert model._aitk_modulation.builds == 1
    for a, b in zip(whole, eager):
        assert 0 < (a - b).abs().max() <= 2 / 128
    assert (eager[0] - eager[1]).abs().max() > 0.1  # a step given another's row would be far off


def test_kontext_runs_the_whole_graph_on_its_own_rows_and_draws_what_eager_draws(tmp_path, tiny_cache, runs, fills):
    """FLUX.1 Kontext is the same transformer under another pipeline (its reference image's tokens beside the
    latents'): compiled whole under ``max``, one table fill a request, the image eager's to a rounding."""
    from testing.stream_contract import upload_test_image

    images = {}
    for mode in ("max", "off"):
        h = EngineHarness(tmp_path / mode, compile=mode)
        try:
            body = body_for("flux_kontext", steps=6, seed=2)
            body["sample"]["ctrl_img"] = upload_test_image(h.client, seed=0)["id"]
            images[mode] = image(h, body)
            if mode == "max":
                assert h.client.health()["compile"]["compiled"] == {"transformer": "whole"}
        finally:
            h.close()
    assert runs[WHOLE] == 6 and fills == [6]
    assert np.abs(images["max"] - images["off"]).max() <= 2


def test_auto_reads_the_table_with_one_graph_per_block_class(runs):
    """``auto`` (the GPU's default) compiles a resident Flux.1's blocks, which read their modulations from the
    table as the whole graph does. Each norm's rows are a buffer of its own, an input of the compiled code like
    its weights: one graph per block class serves every block of it (a graph per block would have passed
    dynamo's recompile limit of eight at Flux.1-dev's 19 and 38 blocks), and each step still reads its own row."""
    from diffusers import FluxTransformer2DModel

    from testing.test_epilogues import flux_inputs, tiny_flux
    from testing.test_modulation import scheduler
    from toolkit.models.modulation import follow_schedule

    config = dict(tiny_flux().config) | {"num_layers": 3, "num_single_layers": 4}
    torch.manual_seed(0)
    model = FluxTransformer2DModel.from_config(config).eval()
    call, s = flux_inputs(model), scheduler(5)
    timesteps = [t.expand(1) / 1000 for t in s.timesteps]
    with torch.inference_mode():
        eager = [model(**call | {"timestep": t})[0] for t in timesteps]
        assert compile_denoiser(model, "auto") == "regional"
        with follow_schedule(types.SimpleNamespace(transformer=model, scheduler=s)):
            tabled = [model(**call | {"timestep": t})[0] for t in timesteps]
    assert model._aitk_modulation.builds == 1
    # Single blocks: two graphs, for four blocks. The first takes a contiguous sequence and the rest a view of the
    # joined one (dynamo guards on the stride), with or without the table.
    assert runs.compiled == {"FluxTransformerBlock.forward": 1, SINGLE_BLOCKS: 2}
    assert runs["FluxTransformerBlock.forward"] == 3 * 5 and runs[SINGLE_BLOCKS] == 4 * 5
    for a, b in zip(tabled, eager):  # the epilogues' split GEMM: a float32 rounding from eager
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    assert (eager[0] - eager[1]).abs().max() > 0.1  # a step given another's row would be far off


def test_auto_through_the_engine_plans_once_a_request_and_draws_what_eager_draws(tmp_path, tiny_cache, runs, fills):
    """``auto`` is ``off`` on a CPU engine; forced on here, a request plans its rows once, a second request
    compiles nothing, and the image is eager's to a rounding."""
    from extensions_built_in.inference_engine import denoiser_compile

    body, images = body_for("flux", steps=6, seed=5), {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(denoiser_compile, "resolve_mode", lambda mode, device: mode)
        h = EngineHarness(tmp_path / "auto", compile="auto")
        try:
            images["auto"] = image(h, body)
            assert h.client.health()["compile"]["compiled"] == {"transformer": "regional"}
            compiled = graphs(h)
            assert np.array_equal(image(h, body), images["auto"]) and graphs(h) == compiled
        finally:
            h.close()
    assert fills == [6, 6] and WHOLE not in runs
    h = EngineHarness(tmp_path / "off", compile="off")
    try:
        images["off"] = image(h, body)
    finally:
        h.close()
    assert np.abs(images["auto"] - images["off"]).max() <= 2


def test_cuda_graph_recordings_are_counted_for_health_and_compiles_are_not(monkeypatch):
    """``/health`` ``compile.cuda_graphs`` counts what torch's compile-callback handler announces as a CUDA graph
    recording (cudagraph_trees' ``record_function`` announces each so; no CUDA here, so the test announces one the
    same way), and not a dynamo compile: more recordings after a request at a size already seen is the bug the
    twenty-third run found (docs/BENCHMARKS.md), which ``graphs`` could not show."""
    from torch._dynamo.callback import CallbackTrigger, callback_handler

    from toolkit.models.compile import count_cuda_graph_recordings, cuda_graphs_recorded

    monkeypatch.setitem(compile_module._RECORDINGS, "cuda_graphs", 0)  # the process's count, back after the test
    torch._dynamo.reset()  # drops the handler's callbacks: the next compile_denoiser counts again
    count_cuda_graph_recordings()
    count_cuda_graph_recordings()  # a second call adds no second counter
    before = cuda_graphs_recorded()
    torch.compile(lambda x: x * 2 + 1, backend="eager")(torch.ones(3))
    with callback_handler.install_callbacks(CallbackTrigger.DYNAMO, "9/0"):
        pass
    assert cuda_graphs_recorded() == before
    with callback_handler.install_callbacks(CallbackTrigger.CUDAGRAPH_RECORDING, "9/1"):
        pass
    assert cuda_graphs_recorded() == before + 1
