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
from extensions_built_in.inference_engine.settings import EngineSettings
from jobs.process.BaseExtensionProcess import BaseExtensionProcess
from toolkit.paths import TOOLKIT_ROOT
from toolkit.ui_job_status import DEFAULT_SQLITE_DB_PATH, UIJobStatus

STREAM_FLUSH_S = 2.0  # how long closing streams get to deliver their last frames before the server stops
SAVE_DRAIN_S = 60.0  # how long results already sampled get to be written when the engine stops


class InferenceEngine(BaseExtensionProcess):
    def __init__(self, process_id, job, config):
        super().__init__(process_id, job, config)
        self.ui = UIJobStatus(self.get_conf("sqlite_db_path", DEFAULT_SQLITE_DB_PATH))
        self.device_name = self.get_conf("device", getattr(job, "device", None) or "auto")
        training_folder = self.get_conf("training_folder", os.path.join(TOOLKIT_ROOT, "output"))
        # Every engine.* setting and its default: settings.py (README "Engine settings").
        self.settings = EngineSettings.from_config(self.get_conf("engine")).for_job(job.name, training_folder)
        self.job_folder = self.settings.job_folder
        self.output_folder = self.settings.output_folder
        self.assets_folder = self.settings.assets_folder
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
        engine = Engine(self.settings, resolve_device(self.device_name), on_info=lambda text: self.ui.update(info=text))
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
            if self.settings.warm_up:
                engine.warm_up()
            if self.settings.default_model:
                engine.load_default(dict(self.settings.default_model))
            engine.serve(self.stop_event)
        finally:
            with uninterruptible(previous_sigterm):
                self.ui.stop_watcher()  # acknowledges the stop: the watcher's repeated SIGINTs end
                self.remove_engine_json()  # first of the cleanup, so no client finds a dead engine
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
