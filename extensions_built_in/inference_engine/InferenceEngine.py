"""The engine as a job process: Job-row status, the server's lifecycle, engine.json, the main-thread loop.

Stopping is always the same path, whatever asked for it (Job.stop from the UI, SIGINT, SIGTERM): a
KeyboardInterrupt in the main thread, then in-flight streams end with an ``error`` frame, the server stops,
engine.json is removed, memory is freed, and run.py records ``stopped`` and exits 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import threading
import time

from extensions_built_in.inference_engine.private_file import write_private_json
from jobs.process.BaseExtensionProcess import BaseExtensionProcess
from toolkit.paths import MODELS_PATH, TOOLKIT_ROOT
from toolkit.ui_job_status import DEFAULT_SQLITE_DB_PATH, UIJobStatus

STREAM_FLUSH_S = 2.0  # how long closing streams get to deliver their last frames before the server stops
SAVE_DRAIN_S = 60.0  # how long results already sampled get to be written when the engine stops


class InferenceEngine(BaseExtensionProcess):
    def __init__(self, process_id, job, config):
        super().__init__(process_id, job, config)
        self.ui = UIJobStatus(self.get_conf("sqlite_db_path", DEFAULT_SQLITE_DB_PATH))
        self.device_name = self.get_conf("device", getattr(job, "device", None) or "auto")
        training_folder = self.get_conf("training_folder", os.path.join(TOOLKIT_ROOT, "output"))
        self.job_folder = os.path.abspath(self.get_conf("engine.job_folder", os.path.join(training_folder, job.name)))
        self.output_folder = os.path.abspath(
            self.get_conf("engine.output_folder", os.path.join(self.job_folder, "outputs"))
        )
        self.assets_folder = os.path.abspath(
            self.get_conf("engine.assets_folder", os.path.join(self.job_folder, "assets"))
        )
        self.idle_unload_seconds = float(self.get_conf("engine.idle_unload_seconds", 0))
        self.keep_resident_gb = float(self.get_conf("engine.keep_resident_gb", 0))
        self.keep_in_ram_gb = float(self.get_conf("engine.keep_in_ram_gb", 0))
        self.max_queue = int(self.get_conf("engine.max_queue", 64))
        self.assets_max_gb = float(self.get_conf("engine.assets_max_gb", 2.0))
        self.vram_budget_gb = float(self.get_conf("engine.vram_budget_gb", 0) or 0)
        self.memory = str(self.get_conf("engine.memory", "auto"))
        self.memory_qtype = str(self.get_conf("engine.memory_qtype", "auto"))
        self.memory_quality = str(self.get_conf("engine.memory_quality", "balanced"))  # toolkit/memory_quality.py
        self.compile = str(self.get_conf("engine.compile", "auto"))  # off | auto | max (toolkit/models/compile.py)
        self.compile_cache_dir = self.get_conf("engine.compile_cache_dir")
        self.attention = str(self.get_conf("engine.attention", "auto"))  # toolkit/models/attention.py
        self.freeze_heap = bool(self.get_conf("engine.freeze_heap", True))  # toolkit/gc_heap.py
        self.prompt_cache = int(self.get_conf("engine.prompt_cache", 16))  # toolkit/models/prompt_cache.py
        self.assets_max_age_hours = float(self.get_conf("engine.assets_max_age_hours", 168.0))
        # AI Toolkit writes the LoRAs it trains into the training folder: they load without configuration.
        self.lora_roots = self.get_conf("engine.lora_roots") or [MODELS_PATH, os.path.abspath(training_folder)]
        # Request paths to checkpoints must lie under these (model_sources.py; None: the models folder and the
        # Hugging Face cache); the operator's own default_model and models aliases below may point anywhere.
        self.model_roots = self.get_conf("engine.model_roots")
        self.allow_downloads = bool(self.get_conf("engine.allow_downloads", True))
        self.max_download_gb = self.get_conf("engine.max_download_gb")  # None: no cap
        self.default_model = self.get_conf("engine.default_model")
        self.models = self.get_conf("engine.models")  # alias -> model settings, for the OpenAI Images API
        self.warm_up = bool(self.get_conf("engine.warm_up", True))
        self.engine_json = os.path.join(self.job_folder, "engine.json")
        self.stop_event = threading.Event()

    def run(self):
        from extensions_built_in.inference_engine.engine import Engine
        from extensions_built_in.inference_engine.server import EngineServer
        from toolkit.device import resolve_device

        self.claim_folders()
        self.ui.update_status("running", "Starting server")
        self.ui.start_stop_watcher()
        previous_sigterm = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        os.makedirs(self.job_folder, exist_ok=True)
        engine = Engine(
            resolve_device(self.device_name),
            self.output_folder,
            self.assets_folder,
            idle_unload_seconds=self.idle_unload_seconds,
            keep_resident_gb=self.keep_resident_gb,
            keep_in_ram_gb=self.keep_in_ram_gb,
            max_queue=self.max_queue,
            assets_max_gb=self.assets_max_gb,
            assets_max_age_hours=self.assets_max_age_hours,
            vram_budget_gb=self.vram_budget_gb,
            memory=self.memory,
            memory_qtype=self.memory_qtype,
            memory_quality=self.memory_quality,
            compile=self.compile,
            compile_cache_dir=self.compile_cache_dir,
            attention=self.attention,
            freeze_heap=self.freeze_heap,
            prompt_cache=self.prompt_cache,
            lora_roots=self.lora_roots,
            model_roots=self.model_roots,
            allow_downloads=self.allow_downloads,
            max_download_gb=self.max_download_gb,
            default_model=self.default_model,
            models=self.models,
            on_info=lambda text: self.ui.update(info=text),
        )
        token = secrets.token_urlsafe(32)
        server = EngineServer(engine, token)
        try:
            port = server.start()
            self.write_engine_json(server.host, port, token)
            print(
                f"Inference engine listening on http://{server.host}:{port} (device {engine.device})\n"
                f"  token and endpoint: {self.engine_json}\n"
                f"  outputs: {self.output_folder}",
                flush=True,
            )
            if self.warm_up:
                engine.warm_up()
            if self.default_model:
                engine.load_default(dict(self.default_model))
            engine.serve(self.stop_event)
        finally:
            # engine.json goes first so no client finds a dead engine.
            self.ui.stop_watcher()
            with uninterruptible(previous_sigterm):
                self.remove_engine_json()
                engine.shutdown("Engine stopping")
                engine.saver.drain(SAVE_DRAIN_S)  # results already sampled are written and announced
                _wait_for_streams(engine, STREAM_FLUSH_S)
                server.stop()
                engine.unload_all()

    def claim_folders(self) -> None:
        """Before anything serves or deletes in them (folders.py): the job folder's own ``outputs`` and ``assets``
        are the engine's; a folder configured elsewhere must be empty, absent, or marked by an earlier run."""
        from extensions_built_in.inference_engine.folders import claim_all

        claim_all(
            {
                "outputs": (self.output_folder, _same(self.output_folder, os.path.join(self.job_folder, "outputs"))),
                "assets": (self.assets_folder, _same(self.assets_folder, os.path.join(self.job_folder, "assets"))),
            }
        )

    def write_engine_json(self, host: str, port: int, token: str) -> None:
        """0600 from the first byte, under a fresh temp name (private_file.py): the token in it is the only key
        to the engine."""
        data = {
            "host": host,
            "port": port,
            "token": token,
            "pid": os.getpid(),
            "started_at": time.time(),
            "url": f"http://{host}:{port}",
            "output_folder": self.output_folder,
        }
        write_private_json(self.engine_json, data)  # the cluster's engine.json goes through here too

    def remove_engine_json(self) -> None:
        """Only our own: after a stop and a restart, the new run's engine.json has another pid in it."""
        try:
            with open(self.engine_json, encoding="utf-8") as f:
                if json.load(f).get("pid") != os.getpid():
                    return
            os.remove(self.engine_json)
        except (FileNotFoundError, ValueError):
            pass

    def on_error(self, e):
        self.stop_event.set()
        self.ui.on_error(e)


@contextlib.contextmanager
def uninterruptible(previous_sigterm):
    """A stop is often signalled twice (the UI's SIGINT, then the watcher seeing Job.stop): once cleanup starts
    nothing may interrupt it. Afterwards SIGINT is as it was and SIGTERM is ``previous_sigterm``."""
    previous_sigint = signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous_sigint)
        signal.signal(signal.SIGTERM, previous_sigterm)


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _wait_for_streams(engine, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and engine.open_streams():
        time.sleep(0.05)
