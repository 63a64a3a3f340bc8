"""One engine as the child process of its replica: ``python run.py <config>``, exactly as a user runs it.

A replica runs a real engine job rather than the ``Engine`` class in the actor: the engine owns its process's
main thread (model state has one owner), its stop path, log and engine.json are the tested ones, and the
replica actor stays free of torch. The replica reaches it over loopback with the token from its engine.json.

The engine must not outlive its replica. It runs in its own process group (``stop`` signals the group, so
anything it started goes too) and asks the kernel for SIGTERM when its parent thread dies
(``PR_SET_PDEATHSIG``): a replica killed with ``ray.kill`` or by the OOM killer runs no cleanup, and its engine
would otherwise hold its GPU until someone notices. The signal follows the *thread* that forked: replicas
start their engine from Serve's user-code thread, which lives as long as the replica.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from typing import Optional

TOOLKIT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 15.0  # the engine's own stop drains its saver and ends its streams first


class EngineStartFailed(RuntimeError):
    pass


def engine_job_config(name: str, job_folder: str, engine: dict, device: str) -> dict:
    """An ``InferenceEngine`` job for one replica: the cluster's ``engine:`` settings, its own job folder."""
    settings = dict(engine) | {"job_folder": job_folder}
    process = {"type": "InferenceEngine", "device": device, "engine": settings}
    return {"job": "extension", "config": {"name": name, "process": [process]}}


class EngineProcess:
    def __init__(self, job_folder: str, config: dict):
        self.job_folder = job_folder
        self.engine_json = os.path.join(job_folder, "engine.json")
        self.config_path = os.path.join(job_folder, "engine_config.json")
        self.log_path = os.path.join(job_folder, "log.txt")
        self.config = config
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> None:
        os.makedirs(self.job_folder, exist_ok=True)
        _remove(self.engine_json)  # a previous run's file would name a dead engine
        with open(self.config_path, "w", encoding="utf-8") as f:
            json.dump(self.config, f, indent=2)
        env = {k: v for k, v in os.environ.items() if k != "AITK_JOB_ID"}  # the Job row is the cluster's
        env["PYTHONUNBUFFERED"] = "1"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "run.py", self.config_path],
                cwd=TOOLKIT_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),
            )

    async def wait_ready(self, timeout: float) -> dict:
        """engine.json once the engine listens (its pid must be our child's)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self._read_engine_json()
            if info is not None and info.get("pid") == self.proc.pid:
                return info
            if self.proc.poll() is not None:
                raise EngineStartFailed(f"the engine exited with {self.proc.returncode}:\n{self.log_tail()}")
            await asyncio.sleep(0.1)
        self.stop()
        raise EngineStartFailed(f"the engine did not write engine.json within {timeout:g} s:\n{self.log_tail()}")

    def _read_engine_json(self) -> Optional[dict]:
        try:
            with open(self.engine_json, encoding="utf-8") as f:
                return json.load(f)
        except (FileNotFoundError, ValueError):
            return None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc is not None else None

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM to the engine's group (its clean stop), SIGKILL if it is still there after ``grace_s``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        _signal_group(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def log_tail(self, chars: int = 3000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - chars))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


def _die_with_parent(parent_pid: int):
    """The child's pre-exec step. libc and prctl are looked up here, in the parent: the child of a threaded
    process may only call what needs no lock another thread could have held at the fork."""
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl

    def pre_exec():
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
        if os.getppid() != parent_pid:  # the parent died before prctl: nobody would send the signal
            os._exit(1)

    return pre_exec


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
