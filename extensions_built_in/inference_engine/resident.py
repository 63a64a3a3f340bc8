"""The resident model: the one holder (an arch file's model object) that serves requests, and its pool keys.

A request whose model config and memory plan match the resident holder's reuses it as is (no load, no pipeline
build). Otherwise a new holder is built; its component loads hit or miss the pool, so only what differs is
loaded. Main thread only: the server thread reads ``holder`` once per ``/health`` and never mutates it.
"""

from __future__ import annotations

import os
import traceback
from typing import Callable, Optional

from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.device import is_oom
from toolkit.gc_heap import HeapSettler, watch_collector
from toolkit.models.attention import check_attention, resolve_attention
from toolkit.models.compile import (
    compile_denoiser,
    compile_failures,
    compile_phases,
    cuda_graphs_recorded,
    graphs_compiled,
    will_compile,
)
from toolkit.models.compile import resolve_mode as resolve_compile_mode
from toolkit.models.compile import use_cache_dir as use_compile_cache_dir
from toolkit.models.components.hub import DownloadRefused
from toolkit.models.components.pool import ComponentPool, active_pool, free_memory
from toolkit.models.lora import LoraMismatch
from toolkit.models.registry import get_model_class
from toolkit.models.streaming import STREAM_ATTR
from toolkit.paths import TOOLKIT_ROOT
from toolkit.sample_step_hook import GenerationCancelled


class LoadFailed(RuntimeError):
    pass


class ResidentModel:
    def __init__(
        self,
        device: str,
        pool: ComponentPool,
        status_hook: Callable[[str, Optional[str]], None],
        counters: Optional[dict] = None,
        compile: str = "off",
        compile_cache_dir: Optional[str] = None,
        attention: str = "auto",
        freeze_heap: bool = True,
    ):
        self.device, self.pool, self._status_hook = device, pool, status_hook
        self.holder = None
        self.identity: Optional[dict] = None
        self.keys: set = set()
        self.counters = counters if counters is not None else {}  # holder_reuses, holder_builds: the engine's
        self.counters.setdefault("holder_reuses", 0)
        self.counters.setdefault("holder_builds", 0)
        self.compile_mode = resolve_compile_mode(compile, device)  # engine.compile (toolkit/models/compile.py)
        self.heap = HeapSettler(enabled=freeze_heap)  # engine.freeze_heap
        watch_collector()
        default = os.path.join(TOOLKIT_ROOT, ".cache", "torch_compile")
        if self.compile_mode != "off":
            use_compile_cache_dir(compile_cache_dir or default, explicit=compile_cache_dir is not None)
        cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or default
        check_attention(attention, device, os.path.join(cache, "flash_attn_cute"))  # fails at start-up
        self.attention_mode = attention  # engine.attention (toolkit/models/attention.py)
        self.compiled: dict = {}  # role -> how, for the resident holder's denoisers

    def for_request(self, model_class, model_config: ModelConfig, plan, emit_status: Callable[[str], None]):
        """Same config and plan: the resident holder. Otherwise a new one; out of memory while loading, every
        component this request has not touched is freed and the build tried once more."""
        identity = holder_identity(model_config, plan)
        self.pool.begin_request()
        if self.holder is not None and identity == self.identity:
            self.counters["holder_reuses"] += 1
            for key in self.keys:
                self.pool.mark_used(key)
        else:
            self.drop()
            holder = self._build_or_none(model_class, model_config, plan)
            if holder is None:
                emit_status("Out of memory while loading: freeing unused components and retrying once")
                self.pool.evict([k for k in list(self.pool.entries) if k not in self.pool.used])
                holder = self.build(model_class, model_config, plan)
            self._keep(holder, identity)
        self.make_room(plan)
        self._place_kept_blocks(plan)
        return self.holder

    def _place_kept_blocks(self, plan) -> None:
        """Each streamed denoiser keeps on the GPU what its plan gives it (``Plan.kept``; the room exists now that
        ``make_room`` ran); a reused holder's plan may give more or less than the last request's."""
        for role, module in self.holder.parts.items():
            stream = getattr(module, STREAM_ATTR, None)
            if stream is not None:
                stream.keep(plan.kept.get(role, 0) if plan is not None else 0)

    def make_room(self, plan) -> None:
        """A plan counts the pool's other GPU residents as free memory (``plannable_bytes``), but its visiting
        and streamed weights come and go in offload hooks the pool never sees. So residents this request does
        not use leave now, as far as the plan's peak needs, not at an out-of-memory mid-step. A Wan 2.1 I2V
        re-plan ran out of memory beside what the failed plan had left on the card (docs/bench/HISTORY.md
        "Fourth sweep")."""
        if plan is None:
            return
        used = self.pool.used
        own = sum(
            e.bytes
            for k, e in self.pool.entries.items()
            if k in used and e.tier == "device" and k.device == self.device
        )
        self.pool.evict_for(plan.peak - own, self.device, protect=used)

    def _build_or_none(self, model_class, model_config: ModelConfig, plan):
        """None when the build ran out of memory, with what it had loaded already freed: the retry must not run
        inside the ``except`` block, whose traceback holds the half-built holder (a Wan 2.1 I2V retry ran
        out of memory with 23.8 GiB allocated and none of it the pool's: docs/bench/HISTORY.md "Fourth sweep")."""
        try:
            return self.build(model_class, model_config, plan)
        except Exception as e:
            if not is_oom(e):
                raise
            traceback.clear_frames(e.__traceback__)
        free_memory()
        return None

    def build(self, model_class, model_config: ModelConfig, plan=None):
        holder = model_class(self.device, model_config)
        holder.plan = plan
        holder.attention = resolve_attention(self.attention_mode, model_class.arch, self.device)
        # LoRAs load (in load_model) before the compile below: a denoiser it will compile takes them into slots
        # that later LoRAs hot-swap into without recompiling (toolkit/models/lora_hotswap.py).
        holder.will_compile = lambda role, module: will_compile(module, self.compile_mode, _placement(plan, role))
        holder.add_status_update_hook(self._status_hook)
        try:
            with active_pool(self.pool):
                holder.load_model()
        except (GenerationCancelled, LoraMismatch, DownloadRefused):  # the engine gives each its own error code
            raise
        except Exception as e:
            if is_oom(e):
                raise
            raise LoadFailed(
                f"Loading {model_class.arch} from {model_config.name_or_path!r} failed: {type(e).__name__}: {e}"
            ) from e
        self._compile(holder, plan)
        return holder

    def compile_state(self) -> dict:
        """``/health``'s ``compile``: the mode, what is compiled, and how many graphs exist (a count that moves
        between two requests at one size is a recompile)."""
        holder = self.holder
        return {
            "mode": self.compile_mode,
            "compiled": dict(self.compiled),
            "graphs": graphs_compiled(),
            "cuda_graphs": cuda_graphs_recorded(),  # recordings: more after a request at a size seen is a bug
            "seconds": (phases := compile_phases()).get("total", 0.0),
            "phases": phases,
            "failed": compile_failures(),  # block class -> why it runs eager
            "attention": {"mode": self.attention_mode, "first": getattr(holder, "attention", None)},
        }

    def _compile(self, holder, plan) -> None:
        """The denoiser compiled in place (``engine.compile``); the work itself happens at its first forward,
        which the status says, since a first request at a new size then waits for it."""
        self.compiled = {}
        for role, comp in holder.components.items():
            module = holder.parts.get(role) if comp.source == "main" else None
            how = module is not None and compile_denoiser(module, self.compile_mode, _placement(plan, role))
            if how:
                self.compiled[role] = how
                holder._status_update(
                    f"{role} compiled ({how}): a first request at a new size compiles it (up to minutes), "
                    "later ones reuse it",
                    "loading",
                )

    def load_default(self, model: dict, planner) -> None:
        """Warm load at start-up (``engine.default_model``), planned for the family's native size: a request of
        another size may plan (and load) differently."""
        arch = model.get("arch") or "sd1"
        model_class = get_model_class(arch)
        config = ModelConfig.from_dict(model_class.model_for(arch, model))
        defaults = model_class.defaults_for(arch)  # zimage:turbo plans Z-Image-Turbo's size and steps
        native = {k: v for k, v in defaults.items() if k in GenerateImageConfig.__dataclass_fields__}
        plan = planner.plan(model_class, config, GenerateImageConfig(prompt="", **native))
        self.pool.begin_request()
        self._keep(self.build(model_class, config, plan), holder_identity(config, plan))
        self._place_kept_blocks(plan)
        if self.compiled:
            self._compile_now(model_class, native)

    def _compile_now(self, model_class, native: dict) -> None:
        """``engine.compile``'s work for the default model, at its native size, before anyone waits on it: one throwaway
        generation (nothing saved). Flux.1-dev's first request took 42 s compiled, 23 s of it compiling
        (docs/BENCHMARKS.md "Compile tiers"); after this, the first user request at that size only samples."""
        settings = native | {"num_inference_steps": max(2, model_class.min_steps), "seed": 0}
        self.holder.generate_media(GenerateImageConfig(prompt="warm-up", **settings))

    def _keep(self, holder, identity: dict) -> None:
        self.holder, self.identity, self.keys = holder, identity, self.pool.used
        self.counters["holder_builds"] += 1

    def drop(self) -> None:
        """Forget the holder (its pooled components stay in the pool until released). What its streamed
        denoisers keep on the GPU goes back to the host: the pool lists them as waiting there, and would not free
        that memory for the next plan."""
        for module in self.holder.parts.values() if self.holder is not None else ():
            stream = getattr(module, STREAM_ATTR, None)
            if stream is not None:
                stream.release()
        self.holder = self.identity = None
        self.keys = set()
        self.compiled = {}

    def plan_of(self, model_config: ModelConfig):
        """The plan the resident holder was loaded with, when it holds this config's model; else None. Also read
        by the server thread (the start frame's prediction): one read of each, never a half-swapped holder."""
        holder, identity = self.holder, self.identity
        if holder is None or identity is None or any(identity.get(k) != v for k, v in model_config.identity().items()):
            return None
        return holder.plan

    def uses_any(self, names: set) -> bool:
        return bool(names & {str(k) for k in self.keys})

    def settle_heap(self) -> None:
        """Between requests: the heap frozen again once a load, an eviction, a park or a compile changed what
        lives in it (toolkit/gc_heap.py), so no collection during a request walks the model's objects."""
        c = self.pool.counters
        changed = (id(self.holder), c["misses"], c["evictions"], c["parked"], graphs_compiled(), cuda_graphs_recorded())
        self.heap.settle(changed)

    def idle_text(self) -> str:
        if self.holder is None:
            return "Idle — no model loaded"
        return f"Idle — {self.holder.arch} ({self.holder.model_config.name_or_path})"


def _placement(plan, role: str):
    return plan.placements.get(role) if plan is not None else None


def holder_identity(model_config: ModelConfig, plan) -> dict:
    """What makes a resident holder reusable: its config, and where its plan put each component."""
    return model_config.identity() | {
        "memory_plan": None
        if plan is None
        else {
            "placements": plan.placements,
            "vae_tiling": plan.vae_tiling,
            "vae_tile": plan.vae_tile,
            "qtype": plan.qtype,
        }
    }
