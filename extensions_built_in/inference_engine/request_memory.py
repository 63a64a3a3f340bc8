"""The engine's side of the memory plan (``toolkit/memory_plan.py`` decides; this says when, with which numbers).

Each request is planned on the main thread just before its model is loaded, from the memory free at that moment
within ``engine.vram_budget_gb`` plus what the engine's own pool holds (a plan may reuse or free it), so a
training job that took memory since the last request gets a smaller plan instead of an ``oom``. A model config
with explicit memory options (``low_vram``, ``layer_offloading``, ``quantize``) is not planned: the user chose.
A generation that runs out of memory anyway has the working-set reserve of the stage that ran out widened
(remembered per family and kind of component: at least doubled, and by what the failed attempt needed beyond the
plan) and is planned and run once more.

The ``start`` frame carries a prediction made on the server thread from the last snapshot of free memory (only
for local checkpoints: reading a hub id's sizes could mean downloading it there).

A streamed denoiser is priced with this machine's copy speed (``stream_speed.py``: its bandwidth, and a correction
from steps measured slower than predicted, after which the next request is planned afresh); whether a plan may
have 8-bit weights is ``engine.memory_quality`` (``toolkit/memory_quality.py``).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Optional

from extensions_built_in.inference_engine.stream_speed import StreamSpeed
from toolkit.device import take_stage_peak
from toolkit.memory_plan import GIB, SMALLER_REQUEST, STAGE_KINDS, Plan, PlanDoesNotFit, Workload, plan_memory
from toolkit.memory_quality import QUALITIES
from toolkit.models.components.pool import (
    ComponentPool,
    free_memory,
    host_available_bytes,
    host_reserve_bytes,
    module_bytes,
    plannable_bytes,
)
from toolkit.models.speed import fp8_options, wants_fp8
from toolkit.models.streaming import kept_bytes
from toolkit.models.vae_tiling import smaller_tiles

MODES = ("auto", "off")
# engine.memory_qtype: what the plan may quantize with. "auto" picks the GPU's best
# (toolkit/models/components/loading.py best_qtype); "none" never quantizes (visits and streaming only: slower,
# bit-exact weights).
PLAN_QTYPES = ("auto", "none", "float8dq", "float8", "int8")
MAX_RESERVE_SCALE = 8.0
SHORTFALL_MARGIN = 1.25  # a failed allocation shows only a lower bound of what the phase needed
KINDS = ("encoder", "denoiser", "decoder")  # whose working set a reserve scale widens (toolkit/memory_plan.py Part)
TRIED = re.compile(r"Tried to allocate ([0-9.]+) (GiB|MiB|KiB|B)")
UNITS = {"GiB": GIB, "MiB": 1024**2, "KiB": 1024, "B": 1}


class RequestMemory:
    def __init__(
        self,
        device: str,
        mode: str,
        pool: ComponentPool,
        budget: Optional[int],
        qtype: str = "auto",
        quality: str = "balanced",
    ):
        if mode not in MODES:
            raise ValueError(f"engine.memory must be one of {', '.join(MODES)} (got {mode!r})")
        if qtype not in PLAN_QTYPES:
            raise ValueError(f"engine.memory_qtype must be one of {', '.join(PLAN_QTYPES)} (got {qtype!r})")
        if quality not in QUALITIES:
            raise ValueError(f"engine.memory_quality must be one of {', '.join(QUALITIES)} (got {quality!r})")
        self.device = device
        self.mode = mode
        self.quality = quality  # engine.memory_quality
        self.streams = StreamSpeed()  # this machine's stream copy cost
        self.pool = pool
        self.budget = budget
        self.reserve_scale: dict[str, dict] = {}  # arch -> {kind: multiplier on that kind's working-set estimate}
        self.snapshot: Optional[tuple[int, int]] = None  # (GPU bytes, host bytes) last seen on the main thread
        # Component sizes per (arch, sources, dtype): read once, since every request is planned (and for a hub id
        # reading them means asking the hub for the snapshot).
        self._sizes: dict[tuple, list] = {}
        # Off CUDA there is nothing to plan: every component is on the one device. (Tests switch it on there.)
        self.active = mode == "auto" and str(device).startswith("cuda")
        self.qtype: Optional[str] = None
        self.qtype_setting = qtype
        if self.active and qtype != "none":
            from toolkit.models.components.loading import best_qtype, check_qtype

            self.qtype = best_qtype(device) if qtype == "auto" else qtype
            problem = self.qtype and check_qtype(self.qtype, device)
            if self.qtype == "float8dq" and not problem and best_qtype(device) != "float8dq":
                problem = "float8dq needs float8 tensor cores (compute capability 8.9+: Ada, Hopper or later)"
            if problem:
                raise ValueError(f"engine.memory_qtype: {problem}")

    def source(self, model_config) -> str:
        """Who decides where this model's components live: ``auto`` (the plan), ``options`` (the user), ``none``."""
        if model_config.explicit_memory_options():
            return "options"
        return "auto" if self.active else "none"

    # ------------------------------------------------------------------ main thread
    def refresh(self) -> tuple[int, int]:
        self.streams.measure_link(self.device)  # once, at the engine's start: what a stream's copies cost here
        # A streamed denoiser's kept blocks are this engine's too (the next plan keeps or frees them), though the
        # pool lists the component as waiting on the host.
        own = self.pool.device_bytes(self.device) + kept_bytes(self.device)
        self.snapshot = (
            plannable_bytes(self.device, own),
            host_available_bytes(self.pool.host_bytes()),
        )
        return self.snapshot

    def plan(self, model_class, model_config, gen, resident: Optional[Plan] = None) -> Optional[Plan]:
        """The plan for this request, or None when the config's own options decide. Raises PlanDoesNotFit.
        ``resident``: the plan this model is loaded with now, whose placements are kept while they fit."""
        if self.source(model_config) != "auto":
            return None
        self.refresh()
        replanned = self.streams.take_pending()  # a streamed step measured slower than planned: plan afresh
        try:
            plan = self._decide(model_class, model_config, gen, None if replanned else resident)
            plan.replanned = replanned
            return plan
        except (OSError, ValueError, KeyError):
            # Sizes unreadable (a missing or damaged file): no plan; the load reports the real problem as
            # load_failed, naming the file, instead of the planner failing first as an internal error.
            return None

    def _decide(self, model_class, model_config, gen, resident: Optional[Plan] = None) -> Plan:
        """From the last snapshot: the cheapest plan, or the loaded placements where they still fit. A plan that moves a
        component reloads it (FLUX.2-dev's encoder: 46 s), and memory that hovers at a threshold (another program's
        VRAM, the host's page cache) would switch a model between two plans on every request; its second request on
        16 GiB re-planned its encoder from bf16 to float8 for want of the last few GiB of host RAM (docs/MEASURED.md
        "Pinned host copies and the OS's memory killer"). The host reserve is not counted for the loaded placements:
        their copies are held already."""
        available, host = self.snapshot
        fresh = self._plan(model_class, model_config, gen, available, host)
        if resident is None or resident.placements == fresh.placements:
            return fresh
        try:
            loaded = resident.placements
            kept = self._plan(model_class, model_config, gen, available, host + host_reserve_bytes(), loaded)
        except PlanDoesNotFit:
            return fresh
        kept.why = resident.why  # its placements' reason still holds
        return kept

    def widen_after_oom(self, arch: str, plan: Plan, where: dict) -> bool:
        """An estimate proved short: plan this family with a wider reserve for the stage that ran out from now on, at
        least twice as wide and wide enough for what the failed attempt was seen to need (its peak plus the allocation
        that failed) beyond the peak predicted for that stage. Doubling alone was not: at 24 GiB, LTX-2's sampling
        needed over 23.5 GiB beside a 1.6 GiB reserve, and the doubled plan ran out the same way (docs/MEASURED.md
        "Widening a reserve after an out-of-memory"). Only that stage's: HunyuanVideo 1.5's decode ran out at 24 GiB,
        and a plan with every reserve doubled had its sampling's 12.5 GiB grow to 25 and refused a request its 192 px
        tiles decode in 8 GiB. False once the reserve is as wide as it gets (a retry would fail the same way)."""
        scales = self.reserve_scale.setdefault(arch, {})
        kinds = STAGE_KINDS.get(where["stage"], KINDS)
        if all(scales.get(kind, 1.0) >= MAX_RESERVE_SCALE for kind in kinds):
            return False
        work = max(plan.work_of(where["stage"]), 1)
        shortfall = max(0, where.get("needed_bytes", 0) - plan.peak_of(where["stage"]))
        for kind in kinds:
            scale = scales.get(kind, 1.0)
            wanted = scale * (work + SHORTFALL_MARGIN * shortfall) / work
            scales[kind] = round(min(MAX_RESERVE_SCALE, max(scale * 2, wanted)), 2)
        return True

    def replan_message(self, arch: str, plan: Plan, where: dict) -> str:
        """The re-plan's status frame: where it ran out, what it needed, and the reserves the next plan counts.
        Allocated beside reserved: the gap is memory the allocator held that no tensor could use (fragmentation)."""
        widened = ", ".join(f"{kind} {scale}x" for kind, scale in self.reserve_scale.get(arch, {}).items())
        return (
            f"Out of memory while {where['stage']} with this plan ({plan.summary()}; {where['allocated_gib']} GiB "
            f"allocated of {where['reserved_gib']} reserved, {where['needed_gib']} GiB needed; at {where['at']}): "
            f"planning again with a wider working-set reserve ({widened})"
        )

    # ------------------------------------------------------------------ server thread
    def predict(self, model_class, model_config, gen, resident: Optional[Plan] = None) -> dict:
        """What the ``start`` frame says: who decides, and the plan expected from the last snapshot."""
        source = self.source(model_config)
        out: dict = {"mode": self.mode, "source": source, "predicted": None}
        if source != "auto" or self.snapshot is None or not _local(model_config):
            return out
        resident = None if self.streams.pending else resident
        try:
            out["predicted"] = self._decide(model_class, model_config, gen, resident).describe()
        except PlanDoesNotFit as e:
            out["predicted"] = {"does_not_fit": str(e)}
        except (OSError, ValueError) as e:  # unreadable sizes: the load will report the real problem
            out["predicted"] = {"unknown": f"{type(e).__name__}: {e}"[:300]}
        return out

    # ------------------------------------------------------------------ both
    def _plan(self, model_class, model_config, gen, available: int, host: int, only: Optional[dict] = None) -> Plan:
        holder = model_class(self.device, model_config)
        scales = self.reserve_scale.get(model_class.arch, {})
        key = (model_class.arch, model_config.name_or_path, model_config.extras_name_or_path, holder.dtype)
        if key not in self._sizes:
            self._sizes[key] = holder.memory_parts()
        fp8 = wants_fp8(gen.speed)
        qtype = "float8dq" if fp8 else self.qtype_for(model_class)

        def plan_at(request, tile=None) -> Plan:
            return plan_memory(
                model_class.arch,
                self._sizes[key],
                available,
                _scaled(holder.workload(request, tile), scales),
                host,
                budget=self.budget,
                qtype=qtype,
                quantize_denoiser=fp8,
                only=only,
                quality=self.quality,
                quality_db=model_class.quality_8bit_db.get(qtype),
                copy_scale=self.streams.copy_scale,
            )

        return plan_naming_what_fits(holder, gen, lambda request: tiled_to_fit(holder, request, plan_at))

    def config_for(self, model_config, gen):
        """The ``fp8`` speed tier where no plan decides (``engine.memory: off``, or the user's memory options): as
        the option ``quantize`` with ``float8dq`` on the denoiser. Under a plan the planner quantizes it."""
        if wants_fp8(gen.speed) and self.source(model_config) != "auto":
            return fp8_options(model_config)
        return model_config

    def qtype_for(self, model_class) -> Optional[str]:
        """The engine's 8-bit type, or float8 weights only for a family whose step float8 activations slow."""
        if self.qtype == "float8dq" and self.qtype_setting == "auto" and not model_class.float8_activations:
            return "float8"
        return self.qtype

    def oom_snapshot(self, stage: str, error: Optional[BaseException] = None) -> dict:
        """Where an out-of-memory struck, for the status frame and the log: the stage, what this process had
        allocated, which of the pool's components sat on the GPU (a plan's estimate, or a component that
        should have left, shows here), and what the attempt needed at least: the stage's peak plus the allocation
        that failed (the re-plan's input). The stage's, not the request's: HunyuanVideo 1.5's decode at 24 GiB was
        said to need 24.25 GiB, its encoding's 20.47 GiB peak plus the 3.78 GiB the decode asked for. What the
        allocator held unused (``reserved``) shows fragmentation."""
        from toolkit.device import stage_peak, vram_stats

        stats = vram_stats() or {}
        tried = TRIED.search(str(error or ""))
        needed = stage_peak() + (int(float(tried.group(1)) * UNITS[tried.group(2)]) if tried else 0)
        return {
            "stage": stage,
            "allocated_gib": round(stats.get("allocated", 0) / GIB, 2),
            "reserved_gib": round(stats.get("reserved", 0) / GIB, 2),
            "needed_gib": round(needed / GIB, 2),
            "needed_bytes": needed,
            "pool_gib": self.on_device_gib(),
            "at": innermost_frames(error),
        }

    def on_device_gib(self) -> dict:
        """Each pool component's weights on the engine's device now, visitors and streamed blocks as they are (a
        pool entry's key says where it was loaded: a visitor loaded on the host was never listed here)."""
        found = {}
        for e in self.pool.entries.values():
            size = module_bytes(e.module, on=self.device) if e.tier == "device" else 0
            if size:
                found[e.key.subfolder or e.key.cls.rsplit(".", 1)[-1]] = round(size / GIB, 2)
        return found

    def end_stage(self, stage: str, timings: dict) -> None:
        """GPU only: the ``stage`` that just ended (its peak is reset either way), in a result's ``timings`` (but
        ``queued`` and ``saving``): its peak allocation (``peak_gib``), and each component's weights on the GPU at
        its end (``gpu_gib``). A visitor still there says why a stage went over its plan (SD3's first request on
        16 GiB peaked 1.7 GiB above its later ones through sampling and decoding: docs/MEASURED.md
        "A visitor left on the GPU by a self-removing prefetch hook")."""
        peak = take_stage_peak()
        if peak is not None and stage not in ("queued", "saving"):
            timings.setdefault("peak_gib", {})[stage] = round(peak / GIB, 3)
            timings.setdefault("gpu_gib", {})[stage] = self.on_device_gib()

    @staticmethod
    def oom_message(where: dict, error: BaseException) -> str:
        """The ``oom`` error frame's message: where it struck and what sat on the GPU, then torch's own line."""
        on_gpu = ", ".join(f"{name} {gib} GiB" for name, gib in where["pool_gib"].items()) or "none of the pool's"
        return (
            f"Out of memory while {where['stage']} ({where['allocated_gib']} GiB allocated of "
            f"{where['reserved_gib']} reserved; components on the "
            f"GPU: {on_gpu}): {str(error).splitlines()[0] if str(error) else type(error).__name__}"
        )[:600]

    def observe(self, plan: Optional[Plan], timings: dict) -> None:
        """After a request ran under ``plan``: its streamed step checked against the prediction (``StreamSpeed``)."""
        if self.active and plan is not None and plan.source == "auto":
            self.streams.observe(plan, timings)

    def describe(self, plan: Optional[Plan]) -> dict:
        return {
            "mode": self.mode,
            "qtype": self.qtype,
            "quality": self.quality,
            "reserve_scale": dict(self.reserve_scale),
            "plan": plan.describe() if plan is not None else None,
        } | self.streams.describe()


def free_after_oom(error: BaseException) -> None:
    """Out of memory: free what the failed attempt allocated before anything else runs. Its traceback keeps
    every frame's locals alive (a half-loaded module, the step's tensors), so those are cleared first:
    otherwise a load that ran out of memory keeps its half-loaded weights allocated with nothing in the pool."""
    import traceback

    traceback.clear_frames(error.__traceback__)
    free_memory()


def tiled_to_fit(holder, gen, plan_at) -> Plan:
    """``plan_at(gen, tile)`` with the family's own VAE tile, else with a smaller one (``smaller_tiles``) before
    giving up; a request that fits no way is told the smallest plan, the smallest tile's."""
    for tile in (None, *smaller_tiles(holder)):
        try:
            return plan_at(gen, tile)
        except PlanDoesNotFit as e:
            error = e
    raise error


def plan_naming_what_fits(holder, gen, plan_for) -> Plan:
    """``plan_for(gen)``; where it does not fit and the request's size is much of why, the error names what does."""
    try:
        return plan_for(gen)
    except PlanDoesNotFit as e:
        if e.size_matters:
            e.suggest(what_fits(holder, gen, plan_for))
        raise


def what_fits(holder, gen, plan_for) -> str:
    """The largest requests like ``gen`` that do fit, for the message of one that does not: at its size, the most
    frames (video); at its frame count, the largest size with its aspect. A user on a 16 GiB card asking for
    HunyuanVideo at 1280x720x129 learns what to ask for instead of only that it is too large."""
    import copy

    def request_with(**change):
        request = copy.copy(gen)
        for name, value in change.items():
            setattr(request, name, value)
        request.snap_size(holder.divisibility)
        return request

    def fits(request) -> bool:
        try:
            plan_for(request)
            return True
        except PlanDoesNotFit:
            return False

    found = []
    video = holder.modality == "video" and gen.num_frames > 1
    step = holder.latent.temporal_factor
    frames = list(range((gen.num_frames - 2) // step * step + 1, 0, -step)) if video else []
    lo, hi = 0, len(frames)  # frames[:lo] do not fit; the first that fits is frames[lo] (fitting is monotonic)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(request_with(num_frames=frames[mid])) else (mid + 1, hi)
    if lo < len(frames):
        found.append(f"at {gen.width}×{gen.height}, up to {frames[lo]} frames fit")
    sizes = range(15, 3, -1) if holder.modality in ("image", "video") else ()  # audio: no pixels to trade
    for sixteenths in sizes:  # down to a quarter of each side
        request = request_with(width=gen.width * sixteenths // 16, height=gen.height * sixteenths // 16)
        if fits(request):
            found.append(f"{request.width}×{request.height} fits" + (f" at {gen.num_frames} frames" if video else ""))
            break
    return "; ".join(found) or SMALLER_REQUEST


def innermost_frames(error: Optional[BaseException], count: int = 4) -> str:
    """Where the allocation failed, innermost first ("modeling_mistral.py:196 forward < ..."): which module, or
    which offload hook, asked for the memory the plan did not count."""
    import traceback

    if error is None or error.__traceback__ is None:
        return ""
    frames = traceback.extract_tb(error.__traceback__)[-count:]
    return " < ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}" for f in reversed(frames))


def _scaled(work: Workload, scales: dict) -> Workload:
    if not scales:
        return work
    decoder, encoder = scales.get("decoder", 1.0), scales.get("encoder", 1.0)
    return replace(
        work,
        denoise=int(work.denoise * scales.get("denoiser", 1.0)),
        decode=int(work.decode * decoder),
        decode_tiled=int(work.decode_tiled * decoder),
        encode=int(work.encode * encoder),
        encode_tiled=None if work.encode_tiled is None else int(work.encode_tiled * encoder),
    )


def _local(model_config) -> bool:
    """Sizes readable from local files without building or downloading anything (no torch on this thread)."""
    return all(_readable(p) for p in {model_config.name_or_path, model_config.extras_name_or_path})


def _readable(path: str) -> bool:
    if path.startswith("tiny:"):
        from toolkit.models.tiny import RECIPE_VERSION, cache_root

        return os.path.isdir(os.path.join(cache_root(), f"v{RECIPE_VERSION}", path[len("tiny:") :].replace("/", "__")))
    from toolkit.models.components.sources import source_kind

    # A hub id loads from the hub even where a folder of that name sits in the working directory (sources.py).
    return path.startswith("builtin:") or (source_kind(path) == "local" and os.path.exists(os.path.expanduser(path)))
