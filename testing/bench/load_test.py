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
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from extensions_built_in.inference_engine.protocol import FrameDecoder  # noqa: E402
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

    def count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1


class Target:
    """Where requests go: the engine itself, or the UI's /api/inference proxy."""

    def __init__(self, base: str, token: str, engine_pid: int):
        self.base, self.token, self.engine_pid = base.rstrip("/"), token, engine_pid

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
            stats.lost.append(("wait", r.text[:200]))
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
            await asyncio.sleep(rng.random() * 0.5)
            c = await client.post(target.url(f"/cancel/{request_id}"))
            record_status(stats, c.status_code, "cancel")
            types, ended = await task
        else:
            types, ended = await read_stream(r, stats, started)
        if not ended:
            stats.lost.append((how, types[-5:]))
        stats.count("ended_with_result" if "result" in types else "ended_with_error")


def record_status(stats: Stats, status: int, what: str) -> None:
    stats.count(f"http_{status}")
    if status >= 500:
        stats.server_errors.append((what, status))


async def abuse(client: httpx.AsyncClient, target: Target, stats: Stats, rng: random.Random) -> None:
    what, kwargs = hostile(rng)
    try:
        r = await client.post(target.url("/generate"), timeout=60, **kwargs)
    except (httpx.TransportError, httpx.TimeoutException) as e:
        raise type(e)(f"hostile {what}: {e}", request=e.request) from e
    record_status(stats, r.status_code, f"hostile {what}")
    if not 400 <= r.status_code < 500:
        stats.not_refused.append((what, r.status_code))
    stats.count("hostile_refused")


async def upload(client: httpx.AsyncClient, target: Target, stats: Stats, rng: random.Random) -> None:
    good = rng.random() < 0.7
    data = png(seed=rng.randint(0, 1000)) if good else b"\x89PNG\r\n\x1a\n" + os.urandom(200)
    r = await client.post(target.url("/assets"), files={"file": ("x.png", data, "image/png")}, timeout=60)
    record_status(stats, r.status_code, "upload")
    if good and r.status_code != 201 or not good and r.status_code != 422:
        stats.not_refused.append(("upload good" if good else "upload corrupt", r.status_code))


async def client_loop(i: int, target: Target, stats: Stats, deadline: float) -> None:
    rng = random.Random(i)
    headers = {"authorization": f"Bearer {target.token}"}
    names, weights = zip(*ACTIONS)
    async with httpx.AsyncClient(headers=headers, timeout=60) as client:
        while time.monotonic() < deadline:
            how = rng.choices(names, weights)[0]
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
                    stats.lost.append((how, f"{type(e).__name__}: {e!r} {e.request.method} {e.request.url.path}"[:300]))
                await asyncio.sleep(0.5)


def process_sample(pid: int) -> dict:
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return {"rss_mb": round(rss / 1024, 1), "fds": len(os.listdir(f"/proc/{pid}/fd"))}


async def sampler(target: Target, stats: Stats, deadline: float, every: float = 10.0) -> None:
    started = time.monotonic()
    while time.monotonic() < deadline:
        stats.samples.append({"t": round(time.monotonic() - started), **process_sample(target.engine_pid)})
        await asyncio.sleep(every)
    stats.samples.append({"t": round(time.monotonic() - started), **process_sample(target.engine_pid)})


async def run(target: Target, clients: int, duration: float) -> Stats:
    stats = Stats()
    deadline = time.monotonic() + duration
    await asyncio.gather(
        sampler(target, stats, deadline), *(client_loop(i, target, stats, deadline) for i in range(clients))
    )
    return stats


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
    log = open(work / "ui.log", "w")
    ui = subprocess.Popen(["node", "scripts/start.mjs"], cwd=ROOT / "ui", env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    headers = {"authorization": f"Bearer {token}"}

    def up():
        try:
            return httpx.get(f"{base}/api/jobs", headers=headers, timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(up, 120, "the UI")
    name = "load_engine"
    job = httpx.post(
        f"{base}/api/jobs",
        headers=headers,
        timeout=30,
        json={
            "name": name,
            "gpu_ids": "0",
            "job_type": "inference",
            "job_config": {
                "job": "extension",
                "config": {
                    "name": name,
                    "process": [
                        {
                            "type": "InferenceEngine",
                            "device": "cpu",
                            "engine": {"max_queue": max_queue},
                        }
                    ],
                },
            },
        },
    ).json()
    httpx.post(f"{base}/api/jobs/{job['id']}/start", headers=headers, timeout=30)
    httpx.post(f"{base}/api/queue/0/start", headers=headers, timeout=30)

    def healthy():
        try:
            return httpx.get(f"{base}/api/inference/health", headers=headers, timeout=5).json().get("ok")
        except (httpx.HTTPError, ValueError):
            return False

    wait_for(healthy, 180, "the engine behind the UI")
    info = json.loads((work / "output" / name / "engine.json").read_text())
    return [ui], Target(f"{base}/api/inference", token, info["pid"])


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
        "hostile_not_refused": stats.not_refused[:10],
        "max_queue_position_seen": stats.max_queue,
        "ttfb_ms": {"p50": q(0.5), "p95": q(0.95), "n": len(ttfb)},
        "engine": {
            "samples": stats.samples,
            "rss_mb_after_warmup": [min(s["rss_mb"] for s in warm), max(s["rss_mb"] for s in warm)],
            "fds_after_warmup": [min(s["fds"] for s in warm), max(s["fds"] for s in warm)],
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", choices=("engine", "ui"), default="engine")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--duration", type=float, default=300)
    parser.add_argument("--max-queue", type=int, default=64)
    parser.add_argument("--port", type=int, default=8677)
    parser.add_argument("--out", help="write the summary JSON here")
    args = parser.parse_args()
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
            stats = asyncio.run(run(target, args.clients, args.duration))
            time.sleep(1)
            alive = httpx.get(target.url("/health"), headers={"authorization": f"Bearer {target.token}"}, timeout=10)
            summary = summarize(stats, args.target, args.clients, args.duration, args.max_queue)
            summary["engine_answers_after"] = alive.status_code == 200 and alive.json().get("ok") is True
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
            if args.target == "ui":
                subprocess.run(["pkill", "-INT", "-f", str(work)], check=False)  # the engine job is detached
    print(
        json.dumps(
            {k: v for k, v in summary.items() if k != "engine"}
            | {"engine": {k: v for k, v in summary["engine"].items() if k != "samples"}},
            indent=2,
        )
    )
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2))
    ok = (
        summary["server_errors"] == 0
        and summary["lost"] == 0
        and not summary["hostile_not_refused"]
        and summary["max_queue_position_seen"] <= args.max_queue
        and summary["engine_answers_after"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
