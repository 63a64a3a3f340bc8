"""Load and abuse test: many clients against the tiny engine, directly or through the UI's proxy.

    .venv/bin/python testing/bench/load_test.py --target engine --clients 200 --duration 300 --out RESULT.json
    .venv/bin/python testing/bench/load_test.py --target ui --clients 200 --duration 300 --out RESULT.json

Each client loops until the time is up, picking one of: a streamed generation read to its end, a ``?wait=1``
generation, a stream dropped after its first frames, a stream cancelled through ``/cancel``, a hostile body, an
upload (good or corrupt). A full queue's 429 is a refusal, and the client waits as ``Retry-After`` says (capped).
Counted: requests accepted and refused, 5xx answers (must be 0), accepted streams that did not end in a
``result`` or ``error`` frame followed by ``end`` (lost; must be 0), hostile bodies that were not refused with a
4xx, the longest queue seen (must stay within the cap), time to first byte, and the engine process's RSS and
open file descriptors every 10 s. ``--target ui`` starts the built UI (``npm run build`` first) with a
temporary DB and training folder, starts the engine as a job from it, and sends everything through
``/api/inference``. Results go to ``--out`` as JSON; ``docs/RELIABILITY.md`` holds a run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import random
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from extensions_built_in.inference_engine.protocol import FrameDecoder  # noqa: E402
from testing.bench.load_soak import KillAndRestart, UIProcess, check_results, rss_growth  # noqa: E402
from testing.engine_harness import wait_for  # noqa: E402

ACTIONS = [("stream", 35), ("wait", 20), ("drop", 10), ("cancel", 10), ("hostile", 15), ("upload", 10)]


def png(size=(32, 32), seed=0) -> bytes:
    import numpy as np
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(
        buf, "PNG"
    )
    return buf.getvalue()


def good_body(rng: random.Random) -> dict:
    return {
        "model": {"arch": "sd1", "name_or_path": "tiny:sd1", "dtype": "float32"},
        "sample": {
            "prompt": rng.choice(["a red circle", "a blue square", "x --w 99999 --ctrl_img /etc/passwd"]),
            "width": 64,
            "height": 64,
            "num_inference_steps": rng.randint(2, 4),
            "seed": rng.randint(0, 99),
        },
        "stream": {"every_n_steps": 1},
    }


def hostile(rng: random.Random) -> tuple[str, dict]:
    """(what, request kwargs): each must be refused with a 4xx."""
    body = good_body(rng)
    choices = [
        ("huge width", {"json": body | {"sample": body["sample"] | {"width": 100000}}}),
        ("unknown arch", {"json": body | {"model": body["model"] | {"arch": "nope"}}}),
        ("traversal", {"json": body | {"sample": body["sample"] | {"ctrl_img": "../../../../etc/passwd"}}}),
        ("bad json", {"content": b"{not json", "headers": {"content-type": "application/json"}}),
        (
            "giant body",
            {"content": b'{"x": "' + b"a" * (2 * 1024 * 1024) + b'"}', "headers": {"content-type": "application/json"}},
        ),
        ("many extras", {"json": body | {"model": body["model"] | {f"k{i}": i for i in range(100)}}}),
        ("lora escape", {"json": body | {"model": body["model"] | {"lora_path": "/etc/shadow"}}}),
        ("form post", {"content": b"model=1", "headers": {"content-type": "text/plain"}}),
    ]
    return rng.choice(choices)


class Stats:
    def __init__(self):
        self.counts: dict = {}
        self.ttfb: list = []
        self.lost: list = []
        self.server_errors: list = []
        self.not_refused: list = []
        self.max_queue = 0
        self.samples: list = []
        self.results: list = []  # every result file the run was told about, checked at the end
        self.interrupted: list = []  # requests in flight when the engine was killed on purpose
        self.interrupted_from = self.interrupted_until = float("inf")

    def engine_down(self) -> bool:
        """Inside the deliberate kill's window: from the kill until the new engine serves (and a little)."""
        return self.interrupted_from <= time.monotonic() <= self.interrupted_until

    def lose(self, how: str, detail, started: float) -> None:
        """A request that did not end as it must: lost, unless it was in flight during a deliberate kill."""
        if started <= self.interrupted_until and time.monotonic() >= self.interrupted_from:
            self.interrupted.append((how, detail))
        else:
            self.lost.append((how, detail))

    def count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1


class Target:
    """Where requests go: the engine itself, or the UI's /api/inference proxy."""

    def __init__(self, base: str, token: str, engine_pid: int, ui: Optional[UIProcess] = None):
        self.base, self.token, self.engine_pid, self.ui = base.rstrip("/"), token, engine_pid, ui

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


async def read_stream(
    response: httpx.Response, stats: Stats, started: float, stop_after: int = 0, deadline: float = 120
) -> tuple[list, bool]:
    """Frames until the end (or ``stop_after`` frames); (types, ended_properly)."""
    decoder, types, first = FrameDecoder(), [], True
    limit = time.monotonic() + deadline
    async for chunk in response.aiter_raw():
        if first:
            stats.ttfb.append(time.monotonic() - started)
            first = False
        for frame in decoder.feed(chunk):
            types.append(frame.type)
            if frame.type == "error":
                stats.count(f"error_frame_{frame.header.get('code')}")
            if frame.type == "result":
                stats.results.append(frame.header["path"])
            if frame.type == "status" and "position" in frame.header:
                stats.max_queue = max(stats.max_queue, frame.header["position"])
        if stop_after and len(types) >= stop_after:
            return types, True
        if time.monotonic() > limit:
            return types, False
    ended = bool(types) and types[-1] == "end" and any(t in ("result", "error") for t in types)
    return types, ended


async def generate(client: httpx.AsyncClient, target: Target, stats: Stats, rng: random.Random, how: str) -> None:
    started = time.monotonic()
    body = good_body(rng)
    if how == "wait":
        r = await client.post(target.url("/generate"), params={"wait": 1}, json=body, timeout=180)
        record_status(stats, r.status_code, "wait")
        if r.status_code < 300 and "result" not in r.json():
            stats.lose("wait", r.text[:200], started)
        elif r.status_code < 300:
            stats.results.append(r.json()["result"]["path"])
        return
    async with client.stream("POST", target.url("/generate"), json=body, timeout=httpx.Timeout(30, read=30)) as r:
        record_status(stats, r.status_code, how)
        if r.status_code == 429:
            await r.aread()
            stats.count("refused_queue_full")
            await asyncio.sleep(min(float(r.headers.get("retry-after", 1)), 3) * rng.random())
            return
        if r.status_code >= 300:
            await r.aread()
            return
        stats.count("accepted")
        if how == "drop":
            await read_stream(r, stats, started, stop_after=rng.randint(1, 4))
            stats.count("dropped_on_purpose")
            return
        if how == "cancel":
            request_id = r.headers.get("x-request-id")
            task = asyncio.create_task(read_stream(r, stats, started))
            try:
                await asyncio.sleep(rng.random() * 0.5)
                c = await client.post(target.url(f"/cancel/{request_id}"))
                record_status(stats, c.status_code, "cancel")
            finally:
                types, ended = await task  # its own transport error, if any, is this request's
        else:
            types, ended = await read_stream(r, stats, started)
        if not ended:
            stats.lose(how, types[-5:], started)
        stats.count("ended_with_result" if "result" in types else "ended_with_error")


def record_status(stats: Stats, status: int, what: str) -> None:
    stats.count(f"http_{status}")
    if status >= 500 and stats.engine_down():
        stats.count("5xx_while_the_engine_was_killed")  # the UI's 502/503 for an engine that is not there
    elif status >= 500:
        stats.server_errors.append((what, status))


async def abuse(client: httpx.AsyncClient, target: Target, stats: Stats, rng: random.Random) -> None:
    what, kwargs = hostile(rng)
    try:
        r = await client.post(target.url("/generate"), timeout=60, **kwargs)
    except (httpx.TransportError, httpx.TimeoutException) as e:
        raise type(e)(f"hostile {what}: {e}", request=e.request) from e
    record_status(stats, r.status_code, f"hostile {what}")
    if not 400 <= r.status_code < 500 and not (r.status_code >= 500 and stats.engine_down()):
        stats.not_refused.append((what, r.status_code))
    stats.count("hostile_refused")


async def upload(client: httpx.AsyncClient, target: Target, stats: Stats, rng: random.Random) -> None:
    good = rng.random() < 0.7
    data = png(seed=rng.randint(0, 1000)) if good else b"\x89PNG\r\n\x1a\n" + os.urandom(200)
    r = await client.post(target.url("/assets"), files={"file": ("x.png", data, "image/png")}, timeout=60)
    record_status(stats, r.status_code, "upload")
    if r.status_code >= 500 and stats.engine_down():
        return
    if good and r.status_code != 201 or not good and r.status_code != 422:
        stats.not_refused.append(("upload good" if good else "upload corrupt", r.status_code))


async def client_loop(i: int, client: httpx.AsyncClient, target: Target, stats: Stats, deadline: float) -> None:
    rng = random.Random(i)
    names, weights = zip(*ACTIONS)
    async with client:
        while time.monotonic() < deadline:
            how = rng.choices(names, weights)[0]
            started = time.monotonic()
            try:
                if how == "hostile":
                    await abuse(client, target, stats, rng)
                elif how == "upload":
                    await upload(client, target, stats, rng)
                else:
                    await generate(client, target, stats, rng, how)
            except (httpx.TransportError, httpx.TimeoutException) as e:
                stats.count(f"transport_{type(e).__name__}")
                if how not in ("drop",):
                    detail = f"{type(e).__name__}: {e!r} {e.request.method} {e.request.url.path}"[:300]
                    stats.lose(how, detail, started)
                await asyncio.sleep(0.5)
            if stats.engine_down():  # a client backs off while the engine is gone, as any retrying client does
                await asyncio.sleep(1 + rng.random())


def process_sample(pid: int) -> dict:
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return {"rss_mb": round(rss / 1024, 1), "fds": len(os.listdir(f"/proc/{pid}/fd"))}


async def sampler(target: Target, stats: Stats, deadline: float, every: float = 10.0) -> None:
    """The engine's RSS and open descriptors (and the UI server's RSS, through the UI) every ``every`` s, named by
    pid: after a deliberate kill the samples are the new engine's."""
    started = time.monotonic()
    while True:
        sample = {"t": round(time.monotonic() - started), "pid": target.engine_pid}
        with contextlib.suppress(OSError, StopIteration):  # the engine is down for a moment after a kill
            sample |= process_sample(target.engine_pid)
            if target.ui is not None:
                sample["ui_rss_mb"] = process_sample(target.ui.server_pid())["rss_mb"]
            stats.samples.append(sample)
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(min(every, max(0.0, deadline - time.monotonic())))


async def run(target: Target, clients: int, duration: float, kill_engine_at: float = 0) -> tuple[Stats, dict]:
    stats = Stats()
    headers = {"authorization": f"Bearer {target.token}"}
    tls = ssl.create_default_context()  # one for all: each client loading the CA bundle took ~80 ms of the loop,
    pool = [httpx.AsyncClient(headers=headers, timeout=60, verify=tls) for _ in range(clients)]  # before the clock
    started = time.monotonic()
    deadline = started + duration
    tasks = [
        sampler(target, stats, deadline),
        *(client_loop(i, c, target, stats, deadline) for i, c in enumerate(pool)),
    ]
    chaos = KillAndRestart(kill_engine_at, target.ui, target, stats) if kill_engine_at else None
    if chaos:
        tasks.append(chaos.run(started))
    await asyncio.gather(*tasks)
    return stats, chaos.report if chaos else {}


# ---------------------------------------------------------------------------------------------- targets
def start_engine(work: Path, max_queue: int) -> tuple[subprocess.Popen, Target]:
    config = work / "load_engine.json"
    config.write_text(
        json.dumps(
            {
                "job": "extension",
                "config": {
                    "name": "load",
                    "process": [
                        {
                            "type": "InferenceEngine",
                            "device": "cpu",
                            "engine": {"job_folder": str(work / "job"), "max_queue": max_queue},
                        }
                    ],
                },
            }
        )
    )
    log = open(work / "engine.log", "w")
    proc = subprocess.Popen([sys.executable, "run.py", str(config)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    info_path = work / "job" / "engine.json"
    wait_for(lambda: info_path.exists(), 120, "engine.json")
    info = json.loads(info_path.read_text())
    return proc, Target(info["url"], info["token"], info["pid"])


def start_ui(work: Path, max_queue: int, port: int) -> tuple[list, Target]:
    token = "load-test-token"
    env = {
        **os.environ,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "AITK_DB_PATH": str(work / "aitk_db.db"),
        "AITK_TRAINING_FOLDER": str(work / "output"),
        "AI_TOOLKIT_AUTH": token,
        "NEXT_TELEMETRY_DISABLED": "1",
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }
    ui = UIProcess(work, port, token, env, "load_engine")
    ui.start()
    ui.create_engine_job({"max_queue": max_queue})
    ui.start_engine_job()
    pid = ui.wait_for_engine()
    return [], Target(f"{ui.base}/api/inference", token, pid, ui)


def summarize(stats: Stats, target: str, clients: int, duration: float, max_queue: int) -> dict:
    ttfb = sorted(stats.ttfb)
    q = (lambda p: round(ttfb[min(len(ttfb) - 1, int(p * len(ttfb)))] * 1000, 1)) if ttfb else (lambda p: None)
    warm = [s for s in stats.samples if s["t"] >= 30] or stats.samples
    return {
        "target": target,
        "clients": clients,
        "duration_s": duration,
        "max_queue": max_queue,
        "counts": dict(sorted(stats.counts.items())),
        "server_errors": len(stats.server_errors),
        "server_error_examples": stats.server_errors[:5],
        "lost": len(stats.lost),
        "lost_examples": stats.lost[:5],
        "interrupted_by_the_kill": len(stats.interrupted),
        "hostile_not_refused": stats.not_refused[:10],
        "max_queue_position_seen": stats.max_queue,
        "ttfb_ms": {"p50": q(0.5), "p95": q(0.95), "n": len(ttfb)},
        "engine": {
            "samples": stats.samples,
            "rss_mb_after_warmup": [min(s["rss_mb"] for s in warm), max(s["rss_mb"] for s in warm)],
            "fds_after_warmup": [min(s["fds"] for s in warm), max(s["fds"] for s in warm)],
            "rss_growth_last_30_min": rss_growth(stats.samples),
        },
        "results_at_the_end": check_results(stats.results),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", choices=("engine", "ui"), default="engine")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--duration", type=float, default=300)
    parser.add_argument("--max-queue", type=int, default=64)
    parser.add_argument("--port", type=int, default=8677)
    parser.add_argument("--out", help="write the summary JSON here")
    parser.add_argument(
        "--nice",
        type=int,
        default=10,
        help="lower this load generator's priority by this much "
        "once the engine (and UI) run, so that on a small machine the latency is the engine's",
    )
    parser.add_argument(
        "--kill-engine-at",
        type=float,
        default=0,
        help="seconds in: kill -9 the engine, restart the UI, start the engine job again (--target ui)",
    )
    args = parser.parse_args()
    if args.kill_engine_at and args.target != "ui":
        parser.error("--kill-engine-at restarts the UI: use it with --target ui")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(prefix="aitk-load-") as tmp:
        work = Path(tmp)
        procs = []
        try:
            if args.target == "engine":
                proc, target = start_engine(work, args.max_queue)
                procs.append(proc)
            else:
                procs, target = start_ui(work, args.max_queue, args.port)
                procs.append(target.ui)
            os.nice(args.nice)  # the engine and UI started above keep their priority
            stats, kill = asyncio.run(run(target, args.clients, args.duration, args.kill_engine_at))
            time.sleep(1)
            alive = httpx.get(target.url("/health"), headers={"authorization": f"Bearer {target.token}"}, timeout=10)
            summary = summarize(stats, args.target, args.clients, args.duration, args.max_queue)
            summary["engine_answers_after"] = alive.status_code == 200 and alive.json().get("ok") is True
            summary["kill_and_restart"] = kill
        finally:
            procs = [getattr(p, "proc", p) for p in procs]  # the UI's current process
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
            if args.target == "ui":
                subprocess.run(["pkill", "-INT", "-f", str(work)], check=False)  # the engine job is detached
            if args.out:  # the processes' logs outlive the run's folder: a failed soak is read from them
                keep = Path(args.out).with_suffix(".logs")
                shutil.rmtree(keep, ignore_errors=True)
                shutil.copytree(work, keep, ignore=shutil.ignore_patterns("outputs", "assets", ".thumbs", "*.db*"))
    print(
        json.dumps(
            {k: v for k, v in summary.items() if k != "engine"}
            | {"engine": {k: v for k, v in summary["engine"].items() if k != "samples"}},
            indent=2,
        )
    )
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2))
    results, growth = summary["results_at_the_end"], summary["engine"]["rss_growth_last_30_min"]["growth_mb"]
    ok = (
        not (results["missing"] or results["broken"] or results["temp_files_left"])
        and (growth is None or growth < 5)
        and (not args.kill_engine_at or kill.get("job_status_after_kill") == "error")
        and summary["server_errors"] == 0
        and summary["lost"] == 0
        and not summary["hostile_not_refused"]
        and summary["max_queue_position_seen"] <= args.max_queue
        and summary["engine_answers_after"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
