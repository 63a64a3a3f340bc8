"""Compiling a resident denoiser once, so every later request at a size already seen runs the compiled code.

A script pays torch.compile's minutes on every run; a resident engine pays them once per (component, size) and
serves many requests. At 1024² (docs/BENCHMARKS.md "Compile tiers"), Flux.1-dev's step compiled with
``compile_repeated_blocks(fullgraph=True)`` takes 0.69x its eager time after a 23 s compile; the SDXL UNet with
``mode="reduce-overhead"`` (CUDA graphs: its step is launch-bound) 0.36x, after 118 s.

``engine.compile``:
- ``off``: eager.
- ``auto`` (the default; ``off`` without CUDA): regional compile of the denoiser's repeated blocks (``_compile_blocks``;
  every family's DiT and the UNets' transformer blocks, named by diffusers or by ``UNNAMED_BLOCKS``): short compiles; a
  second size recompiles once with dynamic shapes (torch.compile's automatic dynamic), and later sizes reuse that.
  Flux.1's blocks compile with the GEMM epilogues of toolkit/models/epilogues.py (3 % of its step: docs/BENCHMARKS.md
  "Compile tiers"), and a resident Flux.1 reads its adaLN modulations from a table computed once a request
  (toolkit/models/modulation.py, ``_compile_tabled_dit``).
- ``max``: UNets whole, with CUDA graphs (launch-bound steps), at a longer first compile; Flux.1's transformer
  whole with CUDA graphs too, on the same table, its blocks' compiled code kept for requests with a step cache;
  other DiTs as ``auto``.

How a denoiser compiles follows where the memory plan puts its weights. Resident ones (``gpu``, ``quantized``,
or no plan) compile as above. One whose weights move compiles regionally only: the block graphs take the
weights as inputs, so they compute with whatever the tensors hold when a block runs, while CUDA graphs would
replay the addresses they recorded. That covers a visiting denoiser (``visit``: its tensors re-pointed at host
copies after each use and at fresh GPU copies before the next), one streamed block by block (``stream``:
``toolkit/models/streaming.py`` moves each block in its forward hooks, which run outside the compiled
``forward``), and their 8-bit kinds, whose torchao parameters are rebuilt on each move rather than re-pointed:
dynamo guards on what a parameter is (type, device, shape), not on which object, so a rebuilt one adds no graph
(``testing/test_compile.py``). Compiled code lives on the module, so a pooled denoiser shared by two holders is
compiled once. Inductor's caches go to a folder the engine owns (``use_cache_dir``), so a restarted engine
reuses them.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Optional

COMPILE_MODES = ("off", "auto", "max")
WHOLE_PLACEMENTS = (None, "gpu", "quantized")  # None: no plan (the user's options, or CPU)
# DiTs that ``max`` compiles whole with CUDA graphs (resident, unquantized): Flux.1-dev's step 1.8 % under its regional
# compile (docs/MEASURED.md "Flux.1 compiled whole with CUDA graphs"). Every other DiT compiles under ``max`` as under
# ``auto`` until one is measured.
WHOLE_DITS = ("FluxTransformer2DModel",)


def resolve_mode(mode: str, device: str) -> str:
    """The mode this engine runs: ``auto`` is ``off`` without CUDA (inductor on CPU compiles for minutes and
    gains little for these models)."""
    if mode not in COMPILE_MODES:
        raise ValueError(f"engine.compile must be one of {', '.join(COMPILE_MODES)} (got {mode!r})")
    if mode == "auto" and not str(device).startswith("cuda"):
        return "off"
    return mode


def use_cache_dir(folder: str, explicit: bool = False) -> None:
    """Inductor's FX-graph, AOT-autograd and Triton caches in ``folder``, kept across restarts. An explicit
    ``engine.compile_cache_dir`` always wins; the default folder yields to a ``TORCHINDUCTOR_CACHE_DIR`` the user
    exported. torch writes its own default (a folder in /tmp) into that variable the first time anything asks,
    and importing diffusers does: a ``setdefault`` here kept /tmp and the engine's folder stayed empty (a restart
    recompiled as much as the first start: testing/test_compile.py::
    test_the_engines_cache_folder_wins_over_the_default_torch_writes_on_import). So torch's default counts as unset."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    current = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    users = current is not None and os.path.abspath(current) != os.path.abspath(default_cache_dir())
    if explicit or not users:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.abspath(folder)
    os.makedirs(os.environ["TORCHINDUCTOR_CACHE_DIR"], exist_ok=True)
    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
    os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "1")


def compile_denoiser(module, mode: str, placement: Optional[str] = None) -> Optional[str]:
    """Compile ``module`` in place for ``mode``; returns how it is compiled (``regional``, ``whole``) or None.
    A module compiled before (a pool hit) is left as it is."""
    count_cuda_graph_recordings()
    done = getattr(module, "_aitk_compiled", None)
    how = None if done else _how(module, mode, placement)
    if not how:
        return done
    if _tabled(module, placement):
        _compile_tabled_dit(module, whole=how == "whole")
    elif how == "whole":
        module.compile(mode="reduce-overhead", dynamic=False)
    else:
        _compile_blocks(module)
    # A block torch.compile cannot take runs eager instead of failing the request at its first step.
    import torch._dynamo

    torch._dynamo.config.suppress_errors = True
    cache_autocast_regions()
    module._aitk_compiled = how
    return how


AUTOCAST_FUNCTIONS = ("torch.amp.autocast_mode._enter_autocast", "torch.amp.autocast_mode._exit_autocast")


def warm_up_compiler() -> None:
    """The compiler's once-per-process costs, paid in the engine's start-up warm-up instead of inside the first
    request's compile: importing inductor (its lowerings and kernel templates) and hashing torch's own sources
    for its cache keys. On the build box's CPU they were 3.0 of tiny Z-Image's 6.7 s compile after a restart on
    a warm cache folder (the import 2.4 s, the hash 0.6 s): the whole backend share of a restart but the cache
    loads themselves."""
    import torch._inductor.compile_fx  # noqa: F401
    from torch._inductor.codecache import torch_key

    torch_key()


def cache_autocast_regions() -> None:
    """Let AOTAutograd's cache keep graphs with an ``autocast`` region in them. Z-Image's attention applies RoPE under
    ``torch.amp.autocast("cuda", enabled=False)``, and the cache refuses any graph calling a function it does not know:
    every restart redid AOTAutograd for all three Z-Image graphs (CPU, tiny Z-Image: restart compile 0.44 of the first
    start; real size: 0.41, against Flux's 0.23, docs/MEASURED.md "Compile time after a restart"). The two functions
    take only constants (device, dtype, enabled), which are part of the graph the cache key hashes, so a cached
    graph behaves as a fresh one; inductor's ``unsafe_marked_cacheable_functions`` is the switch torch offers for
    exactly this."""
    import torch
    import torch._inductor.config as config

    marked = getattr(config, "unsafe_marked_cacheable_functions", None)
    if isinstance(marked, dict):
        for name in AUTOCAST_FUNCTIONS:
            marked.setdefault(name, torch.__version__)


def _compile_blocks(module, epilogues: bool = True, **options) -> int:
    """diffusers' regional compile (``compile_repeated_blocks``: every block class named in ``_repeated_blocks``),
    but of each block's ``forward`` rather than the module's call: the per-step caches (MagCache, FirstBlockCache,
    cache-dit) hook a block by wrapping its ``forward`` in Python that decides whether to run it. Compiling the
    module's call traced those decisions into the graph, and fullgraph compiles refused them ("Skip calling
    ``torch.compiler.disable()``d function"); compiled below the hook, the decision stays eager and the block
    math compiled. One compiled function per block class, bound to each block: ``torch.compile`` costs
    milliseconds per call, and an SDXL UNet (70 blocks) swapped in paid it 70 times. Returns how many blocks
    were compiled. ``epilogues``: the GEMM epilogues of toolkit/models/epilogues.py in the compiled code of the
    blocks it has them for (Flux.1's); off only for the bench's comparison. ``options``: torch.compile's others
    (testing/bench/compile_bench.py's ``max_autotune``)."""
    names = set(block_names(module))
    blocks = [sub for sub in module.modules() if type(sub).__name__ in names]
    if epilogues:
        from toolkit.models.epilogues import use_gelu_epilogues

        use_gelu_epilogues(blocks)
    for block in blocks:
        block.forward = types.MethodType(_compiled_forward(type(block), epilogues, **options), block)
    return len(blocks)


# Denoisers whose diffusers class names no ``_repeated_blocks`` (diffusers 0.42.1): without these, eight of the families
# never compiled under ``auto`` (HiDream at 24 GiB: ``compiled: {}``, docs/MEASURED.md
# "Denoisers whose class names no repeated blocks"). HiDream's blocks route tokens to experts through ``.cpu()`` (no
# full graph), so its attention and expert feed-forwards compile instead, the routing between them eager.
UNNAMED_BLOCKS = {
    "SD3Transformer2DModel": ("JointTransformerBlock",),
    "Lumina2Transformer2DModel": ("Lumina2TransformerBlock",),
    "CogView4Transformer2DModel": ("CogView4TransformerBlock",),
    "AuraFlowTransformer2DModel": ("AuraFlowJointTransformerBlock", "AuraFlowSingleTransformerBlock"),
    "PixArtTransformer2DModel": ("BasicTransformerBlock",),
    "HiDreamImageTransformer2DModel": ("HiDreamAttention", "HiDreamImageFeedForwardSwiGLU"),
    "AceStepTransformer1DModel": ("AceStepTransformerBlock",),
    "StableAudioDiTModel": ("StableAudioDiTBlock",),
}


def block_names(module) -> tuple:
    """The block classes ``auto`` compiles in ``module``: diffusers' own list, else ours."""
    return tuple(getattr(module, "_repeated_blocks", None) or UNNAMED_BLOCKS.get(type(module).__name__, ()))


_COMPILED_FORWARDS: dict = {}


def _compiled_forward(cls, epilogues: bool, eager=None, **options):
    """A block class's ``forward`` compiled once per process (and per ``torch_compile``, which tests swap):
    dynamo guards on the block's type and shapes, not on which instance, so every block and every later model
    of that class shares the graphs. ``eager``: what a call runs that cannot be compiled (the class's own
    forward unless given)."""
    key = (cls, torch_compile, epilogues, eager, tuple(sorted(options.items())))
    if key not in _COMPILED_FORWARDS:
        from toolkit.models.epilogues import block_forward

        forward = block_forward(cls) if epilogues else cls.forward
        compiled = torch_compile(forward, fullgraph=True, **options)
        _COMPILED_FORWARDS[key] = _eager_if_it_fails(cls, compiled, eager or cls.forward)
    return _COMPILED_FORWARDS[key]


COMPILE_FAILURES: dict = {}  # block class name -> why it runs eager (``/health`` ``compile.failed``)


def _eager_if_it_fails(cls, compiled, eager):
    """The compiled forward, or the class's own once compiling it has failed. ``suppress_errors`` does not cover
    ``fullgraph`` compiles: without a working C compiler (Triton builds its launcher with one; inductor's CPU
    kernels are C++), every request would have failed instead of running eager. Only dynamo's and inductor's
    own errors fall back; an out-of-memory or a cancel raised while the block runs goes on up as it is. A call
    that would compile one graph more than dynamo's recompile limit (eight per function) runs eager that once:
    dynamo raises instead for ``fullgraph`` compiles, so a ninth size under ``max`` (a graph per size) failed
    its request, while the graphs already compiled keep serving their sizes."""
    from torch._dynamo.exc import FailOnRecompileLimitHit, TorchDynamoException

    why = None

    def forward(self, *args, **kwargs):
        nonlocal why
        if why is None:
            try:
                return compiled(self, *args, **kwargs)
            except FailOnRecompileLimitHit:
                _say_once(f"[engine] {cls.__name__}: dynamo's recompile limit reached, new shapes run eager")
            except TorchDynamoException as e:
                why = COMPILE_FAILURES[cls.__name__] = first_line(e)
                print(f"[engine] {cls.__name__} could not be compiled, it runs eager: {why}", flush=True)
        return eager(self, *args, **kwargs)

    return forward


_SAID: set = set()


def _say_once(line: str) -> None:
    if line not in _SAID:
        _SAID.add(line)
        print(line, flush=True)


def compile_failures() -> dict:
    """Block classes that run eager because compiling them failed, and why (``/health`` ``compile.failed``)."""
    return dict(COMPILE_FAILURES)


def first_line(error: Exception) -> str:
    """An error in one line for a status: its type and the first line of its message."""
    first = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {first[:300]}"


def torch_compile(fn, **kwargs):
    """``torch.compile``, in one place (CPU tests swap in dynamo's ``eager`` backend: inductor compiles for minutes
    on a CPU)."""
    import torch

    return torch.compile(fn, **kwargs)


def will_compile(module, mode: str, placement: Optional[str] = None) -> bool:
    """Whether ``compile_denoiser`` compiles ``module`` (or has): LoRAs load before the compile, and a denoiser
    about to be compiled takes them into hot-swappable slots (toolkit/models/lora_hotswap.py)."""
    return bool(getattr(module, "_aitk_compiled", None) or _how(module, mode, placement))


def _how(module, mode: str, placement: Optional[str]) -> Optional[str]:
    if mode == "off" or not hasattr(module, "compile"):
        return None
    if mode == "max" and placement in WHOLE_PLACEMENTS and _graphable(module, placement):
        return "whole"
    if block_names(module):
        return "regional"
    return None


def _graphable(module, placement: Optional[str]) -> bool:
    """Whether ``max`` compiles ``module`` whole with CUDA graphs: a UNet (launch-bound), or a DiT of
    ``WHOLE_DITS`` whose weights are plain floating-point tensors: the float8 and 8-bit ones were measured
    regionally only."""
    import torch

    name = type(module).__name__
    if "UNet" in name:
        return True
    if name not in WHOLE_DITS or placement == "quantized":
        return False
    return all(type(p.data) is torch.Tensor for p in module.parameters())


def _tabled(module, placement: Optional[str]) -> bool:
    """Whether the denoiser's adaLN modulations come from the table of toolkit/models/modulation.py: a resident
    DiT of ``WHOLE_DITS`` with plain weights, under ``auto`` and ``max`` alike (its rows stay where the weights
    are; a visiting or streamed denoiser moves its weights, and an 8-bit one was not measured)."""
    return placement in WHOLE_PLACEMENTS and type(module).__name__ in WHOLE_DITS and _graphable(module, placement)


def _compile_tabled_dit(module, whole: bool) -> None:
    """A resident DiT (``WHOLE_DITS``) compiled regionally, its adaLN modulations read from the table of
    toolkit/models/modulation.py (computed for all of a request's timesteps at once); a call the table cannot
    take (a batch of several) runs the blocks with the table off. ``whole`` (``max``): also compiled as one
    graph with CUDA graphs, which runs every request without a step cache and traces the blocks' compiled
    forwards as its own code (with Flux.1's GEMM epilogues); a request with a step cache runs the regional code,
    so the cache's hooks decide per block (a graph cannot skip blocks). Sizes compile whole once each
    (``dynamic=False``, as the UNets): past dynamo's recompile limit (eight) a new size runs the regional
    compile. The whole graph's output is copied out of the CUDA graph's memory, which the next replay
    overwrites: diffusers' FluxPipeline with true CFG (a negative prompt and ``true_cfg_scale``, which this
    project's Flux does not pass today) reads the first call's output after the second; the copy is 0.5 MB at
    1024²."""
    from toolkit.models.modulation import install, untabled_forward

    _compile_blocks(module)
    table = install(module)
    regional = type(module).forward
    graph = None
    if whole:
        graph = _compiled_forward(type(module), True, untabled_forward, mode="reduce-overhead", dynamic=False)

    def forward(self, *args, **kwargs):
        if args or not table.prepare(kwargs):
            return regional(self, *args, **kwargs)
        with table.turned_on():
            if graph is None or getattr(self, "is_cache_enabled", False):
                return regional(self, **kwargs)
            return _copied(graph(self, **kwargs))

    module.forward = types.MethodType(forward, module)


def _copied(output):
    import torch

    return torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.clone, output)


_RECORDINGS = {"cuda_graphs": 0}


def _count_recording(args) -> None:
    from torch._dynamo.callback import CallbackTrigger

    if args.callback_trigger == CallbackTrigger.CUDAGRAPH_RECORDING:
        _RECORDINGS["cuda_graphs"] += 1


def count_cuda_graph_recordings() -> None:
    """Count CUDA graph recordings (torch's compile-callback handler announces each one) from now on; called before
    every compile, since ``torch._dynamo.reset()`` drops the handler's callbacks (the test suite and compile_bench.py
    reset dynamo between runs). Why: CUDA graphs once recorded the whole Flux transformer again, request after request
    (docs/MEASURED.md "CUDA graphs re-recorded on a moving index"), and nothing reported it: dynamo's graph count stayed
    put, since a recording is not a compile. ``/health`` ``compile.cuda_graphs`` moving between two requests at one size
    is that bug's signature, as ``graphs`` moving is a recompile's."""
    try:
        from torch._dynamo.callback import CallbackTrigger, callback_handler  # noqa: F401 (the trigger: torch has it)
    except ImportError:  # a torch without the trigger: the count stays at 0
        return
    if _count_recording not in callback_handler.start_callbacks:
        callback_handler.register_start_callback(_count_recording)


def cuda_graphs_recorded() -> int:
    """CUDA graphs recorded since ``count_cuda_graph_recordings`` (read without torch, as ``graphs_compiled``)."""
    return _RECORDINGS["cuda_graphs"]


def graphs_compiled() -> int:
    """Graphs torch.compile has built in this process (dynamo's own counter). The same number before and after a
    request means it recompiled nothing: the check for "a second request at the same size compiles nothing".
    Read without importing torch (``/health`` runs on the server thread)."""
    # The main thread may be importing it right now (loading a model imports dynamo): a half-initialised module
    # has no ``counters`` yet, and /health answered 500 during start-up.
    counters = getattr(sys.modules.get("torch._dynamo.utils"), "counters", None)
    return int(counters["stats"]["unique_graphs"]) if counters is not None else 0


COMPILE_PHASES = {  # ours: dynamo's timer names (torch._dynamo.utils.compilation_time_metrics)
    "total": "_compile.compile_inner",
    "tracing": "bytecode_tracing",
    "guards": "build_guards",
    "backend": "OutputGraph.call_user_compiler",
    "aot_autograd": "create_aot_dispatcher_function",
    "inductor": "fx_codegen_and_compile",
    "kernels": "async_compile.wait",
}


def compile_phases() -> dict:
    """Seconds torch.compile has spent in this process, by dynamo's own timers summed over every graph. ``total`` (the
    timer around each whole compile) is what a first request at a new size paid, and what a restart on a warm cache
    folder still pays. Of it, tracing and guards are redone after each restart (torch caches neither), while the
    backend's share (AOTAutograd, inductor, Triton kernels) shrinks to cache loads when the folder hits: a Z-Image
    restart kept 0.35 of its first compile (docs/MEASURED.md "Compile time after a restart"), and nothing said which
    part. Read without importing torch, as ``graphs_compiled``."""
    metrics = getattr(sys.modules.get("torch._dynamo.utils"), "compilation_time_metrics", None)
    if metrics is None:
        return {}
    return {ours: round(sum(metrics.get(name, ())), 3) for ours, name in COMPILE_PHASES.items()}
