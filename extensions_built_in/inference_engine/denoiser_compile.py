"""``engine.compile`` for the resident holder's denoisers: the mode this engine runs, the folder inductor's caches
go to, which denoisers a new holder compiles and how, the start-up warm-up generation, and ``/health``'s
``compile``. How a module compiles (regional, whole, CUDA graphs) is toolkit/models/compile.py's; this module
decides when, for which holder, and says so in the status."""

from __future__ import annotations

import os
from typing import Callable, Optional

from toolkit.config_modules import GenerateImageConfig
from toolkit.models.compile import (
    compile_denoiser,
    compile_failures,
    compile_phases,
    cuda_graphs_recorded,
    graphs_compiled,
    resolve_mode,
    use_cache_dir,
    will_compile,
)
from toolkit.paths import TOOLKIT_ROOT

DEFAULT_CACHE_DIR = os.path.join(TOOLKIT_ROOT, ".cache", "torch_compile")


def cache_dir() -> str:
    """Where inductor's caches are (FA4's compiled kernels go beside them: toolkit/models/attention.py)."""
    return os.environ.get("TORCHINDUCTOR_CACHE_DIR") or DEFAULT_CACHE_DIR


class DenoiserCompile:
    def __init__(self, mode: str = "off", device: str = "cpu", cache_folder: Optional[str] = None):
        """``mode``: ``engine.compile``, resolved for ``device``; ``cache_folder``: ``engine.compile_cache_dir``."""
        self.mode = resolve_mode(mode, device)
        if self.mode != "off":
            use_cache_dir(cache_folder or DEFAULT_CACHE_DIR, explicit=cache_folder is not None)
        self.compiled: dict = {}  # role -> how, for the resident holder's denoisers

    def will_compile(self, plan) -> Callable:
        """The holder's ``will_compile(role, module)``: LoRAs load (in ``load_model``) before ``compile`` runs, and a
        denoiser that will compile takes them into slots that later LoRAs hot-swap into without recompiling
        (toolkit/models/lora_hotswap.py)."""
        return lambda role, module: will_compile(module, self.mode, _placement(plan, role))

    def compile(self, holder, plan) -> None:
        """The denoiser compiled in place; the work itself happens at its first forward, which the status says,
        since a first request at a new size then waits for it."""
        self.compiled = {}
        for role, comp in holder.components.items():
            module = holder.parts.get(role) if comp.source == "main" else None
            how = module is not None and compile_denoiser(module, self.mode, _placement(plan, role))
            if how:
                self.compiled[role] = how
                holder._status_update(
                    f"{role} compiled ({how}): a first request at a new size compiles it (up to minutes), "
                    "later ones reuse it",
                    "loading",
                )

    def forget(self) -> None:
        """The holder went: none of its denoisers is this engine's compiled one any more."""
        self.compiled = {}

    def warm_up(self, holder, model_class, native: dict) -> None:
        """The compile's work for the default model, at its native size, before anyone waits on it: one throwaway
        generation (nothing saved), when ``compile`` compiled something. Flux.1-dev's first request took 42 s
        compiled, 23 s of it compiling (docs/BENCHMARKS.md "Compile tiers"); after this, the first user request at
        that size only samples."""
        if not self.compiled:
            return
        settings = native | {"num_inference_steps": max(2, model_class.min_steps), "seed": 0}
        holder.generate_media(GenerateImageConfig(prompt="warm-up", **settings))

    def graphs(self) -> tuple:
        """Graphs compiled and CUDA graphs recorded so far (read without torch)."""
        return graphs_compiled(), cuda_graphs_recorded()

    def state(self) -> dict:
        """``/health``'s ``compile``: the mode, what is compiled, and how many graphs exist (a count that moves
        between two requests at one size is a recompile)."""
        return {
            "mode": self.mode,
            "compiled": dict(self.compiled),
            "graphs": graphs_compiled(),
            "cuda_graphs": cuda_graphs_recorded(),  # recordings: more after a request at a size seen is a bug
            "seconds": (phases := compile_phases()).get("total", 0.0),
            "phases": phases,
            "failed": compile_failures(),  # block class -> why it runs eager
        }


def _placement(plan, role: str):
    return plan.placements.get(role) if plan is not None else None
