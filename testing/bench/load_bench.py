"""Throughput and latency under many clients, batching off against on, in one run (issue #57's table).

    .venv/bin/python testing/bench/load_bench.py --clients 16 --duration 60 --out RESULT.json
    python3 testing/bench/load_bench.py --wheels .whl_engine --device cuda --arch sdxl --real --size 512 \\
        --steps 25 --clients 16 --duration 120 --out $OUT/load_sdxl.json

``--real`` builds the family's real-size random-init checkpoint first (testing/bench/real_build.py), on the
GPU machine; ``--model`` names one that exists.

Starts the engine as users do (``run.py``, its own process) twice: ``engine.max_batch: 1`` (off), then the
``--max-batch`` asked (default 0: what the memory plan fits), each after ``--warmup`` seconds of the same load.
Each time ``--clients`` clients send streamed generations: a closed loop (each sends its next as its last ends)
or, with ``--rate``, Poisson arrivals at that many requests a second spread over the clients. Every request has
its own prompt and seed; ``--cancel-share`` of them are cancelled at a random step. Reported per setting:
images/s over the measured window, latency p50/p95/p99 of finished requests, time to the first latent frame,
cancels honoured, and the engine's own count of denoiser calls by size (``/health`` ``batching``). JSON after
each setting, so a cut run keeps what it measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from extensions_built_in.inference_engine.protocol import FrameDecoder  # noqa: E402

ENGINE_TIMINGS = ("queued_s", "load_s", "sample_s", "step_s", "hook_ms", "save_s", "gc_s", "total_s")
PROMPTS = ["a red circle", "a lighthouse at dusk", "two cats on a sofa", "a bowl of ramen", "a snowy mountain"]


def body(args, rng: random.Random) -> dict:
    from testing.stream_contract import body_for

    out = body_for(args.arch, steps=args.steps, seed=rng.randrange(1 << 30), prompt=rng.choice(PROMPTS))
    if args.model:
        out["model"] = {"arch": args.arch, "name_or_path": args.model, "dtype": args.dtype}
    if args.size:
        out["sample"].update(width=args.size, height=args.size)
    out["stream"] = {"latents": "raw", "every_n_steps": 1}
    return out


async def one_request(http: httpx.AsyncClient, args, rng: random.Random, rows: list) -> None:
    started, first_latent, cancel_at = time.monotonic(), None, None
    if rng.random() < args.cancel_share:
        cancel_at = rng.randint(1, max(1, args.steps - 1))
    outcome, timings = "lost", {}
    async with http.stream("POST", "/generate", json=body(args, rng), timeout=httpx.Timeout(30, read=600)) as r:
        if r.status_code != 200:
            detail = (await r.aread()).decode(errors="replace")[:500]
            rows.append({"outcome": f"http_{r.status_code}", "t": started, "detail": detail})
            return
        decoder = FrameDecoder()
        async for chunk in r.aiter_raw():
            for frame in decoder.feed(chunk):
                if frame.type == "latent" and first_latent is None:
                    first_latent = time.monotonic() - started
                if frame.type == "progress" and cancel_at and frame.header["step"] == cancel_at:
                    await http.post(f"/cancel/{r.headers['x-request-id']}")
                if frame.type == "result":
                    outcome, timings = "result", frame.header.get("timings") or {}
                if frame.type == "error":
                    outcome = frame.header.get("code", "error")
    rows.append(
        {
            "outcome": outcome,
            "t": started,
            "latency_s": time.monotonic() - started,
            "first_latent_s": first_latent,
            "cancel_asked": cancel_at is not None,
            # the engine's own split of the request: a slow step or a slow everything-else
            **{k: timings.get(k) for k in ENGINE_TIMINGS},
        }
    )


async def load(client_info: dict, args) -> tuple[list, float]:
    rows: list = []
    headers = {"Authorization": f"Bearer {client_info['token']}"}
    limits = httpx.Limits(max_connections=args.clients * 2 + 4)
    async with httpx.AsyncClient(base_url=client_info["url"], headers=headers, limits=limits) as http:
        warm: list = []
        await one_request(http, args, random.Random(0), warm)  # resident before the window opens
        if warm[0]["outcome"] != "result":  # every request would fail the same way: a window of 0 images/s
            raise RuntimeError(f"the first request failed: {warm[0]}")

        async def closed_loop(i: int, deadline: float, into: list, at_least: int) -> None:
            rng = random.Random(i + 1)
            while time.monotonic() < deadline or len(into) < at_least:
                await one_request(http, args, rng, into)

        async def poisson(deadline: float, into: list) -> None:
            rng, tasks = random.Random(99), []
            while time.monotonic() < deadline:
                await asyncio.sleep(rng.expovariate(args.rate))
                tasks.append(asyncio.create_task(one_request(http, args, random.Random(rng.random()), into)))
            await asyncio.gather(*tasks)

        async def drive(seconds: float, into: list, at_least: int = 0) -> None:
            deadline = time.monotonic() + seconds
            if args.rate:
                await poisson(deadline, into)
            else:
                await asyncio.gather(*(closed_loop(i, deadline, into, at_least) for i in range(args.clients)))

        # The same load, unmeasured, first: shapes the denoiser has not seen yet (every batch size) cost a
        # compile or a kernel search once, which a short window would count as throughput lost. A compile can
        # outlast any fixed warm-up, so it also lasts until two rounds of every client's requests have ended.
        await drive(args.warmup, [], at_least=2 * args.clients)
        before = (await http.get("/health")).json().get("compile", {})
        start = time.monotonic()
        await drive(args.duration, rows)
        window = time.monotonic() - start
        health = (await http.get("/health")).json()
    # graphs compiled inside the window: its throughput paid for a compile
    after = health.get("compile", {})
    compiled = {k: [before.get(k), after.get(k)] for k in ("graphs", "seconds", "failed")}
    return rows, window, health.get("batching") | {"compile_in_window": compiled}


def percentile(values: list, q: float):
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4)


def stack_summary(path: Path, top: int = 15) -> dict:
    """Where the generating threads were in the samples of ``--stacks``: the share of samples per (innermost
    frame, innermost frame of this repository), e.g. waiting for a round (step_batching.py call) or in a
    convolution under the merged call (step_batching.py _run_group)."""
    import re

    counts, n = Counter(), 0
    for sample in path.read_text().split("--- ")[1:]:
        for thread in sample.split("thread ")[1:]:
            frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', thread)
            if not any(f[0].endswith("base_model.py") for f in frames):
                continue  # not a generating thread
            ours = [f for f in frames if str(ROOT) in f[0] and "site-packages" not in f[0]]
            inner = f"{Path(frames[-1][0]).name}:{frames[-1][2]}"
            counts[(inner, f"{Path(ours[-1][0]).name}:{ours[-1][2]}:{ours[-1][1]}" if ours else "")] += 1
            n += 1
    return {"samples": n, "top": [[round(c / n, 4), *key] for key, c in counts.most_common(top)] if n else []}


def _median(values: list):
    values = [v for v in values if isinstance(v, (int, float))]
    return round(statistics.median(values), 4) if values else None


def summary(rows: list, window: float, batching, max_batch: int) -> dict:
    done = [r for r in rows if r["outcome"] == "result"]
    latencies = [r["latency_s"] for r in done]
    firsts = [r["first_latent_s"] for r in rows if r.get("first_latent_s") is not None]
    return {
        "max_batch": max_batch,
        "requests": len(rows),
        "images": len(done),
        "images_per_s": round(len(done) / window, 4) if window else None,
        "latency_p50_s": percentile(latencies, 0.5),
        "latency_p95_s": percentile(latencies, 0.95),
        "latency_p99_s": percentile(latencies, 0.99),
        "first_latent_p50_s": round(statistics.median(firsts), 4) if firsts else None,
        "cancels_asked": sum(r.get("cancel_asked", False) for r in rows),
        "cancelled": sum(r["outcome"] == "cancelled" for r in rows),
        "lost": sum(r["outcome"] == "lost" for r in rows),
        "outcomes": dict(Counter(r["outcome"] for r in rows)),
        "engine_medians": {k: _median([r.get(k) for r in done]) for k in ENGINE_TIMINGS},
        "batching": batching,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="sd1")
    parser.add_argument("--model", help="a checkpoint (default: the family's tiny one)")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--size", type=int, default=0)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--rate", type=float, default=0.0, help="Poisson arrivals per second (0: closed loop)")
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=30, help="seconds of the same load before the window")
    parser.add_argument("--cancel-share", type=float, default=0.1)
    parser.add_argument("--max-batch", type=int, default=0)
    parser.add_argument(
        "--compile", default="auto", help="engine.compile for both settings (off: Flux.1 under auto runs alone)"
    )
    parser.add_argument(
        "--stacks", type=float, default=0, help="seconds between samples of every engine thread's stack (0: none)"
    )
    parser.add_argument("--out", default="load_bench.json")
    parser.add_argument("--real", action="store_true", help="build the real-size checkpoint into --models first")
    parser.add_argument("--models", default="/tmp/aitk_models")
    parser.add_argument("--wheels", help="folder of wheels to install first (testing/bench/fetch_gpu_wheels.sh)")
    parser.add_argument("--tiny", action="store_true", help="the tiny checkpoint on CPU (the default)")
    return parser


def main() -> int:
    from testing.bench.engine_process import engine_process

    args = build_parser().parse_args()
    if args.wheels:
        from testing.bench.gpu_machine import install_wheels

        install_wheels(args.wheels)
    if args.real:
        import torch

        from testing.bench.real_build import build_real

        args.model = str(Path(args.models) / args.arch)
        if not Path(args.model, "model_index.json").exists():
            build_real(args.arch, args.model, args.device, torch.bfloat16)
    results = {"args": vars(args), "settings": []}
    for max_batch in (1, args.max_batch):
        folder = Path(tempfile.mkdtemp(prefix=f"load_bench_{max_batch}_"))
        options = {"max_batch": max_batch, "compile": args.compile}
        if args.model:  # request paths to checkpoints load only from the engine's model roots
            options["model_roots"] = [str(Path(args.model).resolve().parent)]
        if args.stacks:  # where the threads wait: beside the JSON, one file per setting
            options |= {"stacks": Path(f"{args.out}.stacks_{max_batch}.txt"), "stacks_every_s": args.stacks}
        with engine_process(folder, args.device, log=folder / "engine.log", **options) as client:
            info = {"url": client.url, "token": client.http.headers["Authorization"].split()[-1]}
            rows, window, batching = asyncio.run(load(info, args))
        results["settings"].append(summary(rows, window, batching, max_batch))
        if args.stacks:
            results["settings"][-1]["stacks"] = stack_summary(options["stacks"])
        print(json.dumps(results["settings"][-1]), flush=True)
        Path(args.out).write_text(json.dumps(results, indent=1))
    off, on = results["settings"]
    if off["images_per_s"]:
        print(f"images/s on/off: {on['images_per_s'] / off['images_per_s']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
