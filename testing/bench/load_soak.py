"""What a long load run adds to load_test.py: the engine killed and the UI restarted in the middle, the RSS
plateau read from the samples, and every result file checked at the end.

The kill is ``kill -9`` of the engine process, the UI is stopped and started again at once (so its reaper, not
its exit handler, finds the dead engine), and the engine job is started again through the UI's own routes, as a
user would. Requests in flight while that happens fail on purpose: they are counted as interrupted, not lost.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import time
from pathlib import Path

import httpx

PLATEAU_WINDOW_S = 1800  # the growth the issue bounds: over the last 30 minutes
PLATEAU_SPAN_S = 120  # each end of that window is the median of this long a span (RSS moves with load)


def rss_growth(samples: list, window_s: float = PLATEAU_WINDOW_S, span_s: float = PLATEAU_SPAN_S) -> dict:
    """RSS at the end of the run against RSS ``window_s`` earlier, each the median of ``span_s`` of samples,
    for the engine process that served the end (a killed one's samples are another process's)."""
    if not samples:
        return {"growth_mb": None, "why": "no samples"}
    pid, end = samples[-1]["pid"], samples[-1]["t"]
    same = [s for s in samples if s["pid"] == pid]
    if end - same[0]["t"] < window_s:
        return {"growth_mb": None, "why": f"the last engine ran {end - same[0]['t']} s, under {window_s} s"}
    start = end - window_s
    first = [s["rss_mb"] for s in same if start <= s["t"] <= start + span_s]
    last = [s["rss_mb"] for s in same if s["t"] >= end - span_s]
    growth = statistics.median(last) - statistics.median(first)
    return {"growth_mb": round(growth, 1), "from_t": start, "to_t": end, "pid": pid}


def check_results(paths: list) -> dict:
    """Every result the run was told about is still there, whole (its image decodes, its sidecar parses), and
    no temp file is left in the output folder (the engine that replaced a killed one removes those at start)."""
    from PIL import Image

    missing, broken = [], []
    for path in paths:
        if not os.path.isfile(path):
            missing.append(path)
            continue
        try:
            with Image.open(path) as image:
                image.load()
            with open(Path(path).with_suffix(".json"), encoding="utf-8") as f:
                json.load(f)
        except (OSError, ValueError) as e:
            broken.append(f"{path}: {e}")
    folders = {os.path.dirname(p) for p in paths}
    leftovers = [
        os.path.join(folder, ".tmp", name)
        for folder in folders
        if os.path.isdir(os.path.join(folder, ".tmp"))
        for name in os.listdir(os.path.join(folder, ".tmp"))
    ]
    leftovers += [
        os.path.join(folder, name)
        for folder in folders
        for name in os.listdir(folder)
        if name.endswith(".tmp") and os.path.isfile(os.path.join(folder, name))
    ]
    return {"results": len(paths), "missing": missing[:10], "broken": broken[:10], "temp_files_left": leftovers[:10]}


class KillAndRestart:
    """At ``at_s`` into the run: ``kill -9`` the engine, restart the UI, wait for the Job row to say ``error``,
    start the engine job again and point the run at the new engine."""

    def __init__(self, at_s: float, ui, target, stats):
        self.at_s, self.ui, self.target, self.stats = at_s, ui, target, stats
        self.report: dict = {}

    async def run(self, started: float) -> None:
        await asyncio.sleep(max(0.0, started + self.at_s - time.monotonic()))
        self.stats.interrupted_from = time.monotonic()
        self.report = await asyncio.to_thread(self._kill_and_restart, started)
        self.stats.interrupted_until = time.monotonic() + 5  # streams the old UI held end within its timeouts

    def _kill_and_restart(self, started: float) -> dict:
        t0 = time.monotonic()
        killed = self.target.engine_pid
        os.kill(killed, signal.SIGKILL)
        self.ui.restart()
        status = self.ui.wait_for_job_status("error", 180)
        self.ui.start_engine_job()
        self.target.engine_pid = self.ui.wait_for_engine(timeout=600, exclude_pid=killed)  # a start under full load
        return {
            "at_s": round(t0 - started, 1),
            "killed_pid": killed,
            "job_status_after_kill": status,
            "new_engine_pid": self.target.engine_pid,
            "new_engine_after_s": round(time.monotonic() - t0, 1),
        }


class UIProcess:
    """The built UI as a process of this run, with the one engine job it serves."""

    def __init__(self, work: Path, port: int, token: str, env: dict, job_name: str):
        self.work, self.port, self.token, self.env, self.job_name = work, port, token, env, job_name
        self.base = f"http://127.0.0.1:{port}"
        self.headers = {"authorization": f"Bearer {token}"}
        self.proc = None
        self.job_id = None

    def start(self) -> None:
        import subprocess

        from testing.engine_harness import wait_for

        log = open(self.work / "ui.log", "a")
        root = Path(__file__).resolve().parents[2]
        self.proc = subprocess.Popen(
            ["node", "scripts/start.mjs"], cwd=root / "ui", env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        wait_for(self._up, 120, "the UI")

    def server_pid(self) -> int:
        """Next's server: the child that scripts/start.mjs spawns (the parent only relays signals)."""
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            return int(f.read().split()[0])

    def restart(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except Exception:
            self.proc.kill()
        self.start()

    def _up(self) -> bool:
        try:
            return httpx.get(f"{self.base}/api/jobs", headers=self.headers, timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def create_engine_job(self, engine: dict) -> None:
        process = {"type": "InferenceEngine", "device": "cpu", "engine": engine}
        config = {"job": "extension", "config": {"name": self.job_name, "process": [process]}}
        body = {"name": self.job_name, "gpu_ids": "0", "job_type": "inference", "job_config": config}
        self.job_id = httpx.post(f"{self.base}/api/jobs", headers=self.headers, timeout=30, json=body).json()["id"]

    def start_engine_job(self) -> None:
        for path in (f"/api/jobs/{self.job_id}/start", "/api/queue/0/start"):
            httpx.post(self.base + path, headers=self.headers, timeout=120).raise_for_status()

    def job_status(self) -> str:
        """The Job row's status; "" while the UI, just restarted under the run's full load, does not answer."""
        try:
            url, params = f"{self.base}/api/jobs", {"id": self.job_id}
            return httpx.get(url, params=params, headers=self.headers, timeout=30).json()["status"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return ""

    def wait_for_job_status(self, status: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        seen = self.job_status()
        while seen != status and time.monotonic() < deadline:
            time.sleep(0.5)
            seen = self.job_status()
        return seen

    def wait_for_engine(self, timeout: float = 180, exclude_pid: int = 0) -> int:
        """The pid of the engine serving behind the UI once it answers, not the one that was killed."""
        from testing.engine_harness import wait_for

        info_path = self.work / "output" / self.job_name / "engine.json"

        def serving() -> bool:
            try:
                if json.loads(info_path.read_text())["pid"] == exclude_pid:
                    return False
                health = httpx.get(f"{self.base}/api/inference/health", headers=self.headers, timeout=15)
                return health.json().get("ok") is True
            except (OSError, ValueError, KeyError, httpx.HTTPError):
                return False

        wait_for(serving, timeout, "the engine behind the UI")
        return json.loads(info_path.read_text())["pid"]
