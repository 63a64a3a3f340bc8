"""The engine: request queue, the active model holder, and the generation loop on the main thread.

The server thread only calls the quick, torch-free methods (``submit``, ``cancel``, ``move``, ``cancel_all``,
``queue_snapshot``, ``health``, ``run_on_main``); everything that touches weights runs on the main thread in
``serve``, in line order (FIFO unless someone moved a waiting request): one generation at a time, or, while
requests share steps, the main thread's and those that joined it on threads of their own (batching.py). Frames
go to each request's :class:`FrameStream`, so nothing here waits on a client.
"""

from __future__ import annotations

import contextlib
import os
import queue
import tempfile
import threading
import time
import traceback
import uuid
from collections import deque
from typing import Any, Callable, Optional

from extensions_built_in.inference_engine.assets import AssetStore, paths_named_by
from extensions_built_in.inference_engine.batching import BatchGroup, EngineBatching
from extensions_built_in.inference_engine.denoiser_compile import DenoiserCompile, cache_dir
from extensions_built_in.inference_engine.engine_line import EngineLine
from extensions_built_in.inference_engine.engine_progress import EngineProgress
from extensions_built_in.inference_engine.errors import EngineBusy, OutputInUse
from extensions_built_in.inference_engine.latent_preview import LatentSender
from extensions_built_in.inference_engine.metrics import EngineMetrics
from extensions_built_in.inference_engine.model_aliases import ModelAliases
from extensions_built_in.inference_engine.model_sources import ModelSources, operator_sources
from extensions_built_in.inference_engine.outputs import Outputs
from extensions_built_in.inference_engine.queue_eta import Progress, RunTimes
from extensions_built_in.inference_engine.request import Request
from extensions_built_in.inference_engine.request_checks import RequestChecks
from extensions_built_in.inference_engine.request_memory import RequestMemory, free_after_oom
from extensions_built_in.inference_engine.request_queue import RequestQueue
from extensions_built_in.inference_engine.resident import LoadFailed, ResidentModel
from extensions_built_in.inference_engine.saver import ResultSaver
from extensions_built_in.inference_engine.settings import EngineSettings
from extensions_built_in.inference_engine.stream import FrameStream
from toolkit.device import is_oom, reset_vram_peak, set_vram_budget, vram_stats
from toolkit.gc_heap import HeapSettler, collector_state, watch_collector
from toolkit.memory_plan import PlanDoesNotFit
from toolkit.models import prompt_cache as prompts
from toolkit.models import upscalers
from toolkit.models.attention import check_attention
from toolkit.models.components.hub import DownloadRefused
from toolkit.models.components.pool import ComponentPool, active_pool, set_host_ram_budget
from toolkit.models.lora import LoraMismatch
from toolkit.models.lora_patch import describe as describe_lora_patch
from toolkit.models.registry import describe_all
from toolkit.models.speed import wants_fp8
from toolkit.paths import MODELS_PATH
from toolkit.sample_step_hook import GenerationCancelled
from toolkit.step_clock import StepClock

INFO_INTERVAL_S = 0.5  # Job.info writes are throttled: sqlite writes per step would cost more than the step
FILES_URL_PREFIX = "/api/files"  # where the UI serves the output folder (a result's ``url``)


class Engine(EngineLine, EngineBatching, EngineProgress):  # engine_line.py, batching.py, engine_progress.py
    def __init__(
        self,
        settings: EngineSettings,
        device: str,
        on_info: Optional[Callable[[str], None]] = None,
    ):
        """``settings``: the job config's ``engine:`` block (settings.py), its folders set (``for_job`` sets them
        for a job); ``on_info``: where the one-line state goes (the job's Job row)."""
        if settings.output_folder is None or settings.assets_folder is None:
            raise ValueError("the engine needs settings.output_folder and settings.assets_folder (for_job sets them)")
        self.settings = settings
        self.device = device
        self.output_folder = os.path.abspath(settings.output_folder)
        self.assets_folder = os.path.abspath(settings.assets_folder)
        self.idle_unload_seconds = settings.idle_unload_seconds
        self._on_info = on_info or (lambda text: None)
        self.queue: RequestQueue[Request] = RequestQueue(settings.max_queue)
        # Before anything is allocated: the cap applies to what this process reserves from now on.
        budget_gb = settings.vram_budget_gb
        self.vram_budget = {"requested_gb": budget_gb or None, "bytes": set_vram_budget(device, budget_gb)}
        self.host_ram_budget = {"requested_gb": settings.host_ram_budget_gb or None}
        self.host_ram_budget["bytes"] = set_host_ram_budget(settings.host_ram_budget_gb)
        self.assets = AssetStore(
            self.assets_folder,
            int(settings.assets_max_gb * 1024**3),
            settings.assets_max_age_hours * 3600,
            in_use=self._control_images_in_use,
        )
        self._tasks: "queue.Queue[tuple[Callable, queue.Queue]]" = queue.Queue()
        self.pool = ComponentPool(settings.keep_resident_gb, settings.keep_in_ram_gb)
        self.metrics = EngineMetrics(self.pool, self.queue, lambda: self.batching_stats())  # GET /metrics
        self.memory = RequestMemory(
            device,
            settings.memory,
            self.pool,
            self.vram_budget["bytes"],
            settings.memory_qtype,
            settings.memory_quality,
        )
        if self.memory.active:
            self.memory.refresh()
        self._scratch = os.path.join(tempfile.gettempdir(), f"aitk_engine_{os.getpid()}")  # upscaled start images
        self.latents = LatentSender()  # the main thread's; a batched request's thread has its own (_thread)
        self._thread = threading.local()  # the request this thread runs (status hooks report to it)
        self._init_batching()
        self.counters = {"requests": 0, "holder_reuses": 0, "holder_builds": 0}
        self.compiler = DenoiserCompile(settings.compile, device, settings.compile_cache_dir)  # engine.compile
        self.heap = HeapSettler(enabled=settings.freeze_heap)  # engine.freeze_heap (toolkit/gc_heap.py)
        watch_collector()
        # engine.attention: a bad setting or an FA4 that cannot run stops the engine here, not a request
        check_attention(settings.attention, device, os.path.join(cache_dir(), "flash_attn_cute"))
        self.resident = ResidentModel(
            device,
            self.pool,
            self._status_of_running,
            self.counters,
            self.compiler,
            settings.attention,
            lora_patch=settings.lora_patch,
        )
        # Each model's recent prompts, encoded (toolkit/models/prompt_cache.py).
        prompts.configure(settings.prompt_cache)
        self.warm_up_s: Optional[float] = None
        self.saver = ResultSaver()
        self._recent: "deque[Request]" = deque(maxlen=256)  # for idempotent cancels and flushing at shutdown
        self.run_times = RunTimes()  # measured runs: GET /queue's ETAs (queue_eta.py)
        self._last_model: Optional[tuple] = None  # (arch, name_or_path) of the last run: did the next switch?
        self._last_info = (0.0, "")
        self._idle_since = time.monotonic()
        self.outputs = Outputs(self.output_folder, FILES_URL_PREFIX)
        models, default_model = settings.models, settings.default_model
        trusted = operator_sources(models, default_model)  # the job config's own: they may point anywhere
        self.sources = ModelSources(settings.model_roots, trusted, settings.allow_downloads, settings.max_download_gb)
        lora_roots = settings.lora_roots or [MODELS_PATH]
        self.checks = RequestChecks(device, self.assets, self.output_folder, lora_roots, self.sources)
        self.model_roots = self.sources.roots  # GET /checkpoints lists them too
        self.model_aliases = ModelAliases(models, self.sources)  # engine.models: names OpenAI clients use

    @property
    def running(self) -> Optional[Request]:
        return self.queue.running

    @property
    def holder(self):
        return self.resident.holder

    # ================================================================== server-thread API (no torch)
    def models(self) -> list[dict]:
        no_fp8 = self.checks.no_fp8  # a GPU without float8 tensor cores: its fp8 tiers are not offered
        return [m | {"speeds": [s for s in m["speeds"] if not (no_fp8 and wants_fp8(s))]} for m in describe_all()]

    def _control_images_in_use(self) -> set:
        running, pending = self.queue.snapshot()
        return paths_named_by(r.sample for r in pending + ([running] if running else []))

    def submit(self, model: dict, sample: dict, stream: dict, frames: FrameStream) -> Request:
        """Check, then queue. ``BadRequest`` names a field; ``QueueFull`` means come back later (the stream
        is then dropped unread)."""
        batch = {k: sample.pop(k) for k in ("batch_count", "batch_seeds") if k in sample}
        model_class, model_config, gen, options = self.checks.resolve(model, sample, stream)
        model_config = self.memory.config_for(model_config, gen)  # the fp8 tier without a plan: options
        req = Request(
            frames.request_id,
            model_class,
            model_config,
            gen,
            options,
            frames,
            body={"model": model, "sample": sample | batch, "stream": stream},
            **batch,
        )
        self.metrics.track(req)
        gen.output_path = os.path.join(self.output_folder, f"{req.id}.{gen.output_ext}")
        frames.emit(
            "start",
            config=req.resolved_config(),
            output={"kind": req.output_kind, "ext": gen.output_ext},
            latent=req.latent_spec(),
            memory=self.memory.predict(model_class, model_config, gen, self.resident.plan_of(model_config)),
        )
        position = self.queue.push(req, retry_after_s=self._retry_after_s())
        self._recent.append(req)
        self.counters["requests"] += 1
        frames.emit("status", stage="queued", message="Waiting in queue", position=position)
        return req

    def new_request_id(self) -> str:
        return uuid.uuid4().hex

    def health(self) -> dict:
        busy, queued = self.running is not None, len(self.queue)  # the oldest running; batching lists the rest
        holder, active = self.holder, None  # read once: the main thread may swap it meanwhile
        first = getattr(holder, "attention", None)  # the SDPA kernel it tries first (engine.attention)
        if holder is not None:
            active = {"arch": holder.arch, "name_or_path": holder.model_config.name_or_path}
            active["config"] = self.resident.identity
        return {
            "ok": True,
            "busy": busy,
            "queue": queued,
            "active": active,
            "pool": self.pool.snapshot(),
            "counters": dict(self.counters) | self.pool.counters,
            "resident_bytes": self.pool.resident_bytes(),
            "device": self.device,
            "vram": vram_stats(),
            "warm_up_s": self.warm_up_s,
            "max_queue": self.queue.max_pending,
            "vram_budget": self.vram_budget,
            "host_ram_budget": self.host_ram_budget,
            "memory": self.memory.describe(holder.plan if holder is not None else None),
            "compile": self.compiler.state() | {"attention": {"mode": self.settings.attention, "first": first}},
            "gc": collector_state() | {"last_freeze_s": self.heap.last_seconds},  # toolkit/gc_heap.py
            "prompt_cache": prompts.stats(),
            "lora_patch": describe_lora_patch(holder, self.settings.lora_patch),
            "batching": self.batching_stats(),
            "assets": self.assets.usage() | {"max_age_s": self.assets.max_age_s},
        }

    def run_on_main(self, fn: Callable[[], Any], timeout: float = 60.0) -> Any:
        """Run ``fn`` on the main thread between generations (model state is only touched there).
        ``EngineBusy`` when a generation is running, or one outlasts ``timeout``: then ``fn`` never runs
        (an unload the caller was told had failed must not happen a minute later)."""
        if self.running is not None:
            raise EngineBusy("a generation is running: cancel it or wait for it to end")
        reply: queue.Queue = queue.Queue(maxsize=1)
        abandoned = threading.Event()
        self._tasks.put((lambda: None if abandoned.is_set() else fn(), reply))
        self.queue.wake()
        try:
            ok, value = reply.get(timeout=timeout)
        except queue.Empty:
            abandoned.set()
            raise EngineBusy(f"the engine stayed busy for {timeout:g} s; nothing was done") from None
        if not ok:
            raise value
        return value

    def list_outputs(self, limit: int = 100) -> list[dict]:
        return self.outputs.listing(limit)

    def delete_output(self, path: str) -> None:
        """A result, its thumbnail and sidecar. ``OutputInUse`` while a queued or running request reads it as a
        control image (it would fail at load otherwise)."""
        if os.path.abspath(path) in self._control_images_in_use():
            raise OutputInUse(f"{os.path.basename(path)!r} is a control image of a queued or running request")
        self.outputs.remove(path)

    def file_url(self, path: str) -> str:
        return self.outputs.url(path)

    # ================================================================== main thread
    def serve(self, stop: threading.Event) -> None:
        self._set_info(self._idle_text(), force=True)
        while not stop.is_set():
            self._run_tasks()
            req = self._next_request(timeout=0.5)
            if req is None:
                self._maybe_idle_unload()
                if not self.saver.busy():  # a freeze's collection holds the GIL: never while a file is written
                    self._settle_heap()
                continue
            self._wait_for_company(req)
            self._execute(req)
            self._drain_group()
            self._idle_since = time.monotonic()
            self._set_info(self._idle_text(), force=True)

    def _settle_heap(self) -> None:
        """Between requests: the heap frozen again once a load, an eviction, a park or a compile changed what
        lives in it (toolkit/gc_heap.py), so no collection during a request walks the model's objects."""
        c = self.pool.counters
        self.heap.settle((id(self.holder), c["misses"], c["evictions"], c["parked"], *self.compiler.graphs()))

    def _next_request(self, timeout: float) -> Optional[Request]:
        req = self.queue.pop(timeout if self._tasks.empty() else 0)
        if req is not None:
            self._announce_positions()
        return req

    def _run_tasks(self) -> None:
        while True:
            try:
                fn, reply = self._tasks.get_nowait()
            except queue.Empty:
                return
            try:
                reply.put((True, fn()))
            except Exception as e:  # handed back to the caller's thread
                reply.put((False, e))

    def _execute(self, req: Request, group: Optional[BatchGroup] = None) -> None:
        """One request, all its images: on the main thread, or on its own thread in ``group`` (batching.py)."""
        started = time.monotonic()
        self._thread.req, self._thread.joined = req, group is not None
        if group is None:
            reset_vram_peak()
        req.timings["queued_s"] = round(time.time() - req.created, 4)
        # Wall-clock stamps: where a queue of requests loses time between them (testing/bench/engine_process.py
        # queue_row: the next request's picked_at against this one's sampled_at).
        req.timings["picked_at"] = round(time.time(), 4)
        if group is None:  # the ETAs follow the line's oldest running request, not those that joined it
            self.run_times.picked = (req.id, started)
        submitted = 0  # results handed to the saver: a failure's frames must come after theirs
        try:
            if req.cancelled.is_set():
                raise GenerationCancelled()
            first_load = 0.0
            for image in req.images():
                if req.stream.closed:  # saving an earlier result failed: the request ended with that error
                    break
                self._make(req, image, started if image.index == 0 else time.monotonic(), group)
                if image.index == 0:
                    first_load = req.timings.get("load_s") or 0.0
                submitted += 1
            self._record_run(req, started, first_load, submitted)
            # Freed only now, after sampling: parking in RAM or freeing never delays the request that caused
            # it (its file is written meanwhile), and the pre-load eviction makes room earlier when tight. While
            # requests share steps, once the last of them is done (``_drain_group``).
            if self._group is None:
                self.pool.release_unused(stop=lambda: len(self.queue) > 0)
        except BaseException as e:
            code, message = self._failure(req, e)
            print(req.log_line(f"{code}: {message.splitlines()[0] if message else ''}"[:300]), flush=True)
            if submitted:
                self.saver.submit(lambda: req.stream.finish(False, code, message))
            else:
                req.stream.finish(False, code, message)
            if not isinstance(e, Exception):  # KeyboardInterrupt: the engine is stopping mid-request
                raise
        finally:
            self.queue.finished(req)
            self._thread.req = None
            if self._group is not None:
                self._group.leave(req.id)

    def _record_run(self, req: Request, started: float, load_s: float, images: int) -> None:
        """A run that made all its images: its seconds per image (load apart) for the ETAs of runs like it."""
        model = (req.model_class.arch, req.model.name_or_path)
        if images and images == req.batch_count:
            image_s = (time.monotonic() - started - load_s) / images
            switched = self._last_model is not None and self._last_model != model
            self.run_times.record(
                self._run_key(req)[0], image_s, req.timings.get("step_s"), load_s if switched else None
            )
        self._last_model = model

    def _make(self, req: Request, image, started: float, group: Optional[BatchGroup] = None) -> None:
        """One result of the request (a batch makes several): sample it here, save it on the saver thread."""
        req.sample = image.sample
        if group is None:
            self.run_times.progress = Progress(req.id, image.index, image.count)
        if image.count > 1:
            req.stream.emit(
                "status",
                stage=req.stage,
                message=f"Image {image.index + 1} of {image.count}",
                image=image.index + 1,
                images=image.count,
            )
        try:
            media = self._load_and_generate(req, started, group)
        finally:
            if req.sample.upscaled_input:  # the upscaler's output: scratch, never an input the user gave
                with contextlib.suppress(OSError):
                    os.remove(req.sample.upscaled_input)
        self.memory.observe(req.plan, req.timings)  # a streamed step slower than planned: re-plan the next
        req.timings["sample_s"] = round(time.monotonic() - started - req.timings["load_s"], 4)
        self._on_status(req, "Saving", "saving")
        req.timings.update(sampled_at=round(time.time(), 4), stage_s=req.clock.stage_seconds())
        timings = dict(req.timings)  # the next image's sampling rewrites req.timings while this one saves
        self.saver.submit(lambda: self.outputs.save_result(req, media, started, image, timings))

    def _failure(self, req: Request, error: BaseException) -> tuple[str, str]:
        """The error frame's code and message for what ended a request."""
        if isinstance(error, GenerationCancelled):
            return "cancelled", "Cancelled"
        if isinstance(error, LoadFailed):
            return "load_failed", str(error)
        if isinstance(error, (LoraMismatch, DownloadRefused, upscalers.UpscalerMismatch)):  # its files, refused
            return "bad_request", str(error)
        if isinstance(error, PlanDoesNotFit):
            return "too_large", str(error)
        if not isinstance(error, Exception):
            return "cancelled", "Engine stopping"
        if is_oom(error):
            where = self.memory.oom_snapshot(req.stage, error)
            free_after_oom(error)
            return "oom", self.memory.oom_message(where, error)
        traceback.print_exception(error)  # a bug: the client gets one line, the engine log where it happened
        return "internal", f"{type(error).__name__}: {error}"[:2000]

    def _load_and_generate(self, req: Request, started: float, group: Optional[BatchGroup] = None):
        """Plan, load, sample. Out of memory under an automatic plan, loading or sampling: once more, with a plan
        that reserves a wider working set (an estimate was short, or something else took memory meanwhile).
        A request that joined a group samples on the group's holder and plan (its key says they are its own)."""
        if group is not None:
            req.plan, req.timings["load_s"] = group.plan, round(time.monotonic() - started, 4)
            self._upscaled_start(req)
            return self._generate(group.holder, req, group.batcher.member(req.id))
        self.sources.prepare_load(req.model_class, req.model)  # download rules, before a plan reads hub files
        for attempt in (1, 2):
            plan = self.memory.plan(req.model_class, req.model, req.sample, self.resident.plan_of(req.model))
            if plan is not None:
                req.stream.emit("status", stage="loading", message=plan.message(), memory=plan.describe())
            req.plan = plan  # the result file names its placement
            try:
                # No local keeps the holder: a failed plan's holder (its 8-bit copies on the GPU) must be gone
                # before the next plan loads.
                return self._generate_on(self._holder_for(req, plan, started), req, plan)
            except Exception as e:
                sharing = self._group is not None and self._group.others(req.id)  # others sample on this holder
                if attempt == 2 or plan is None or not is_oom(e) or sharing:
                    raise
                where = self.memory.oom_snapshot(req.stage, e)
                if not self.memory.widen_after_oom(req.model_class.arch, plan, where):
                    raise
                self.resident.drop()
                # What the failed plan loaded is no longer this request's: the next plan's loads may evict it.
                self.pool.begin_request()
                free_after_oom(e)
                req.stream.emit(
                    "status",
                    stage="loading",
                    oom=where,
                    message=self.memory.replan_message(req.model_class.arch, plan, where),
                )

    def _generate_on(self, holder, req: Request, plan):
        """The upscaler's pass after the holder (a component this request uses, as its others are), then sampling,
        alone or sharing steps."""
        self._upscaled_start(req)
        return self._generate(holder, req, self._member_for(req, holder, plan))

    def _upscaled_start(self, req: Request) -> None:
        """An upscale that names an upscaler model: the start image through it, at the result's size, before the
        refine samples (toolkit/models/upscalers.py); the network is a pool component like any other."""
        gen = req.sample
        if not gen.upscaler or gen.upscaled_input:
            return
        req.stream.emit("status", stage="loading", message=f"Upscaling with {os.path.basename(gen.upscaler)}")
        with active_pool(self.pool):
            upscalers.prepare_start(gen, self.device, self._scratch)

    def _holder_for(self, req: Request, plan, started: float):
        holder = self.resident.for_request(
            req.model_class,
            req.model,
            plan,
            lambda message: req.stream.emit("status", stage="loading", message=message),
        )
        req.timings["load_s"] = round(time.monotonic() - started, 4)
        return holder

    def _generate(self, holder, req: Request, member=None):
        state = {"t0": time.monotonic()}
        req.clock = StepClock(self.device)
        holder.sample_step_hook = lambda step: self._on_step(req, step, state)  # this thread's (BaseModel)
        try:
            media = holder.generate_media(req.sample, batch=member)  # this image's (Request.images)
        except BaseException:
            # The CPU runs up to a step ahead of the GPU: waiting for a failed request's last previews would
            # wait for the steps queued ahead, and its error frame would come a step late.
            self._latents().discard()
            raise
        finally:
            holder.sample_step_hook = None
        self._latents().flush()  # the last latent frames go out before the result
        req.timings.update(req.clock.timings())
        return media

    def _maybe_idle_unload(self) -> None:
        if (
            self.idle_unload_seconds
            and self.pool.entries
            and time.monotonic() - self._idle_since > self.idle_unload_seconds
        ):
            self.unload()

    def unload(self, keys: Optional[list[str]] = None) -> dict:
        """Main thread only. Everything, or the named pool entries; the holder goes too if it used one of them."""
        named = set(keys) if keys is not None else None
        if named is None or self.resident.uses_any(named):
            self.resident.drop()
        unloaded = self.pool.unload(keys)
        self._set_info(self._idle_text(), force=True)
        return {"unloaded": unloaded, "resident_bytes": self.pool.resident_bytes()}

    def unload_all(self) -> dict:
        return self.unload(None)

    def warm_up(self) -> None:
        """Pay a fresh process's first-use costs before a user waits on them (``warm_up_process``); requests
        that arrive meanwhile wait in the queue as usual."""
        from toolkit.models.compile import warm_up_compiler
        from toolkit.models.components.loading import warm_up_process

        self._set_info("Warming up", force=True)
        started = time.monotonic()
        warm_up_process(self.device)
        if self.compiler.mode != "off":
            warm_up_compiler()
        self.warm_up_s = round(time.monotonic() - started, 3)

    def load_default(self, model: dict) -> None:
        """Warm load at start-up (``engine.default_model``), so the first request only samples."""
        self.sources.prepare_default(model)
        self.resident.load_default(model, self.memory)
        self._set_info(self._idle_text(), force=True)

    def shutdown(self, message: str = "Engine stopped") -> None:
        """End every open stream with an error frame; the server then closes the responses."""
        for req in self.queue.drain():
            req.cancelled.set()
            req.stream.finish(False, "cancelled", message)

    def _idle_text(self) -> str:
        return self.resident.idle_text()

    def _set_info(self, text: str, force: bool = False) -> None:
        last_t, last_text = self._last_info
        now = time.monotonic()
        if text == last_text or (not force and now - last_t < INFO_INTERVAL_S):
            return
        self._last_info = (now, text)
        try:
            self._on_info(text)
        except Exception as e:  # a locked DB must never fail a generation
            print(f"[engine] could not write job info: {e}", flush=True)
