"""``engine.compile``: which denoisers are compiled, how, once, and never a streamed one. torch.compile's
own work is replaced by a recorder (inductor on this CPU would take minutes, and its speed is the GPU bench's
question: docs/BENCHMARKS.md); what is tested here is the plumbing from the setting to the modules."""

import os

import pytest
import torch

from testing.engine_harness import EngineHarness
from testing.stream_contract import body_for
from toolkit.models import compile as compile_module
from toolkit.models.compile import compile_denoiser, resolve_mode


@pytest.fixture()
def compiled_calls(monkeypatch):
    """Every ``nn.Module.compile`` call, by module class and torch.compile arguments, instead of compiling."""
    calls = []
    monkeypatch.setattr(torch.nn.Module, "compile", lambda self, **kw: calls.append((type(self).__name__, kw)))

    def blocks(fn, **kw):  # a block class's forward (regional compile): recorded by that class
        calls.append((fn.__qualname__.split(".")[0], kw))
        return fn

    monkeypatch.setattr(compile_module, "torch_compile", blocks)
    return calls


def test_auto_is_off_without_cuda_and_a_bad_setting_names_itself():
    assert resolve_mode("auto", "cpu") == "off" and resolve_mode("auto", "cuda") == "auto"
    assert resolve_mode("max", "cpu") == "max"
    with pytest.raises(ValueError, match="engine.compile must be one of off, auto, max"):
        resolve_mode("fast", "cuda")


def test_a_resident_flux_compiles_whole_and_its_blocks_once_and_is_reused_by_later_requests(
    tmp_path, tiny_cache, compiled_calls
):
    h = EngineHarness(tmp_path, compile="max")  # as on a GPU: "auto" is off on this CPU
    try:
        frames = [f.header for f in h.client.generate(body_for("flux", steps=2, seed=1))]
        assert frames[-1]["ok"] is True
        # the transformer only: its blocks (the single ones through their epilogue forward,
        # toolkit/models/epilogues.py) for requests with a step cache, and the whole forward with CUDA graphs
        assert compiled_calls == [
            ("FluxTransformerBlock", {"fullgraph": True}),
            ("flux_single_block_forward", {"fullgraph": True}),
            ("FluxTransformer2DModel", {"fullgraph": True, "mode": "reduce-overhead", "dynamic": False}),
        ]
        assert any("transformer compiled (whole)" in f.get("message", "") for f in frames)
        assert h.client.health()["compile"] | {"graphs": 0, "seconds": 0, "phases": {}, "attention": None} == {
            "mode": "max",
            "compiled": {"transformer": "whole"},
            "graphs": 0,
            "cuda_graphs": 0,  # none on a CPU
            "seconds": 0,
            "phases": {},
            "failed": {},
            "attention": None,
        }
        first = len(compiled_calls)
        assert h.client.generate_wait(body_for("flux", steps=2, seed=2))["http_status"] == 200
        assert len(compiled_calls) == first  # the resident holder's compiled blocks serve the next request
    finally:
        h.close()


@pytest.mark.parametrize("mode", ["max", "off"])
def test_the_default_model_compiles_at_start_up_at_its_native_size(
    mode, tmp_path, tiny_cache, compiled_calls, monkeypatch
):
    """Compile work for the default model happens before a user waits (issue #14): a throwaway generation at its
    native size when something was compiled, none when nothing was; nothing is saved either way."""
    from toolkit.models.base_model import BaseModel

    generated = []
    original = BaseModel.generate_media

    def recorded(self, gen, pipeline=None):
        generated.append((gen.width, gen.height, gen.num_inference_steps))
        return original(self, gen, pipeline)

    monkeypatch.setattr(BaseModel, "generate_media", recorded)
    h = EngineHarness(tmp_path, compile=mode)
    try:
        h.engine.run_on_main(lambda: h.engine.load_default({"arch": "flux", "name_or_path": "tiny:flux"}), 600)
        if mode == "off":
            assert generated == [] and compiled_calls == []
        else:
            assert generated == [(1024, 1024, 2)] and compiled_calls  # Flux's native size
        folder = h.engine.output_folder
        assert not os.path.isdir(folder) or os.listdir(folder) == []
    finally:
        h.close()


def test_off_compiles_nothing(tmp_path, tiny_cache, compiled_calls):
    h = EngineHarness(tmp_path, compile="off")
    try:
        assert h.client.generate_wait(body_for("flux", steps=2, seed=1))["http_status"] == 200
        assert compiled_calls == [] and h.client.health()["compile"] | {
            "graphs": 0,
            "seconds": 0,
            "phases": {},
            "attention": None,
        } == {
            "mode": "off",
            "compiled": {},
            "graphs": 0,
            "cuda_graphs": 0,
            "seconds": 0,
            "phases": {},
            "failed": {},
            "attention": None,
        }
    finally:
        h.close()


def test_health_counts_compiled_graphs_so_a_recompile_shows(tmp_path, tiny_cache, monkeypatch):
    """Real dynamo tracing (its ``eager`` backend: no inductor on this CPU) of tiny Flux's blocks: a second
    request at the same size adds no graph, a new size does. The GPU suite reads the same count."""
    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: torch.compile(fn, backend="eager", **kw))
    h = EngineHarness(tmp_path, compile="max")
    try:

        def graphs():
            return h.client.health()["compile"]["graphs"]

        def seconds():
            return h.client.health()["compile"]["seconds"]

        before, spent = graphs(), seconds()
        assert h.client.generate_wait(body_for("flux", steps=2, seed=1))["http_status"] == 200
        first, compiling = graphs(), seconds()
        assert first > before and compiling > spent  # dynamo's own timer of the compile just done
        phases = h.client.health()["compile"]["phases"]
        assert phases["total"] == compiling and 0 < phases["tracing"] < compiling  # where a restart's time goes
        assert h.client.generate_wait(body_for("flux", steps=2, seed=2))["http_status"] == 200
        assert graphs() == first and seconds() == compiling  # same size: nothing recompiled
        bigger = body_for("flux", steps=2, seed=3)
        bigger["sample"].update(width=96, height=96)
        assert h.client.generate_wait(bigger)["http_status"] == 200
        assert graphs() > first
    finally:
        h.close()


class UNet2DConditionModel(torch.nn.Module):
    """A stand-in with the class name the rule reads: UNets are launch-bound, so ``max`` graphs them whole."""

    _repeated_blocks = ["Linear"]

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(2, 2)


@pytest.mark.parametrize(
    "mode,placement,expected",
    [
        ("auto", None, "regional"),
        ("max", "gpu", "whole"),
        ("max", "quantized", "whole"),
        ("auto", "stream", "regional"),  # per-block hooks re-point the weights outside the compiled forward
        ("max", "stream", "regional"),
        ("auto", "visit", "regional"),  # block graphs take the weights as inputs, wherever they are
        ("max", "visit", "regional"),  # not CUDA graphs: they replay the addresses they recorded
        ("auto", "quantized_visit", "regional"),  # 8-bit parameters rebuilt on every move: guards see no change
        ("max", "quantized_stream", "regional"),
        ("off", "gpu", None),
    ],
)
def test_only_a_resident_denoiser_is_cuda_graphed(mode, placement, expected, compiled_calls):
    unet = UNet2DConditionModel()
    assert compile_denoiser(unet, mode, placement) == expected
    assert compile_denoiser(unet, mode, placement) == expected  # a pool hit: compiled once
    assert len(compiled_calls) == (1 if expected else 0)
    if expected == "whole":
        assert compiled_calls == [("UNet2DConditionModel", {"mode": "reduce-overhead", "dynamic": False})]


def test_the_graph_count_reads_a_half_imported_dynamo_as_none_yet(monkeypatch):
    """/health runs on the server thread while the main thread may be importing dynamo (a model loading): the
    module is in sys.modules before its ``counters`` exist, and /health answered 500 during start-up."""
    import sys
    import types

    from toolkit.models.compile import graphs_compiled

    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", types.ModuleType("torch._dynamo.utils"))
    assert graphs_compiled() == 0


def test_the_engines_cache_folder_wins_over_the_default_torch_writes_on_import(tmp_path, monkeypatch):
    """Importing diffusers sets TORCHINDUCTOR_CACHE_DIR to torch's /tmp default; a ``setdefault`` then kept it and
    the engine's folder stayed empty, so a restart recompiled everything (the H200 restart run)."""
    import diffusers  # noqa: F401  (what writes torch's default into the variable)
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    from toolkit.models.compile import use_cache_dir

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())
    use_cache_dir(str(tmp_path / "engine_default"))
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "engine_default")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "users"))  # exported by the user: kept
    use_cache_dir(str(tmp_path / "engine_default"))
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "users")
    use_cache_dir(str(tmp_path / "configured"), explicit=True)  # engine.compile_cache_dir: wins
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "configured")
    assert (tmp_path / "configured").is_dir()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x).relu()


class TwoBlocks(torch.nn.Module):
    _repeated_blocks = ["Block"]

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def test_a_block_class_compiles_once_for_every_block_and_every_later_model(compiled_calls):
    """torch.compile costs milliseconds a call: an SDXL UNet swapped in (70 blocks) paid it 70 times
    (docs/BENCHMARKS.md, the pool under compile). One compiled function per class, bound to each block."""
    first, second = TwoBlocks(), TwoBlocks()
    assert compile_denoiser(first, "auto") == compile_denoiser(second, "auto") == "regional"
    assert compiled_calls == [("Block", {"fullgraph": True})]
    for model in (first, second):
        assert all(block.forward.__self__ is block for block in model.blocks)


def test_blocks_sharing_a_compiled_forward_each_run_their_own_weights(monkeypatch):
    """Real dynamo tracing (``eager`` backend): two models of one class through one compiled function give each
    its own eager output, and the second model adds no graph."""
    from torch._dynamo.utils import counters

    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: torch.compile(fn, backend="eager", **kw))
    torch._dynamo.reset()
    first, second, x = TwoBlocks(), TwoBlocks(), torch.randn(3, 4)
    expected = [first(x), second(x)]
    compile_denoiser(first, "auto")
    compile_denoiser(second, "auto")
    with torch.no_grad():
        assert torch.allclose(first(x), expected[0]) and not torch.allclose(expected[0], expected[1])
        graphs = counters["stats"]["unique_graphs"]
        assert torch.allclose(second(x), expected[1])
    assert counters["stats"]["unique_graphs"] == graphs


class AutocastBlock(torch.nn.Module):
    """As Z-Image's attention: a region under ``autocast(enabled=False)`` inside the compiled code."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        with torch.amp.autocast("cuda", enabled=False):
            x = x.float() * 2
        return self.proj(x)


class AutocastNet(torch.nn.Module):
    _repeated_blocks = ["AutocastBlock"]

    def __init__(self):
        super().__init__()
        self.block = AutocastBlock()

    def forward(self, x):
        return self.block(x)


def test_a_graph_with_an_autocast_region_is_kept_by_the_autograd_cache(tmp_path, monkeypatch):
    """Real inductor on this CPU, a tiny graph: AOTAutograd's cache refused Z-Image's graphs (an ``autocast``
    region in its RoPE), so a restarted engine redid that work for them every time."""
    from torch._dynamo.utils import counters

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compile_module, "_COMPILED_FORWARDS", {})
    torch._dynamo.reset()
    counters.clear()
    net, x = AutocastNet(), torch.randn(2, 4)
    expected = net(x)
    assert compile_denoiser(net, "auto") == "regional"
    with torch.no_grad():
        assert torch.allclose(net(x), expected)
    assert counters["aot_autograd"]["autograd_cache_bypass"] == 0
    assert counters["aot_autograd"]["autograd_cache_saved"] == 1


def test_a_visiting_denoisers_compiled_blocks_compute_with_the_weights_it_holds_now(monkeypatch):
    """A memory plan's visiting denoiser (Flux.1-dev on a 24 GiB card) has its tensors re-pointed at host copies
    after each use and at fresh device copies before the next. Its compiled blocks (AOTAutograd lifting the
    weights to graph inputs, as inductor does) must compute with the copies it holds now, not ones a graph kept,
    and a move must add no graph."""
    from torch._dynamo.utils import counters

    from toolkit.models.offload import move_to_device, move_to_host

    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: torch.compile(fn, backend="aot_eager", **kw))
    torch._dynamo.reset()
    model, x = TwoBlocks(), torch.randn(3, 4)
    assert compile_denoiser(model, "auto", "visit") == "regional"

    def eager(model, x):  # the blocks' own class forward, never the compiled one bound on the instance
        for block in model.blocks:
            x = Block.forward(block, x)
        return x

    with torch.no_grad():
        first = model(x)
        assert torch.allclose(first, eager(model, x))
        graphs = counters["stats"]["unique_graphs"]
        for scale in (2.0, -1.0):
            move_to_host(model)
            for copy in model._aitk_host_copies.values():  # new weights, only in the host copies
                copy.mul_(scale)
            move_to_device(model, "cpu")
            out = model(x)
            assert torch.allclose(out, eager(model, x)) and not torch.allclose(out, first)
        assert counters["stats"]["unique_graphs"] == graphs


def test_a_streamed_denoisers_compiled_blocks_compute_with_the_blocks_as_they_arrive(monkeypatch):
    """A bf16 denoiser the plan streams (toolkit/models/streaming.py): each block's tensors are re-pointed at a
    device copy in its pre-forward hook and back at the host copy after it, outside the compiled ``forward``;
    with part of the model kept on the device, the rest streaming. The compiled blocks must compute what eager
    blocks compute with the weights as they arrive, and neither streaming nor a change of what is kept may add
    a graph."""
    from torch._dynamo.utils import counters

    from toolkit.models.offload import PINNED_ATTR
    from toolkit.models.streaming import BlockStream

    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: torch.compile(fn, backend="aot_eager", **kw))
    torch._dynamo.reset()
    model, x = TwoBlocks(), torch.randn(3, 4)
    stream = BlockStream(model, "cpu", rest_stays=True)
    assert compile_denoiser(model, "auto", "stream") == "regional"

    def eager(x):  # the class forward with each block's host copies, never the compiled one bound on the instance
        for block in model.blocks:
            weights = getattr(block, PINNED_ATTR)
            x = torch.nn.functional.linear(x, weights["proj.weight"], weights["proj.bias"]).relu()
        return x

    with torch.no_grad():
        first = model(x)
        assert torch.allclose(first, eager(x))
        graphs = counters["stats"]["unique_graphs"]
        for budget, scale in ((0, 2.0), (stream.sizes[0], -1.0), (sum(stream.sizes), 0.5)):
            stream.keep(0)  # back on the host copies, where the new weights go
            for block in model.blocks:
                for copy in getattr(block, PINNED_ATTR).values():
                    copy.mul_(scale)
            stream.keep(budget)  # none, one or both blocks kept; the rest stream
            out = model(x)
            assert torch.allclose(out, eager(x)) and not torch.allclose(out, first)
        assert counters["stats"]["unique_graphs"] == graphs


def test_an_8_bit_denoisers_compiled_blocks_take_the_parameters_rebuilt_as_they_stream(monkeypatch):
    """An 8-bit denoiser that streams (FLUX.2-dev's on 24 GiB) or visits has its torchao parameters rebuilt on
    each move, not re-pointed (``.data`` cannot cross devices). Its compiled blocks must compute with the new
    parameter objects, and rebuilding them must add no graph: dynamo guards on what a parameter is, not which."""
    pytest.importorskip("torchao")
    from torch._dynamo.utils import counters
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    from toolkit.models.offload import PINNED_ATTR
    from toolkit.models.streaming import BlockStream

    def int8(model):
        model = model.to(torch.bfloat16)
        quantize_(model, Int8WeightOnlyConfig())
        return model

    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: torch.compile(fn, backend="aot_eager", **kw))
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, other, x = int8(TwoBlocks()), int8(TwoBlocks()), torch.randn(3, 4, dtype=torch.bfloat16)
    with torch.no_grad():
        expected, expected_other = model(x), other(x)
        BlockStream(model, "cpu", rest_stays=True)
        assert compile_denoiser(model, "auto", "quantized_stream") == "regional"
        assert torch.allclose(model(x), expected)
        graphs = counters["stats"]["unique_graphs"]
        for block, source in zip(model.blocks, other.blocks):  # other weights, only in the host copies
            getattr(block, PINNED_ATTR).update(source.state_dict())
        out = model(x)
    assert torch.allclose(out, expected_other) and not torch.allclose(out, expected)
    assert counters["stats"]["unique_graphs"] == graphs


@pytest.mark.parametrize("mode,warms", [("max", True), ("off", False)])
def test_the_start_up_warm_up_pays_the_compilers_first_use_costs_when_it_will_compile(
    mode, warms, tmp_path, monkeypatch
):
    calls = []
    monkeypatch.setattr(compile_module, "warm_up_compiler", lambda: calls.append(mode))
    h = EngineHarness(tmp_path, compile=mode)
    try:
        h.engine.warm_up()
        assert calls == ([mode] if warms else [])
    finally:
        h.close()


def test_warming_the_compiler_up_imports_inductor_before_any_compile():
    """In a fresh process (this one has imported everything): after the warm-up, a first compile finds inductor
    imported and torch's source hash made (3.0 s of tiny Z-Image's compile after a restart, on this CPU)."""
    import subprocess
    import sys

    code = (
        "import sys, torch, diffusers\n"
        "from toolkit.models.compile import warm_up_compiler\n"
        "assert 'torch._inductor.compile_fx' not in sys.modules\n"
        "warm_up_compiler()\n"
        "assert 'torch._inductor.compile_fx' in sys.modules\n"
        "from torch._inductor.codecache import torch_key\n"
        "try:\n"
        "    torch_key.set(b'')\n"  # refused once the hash is made
        "except RuntimeError:\n"
        "    sys.exit(0)\n"
        "sys.exit('torch_key was not computed')\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_under_a_plan_a_visiting_transformer_compiles_and_draws_what_eager_draws(tmp_path, tiny_cache, monkeypatch):
    """The engine path of Flux.1-dev on a 24 GiB card: the plan lets the transformer visit, ``max`` compiles it
    regionally (not CUDA graphs), and the image is the eager one (AOTAutograd lifting the weights as inductor
    does; on this CPU the visits are pointer swaps through the same hooks)."""
    import dataclasses

    import numpy as np
    from PIL import Image

    from extensions_built_in.inference_engine import request_memory
    from toolkit.memory_plan import GIB

    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: torch.compile(fn, backend="aot_eager", **kw))
    monkeypatch.setattr(request_memory, "plannable_bytes", lambda device, own: 64 * GIB)
    planned = request_memory.RequestMemory._plan

    def transformer_visits(self, *args):
        plan = planned(self, *args)
        return dataclasses.replace(plan, placements={**plan.placements, "transformer": "visit"})

    monkeypatch.setattr(request_memory.RequestMemory, "_plan", transformer_visits)
    images, compiled = {}, {}
    for mode in ("off", "max"):
        h = EngineHarness(tmp_path / mode, compile=mode)
        h.engine.memory.active = True  # planned as on a GPU
        try:
            out = h.client.generate_wait(body_for("flux", steps=2, seed=3))
            assert out["http_status"] == 200, out
            health = h.client.health()
            assert health["memory"]["plan"]["components"]["transformer"]["placement"] == "visit"
            images[mode] = np.asarray(Image.open(out["result"]["path"]), dtype=np.int16)
            compiled[mode] = health["compile"]["compiled"]
        finally:
            h.close()
    assert compiled == {"off": {}, "max": {"transformer": "regional"}}
    assert np.abs(images["off"] - images["max"]).max() <= 1


def test_a_block_that_cannot_compile_runs_eager_and_says_why(monkeypatch):
    """Real inductor with no working C++ compiler (as Triton without one on a GPU box): ``fullgraph`` compiles
    raise through ``suppress_errors``, and with ``auto`` the default every request would have failed."""
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(compile_module, "_COMPILED_FORWARDS", {})
    monkeypatch.setattr(compile_module, "COMPILE_FAILURES", {})
    torch._dynamo.reset()
    model, x = TwoBlocks(), torch.randn(3, 4)
    # A cached graph would need no compiler. The config's own patch, not monkeypatch: its undo hid the settings
    # from every later compile in the process ("torch._inductor.config.cpp.cxx does not exist").
    no_compiler = inductor_config.patch({"cpp.cxx": (None, "/nonexistent/g++"), "fx_graph_cache": False})
    with torch.no_grad(), no_compiler:
        expected = model(x)
        assert compile_denoiser(model, "auto") == "regional"
        assert torch.allclose(model(x), expected) and torch.allclose(model(x), expected)  # eager from then on
    failed = compile_module.compile_failures()  # what /health's compile.failed shows
    assert list(failed) == ["Block"] and "compiler" in failed["Block"].lower()


def test_loading_an_8_bit_model_leaves_inductors_settings_as_they_were(monkeypatch, tiny_cache):
    """torchao's configs default to switching on inductor's coordinate-descent tuning for the whole process,
    which made a float8 Qwen-Image-Edit's first compiled request tune its kernels for 342 s on the H200, and
    would slow every later compile in the engine, quantized or not."""
    import torch._inductor.config as inductor_config

    from toolkit.models.components.loading import load_component

    with inductor_config.patch(coordinate_descent_tuning=False, coordinate_descent_check_all_directions=False):
        unet = load_component(
            "diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bfloat16", device="cpu", qtype="int8"
        )
        assert any("Int8" in type(p).__name__ for p in unet.parameters())
        assert not inductor_config.coordinate_descent_tuning
        assert not inductor_config.coordinate_descent_check_all_directions


@pytest.mark.parametrize(
    "arch", ["sd3", "lumina2", "cogview4", "auraflow", "pixart_sigma", "hidream", "ace_step_15", "stable_audio"]
)
def test_a_denoiser_diffusers_names_no_blocks_for_compiles_the_blocks_named_for_it(
    arch, tmp_path, tiny_cache, monkeypatch
):
    """Eight denoiser classes have no ``_repeated_blocks`` in diffusers, and under ``auto`` they never compiled
    (HiDream at 24 GiB on the H200: ``compiled: {}``). The blocks named for them must exist and compile whole
    (``fullgraph``: a graph break is a failure, and the block would run eager), HiDream's expert routing too."""
    from torch._dynamo.utils import counters

    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: torch.compile(fn, backend="aot_eager", **kw))
    monkeypatch.setattr(compile_module, "_COMPILED_FORWARDS", {})
    monkeypatch.setattr(compile_module, "COMPILE_FAILURES", {})
    torch._dynamo.reset()
    graphs = counters["stats"]["unique_graphs"]
    h = EngineHarness(tmp_path, compile="max")
    try:
        out = h.client.generate_wait(body_for(arch, steps=2, seed=3))
        assert out["http_status"] == 200, out
        health = h.client.health()
    finally:
        h.close()
    assert health["compile"]["compiled"] == {"transformer": "regional"}
    assert health["compile"]["failed"] == {}
    assert counters["stats"]["unique_graphs"] > graphs
