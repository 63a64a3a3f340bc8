"""The resident model: the one holder (an arch file's model object) that serves requests, and its pool keys.

A request whose model config and memory plan match the resident holder's reuses it as is (no load, no pipeline
build). Otherwise a new holder is built; its component loads hit or miss the pool, so only what differs is
loaded. What a new holder is set up with comes from where its setting lives: the attention kernel from
toolkit/models/attention.py, the denoiser's compile from denoiser_compile.py. Main thread only: the server thread
reads ``holder`` once per ``/health`` and never mutates it.
"""

from __future__ import annotations

import traceback
from typing import Callable, Optional

from extensions_built_in.inference_engine.denoiser_compile import DenoiserCompile
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.device import is_oom
from toolkit.models.attention import resolve_attention
from toolkit.models.components.hub import DownloadRefused
from toolkit.models.components.pool import ComponentPool, active_pool, free_memory
from toolkit.models.lora import LoraMismatch
from toolkit.models.lora_patch import restore as restore_patched
from toolkit.models.registry import get_model_class
from toolkit.models.streaming import STREAM_ATTR
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
        compiler: Optional[DenoiserCompile] = None,
        attention: str = "auto",
        lora_patch: bool = False,
    ):
        """``compiler``: ``engine.compile`` (off when not given); ``attention``: ``engine.attention``, checked at
        start-up by the engine (toolkit/models/attention.py ``check_attention``)."""
        self.device, self.pool, self._status_hook = device, pool, status_hook
        self.holder = None
        self.identity: Optional[dict] = None
        self.keys: set = set()
        self.counters = counters if counters is not None else {}  # holder_reuses, holder_builds: the engine's
        self.counters.setdefault("holder_reuses", 0)
        self.counters.setdefault("holder_builds", 0)
        self.compiler = compiler if compiler is not None else DenoiserCompile("off", device)
        self.attention_mode = attention
        self.lora_patch = lora_patch  # engine.lora_patch (toolkit/models/lora_patch.py)

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
        re-plan ran out of memory beside what the failed plan had left on the card (docs/MEASURED.md
        "A re-plan beside what the failed plan left")."""
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
        out of memory with 23.8 GiB allocated and none of it the pool's: docs/MEASURED.md
        "A re-plan beside what the failed plan left")."""
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
        holder.will_compile = self.compiler.will_compile(plan)  # read by the LoRA load, before the compile below
        holder.lora_patch = self.lora_patch
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
        self.compiler.compile(holder, plan)
        return holder

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
        self.compiler.warm_up(self.holder, model_class, native)  # engine.compile's work before anyone waits on it

    def _keep(self, holder, identity: dict) -> None:
        self.holder, self.identity, self.keys = holder, identity, self.pool.used
        self.counters["holder_builds"] += 1

    def drop(self) -> None:
        """Forget the holder (its pooled components stay in the pool until released). What its streamed
        denoisers keep on the GPU goes back to the host, and the original weights a LoRA patch kept beside its
        denoiser are copied back and freed: the pool counts neither, and would not free that memory for the next
        plan."""
        for module in self.holder.parts.values() if self.holder is not None else ():
            stream = getattr(module, STREAM_ATTR, None)
            if stream is not None:
                stream.release()
        if self.holder is not None:
            restore_patched(self.holder, only_device_copies=True)
        self.holder = self.identity = None
        self.keys = set()
        self.compiler.forget()

    def plan_of(self, model_config: ModelConfig):
        """The plan the resident holder was loaded with, when it holds this config's model; else None. Also read
        by the server thread (the start frame's prediction): one read of each, never a half-swapped holder."""
        holder, identity = self.holder, self.identity
        if holder is None or identity is None or any(identity.get(k) != v for k, v in model_config.identity().items()):
            return None
        return holder.plan

    def uses_any(self, names: set) -> bool:
        return bool(names & {str(k) for k in self.keys})

    def idle_text(self) -> str:
        if self.holder is None:
            return "Idle — no model loaded"
        return f"Idle — {self.holder.arch} ({self.holder.model_config.name_or_path})"


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
