"""The cluster on CPU: what the ingress adds to a request, and what residency routing saves over random routing.

    python testing/bench/cluster_bench.py [--requests 40] [--out docs/bench/cluster_cpu.json]

Two runs of config/examples/inference_cluster_tiny.yaml (two CPU replicas, tiny models; testing/cluster_harness.py):

1. ``ingress``: one small request (tiny sd1, 4 steps, resident on its replica) ``--requests`` times through the
   cluster and as many times straight to the engine of the replica that holds it, interleaved: time to the
   first byte (the ``start`` frame) and to the ``end`` frame; and ``GET /models`` (one replica) and ``GET /queue``
   (every replica) both ways.
2. ``routing``: the same shuffled mix of A (tiny sd1) and B (tiny pixart_sigma) requests, one at a time, through a
   cluster with ``routing: residency`` and then one with ``routing: random``: wall time, model swaps (the
   replicas' holder builds) and pool misses, after one A and one B have loaded both models.

Tiny models load in ~0.1 s, so the routing numbers count swaps; their cost on real models is docs/BENCHMARKS.md's.

3. ``--clients N``: issue #16's throughput run instead. The shuffled mix sent by N concurrent clients to (a) one
   replica, (b) ``--replicas`` with residency routing, (c) as many with random routing: images/s, p50/p95 latency
   (send to ``end``), swaps. On a GPU machine with real-size models (``--real DIR`` builds Flux.1-dev and SDXL
   there with testing/bench/real_size.py, as the GPU suite does; Ray from testing/bench/fetch_ray_wheels.sh):

    python3 testing/bench/cluster_bench.py --real /tmp/aitk_models --clients 4 --requests 40 --replicas 2 \
        --gpus-per-replica 1 --steps 8 --out $OUT/cluster_gpu.json

   Where only one GPU is lent, two replicas can share it (``--gpus-per-replica 0.5``), each engine capped by
   ``--vram-budget-gb`` below Flux and SDXL together, so that a replica holds one of them and a swap is a swap:
   that measures the routing (b against c) on real models, not (b against a), which needs a GPU per replica. The
   ingress's added time to first byte is the first run's (CPU replicas), there on the GPU machine's 16 cores.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.cluster_harness import ClusterJob  # noqa: E402
from testing.stream_contract import body_for  # noqa: E402

A, B = "sd1", "pixart_sigma"


def timed_stream(client, body: dict) -> tuple[float, float]:
    """(seconds to the first byte, seconds to the last) of one streamed generation."""
    t0 = time.perf_counter()
    first = None
    with client.http.stream("POST", "/generate", json=body) as response:
        for _ in response.iter_raw():
            first = first or time.perf_counter() - t0
    return first, time.perf_counter() - t0


def timed_get(client, path: str) -> float:
    t0 = time.perf_counter()
    client.http.get(path).raise_for_status()
    return time.perf_counter() - t0


def summary(values: list[float]) -> dict:
    ms = sorted(v * 1000 for v in values)
    return {"median_ms": round(statistics.median(ms), 2), "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 2)}


def measure_ingress(cluster: ClusterJob, requests: int) -> dict:
    from extensions_built_in.inference_cluster.model_key import model_key

    body = body_for(A, steps=4, seed=3)
    cluster.client.generate_wait(body)  # A resident on one replica
    direct = cluster.engine_client(cluster.holder_of(model_key(body["model"])))
    ways = {"cluster": cluster.client, "engine": direct}
    times = {way: {"ttfb": [], "total": [], "models": [], "queue": []} for way in ways}
    for _ in range(requests):
        for way, client in ways.items():
            ttfb, total = timed_stream(client, body)
            times[way]["ttfb"].append(ttfb)
            times[way]["total"].append(total)
            times[way]["models"].append(timed_get(client, "/models"))
            times[way]["queue"].append(timed_get(client, "/queue"))
    direct.close()
    result = {way: {name: summary(v) for name, v in t.items()} for way, t in times.items()}
    result["added_ms"] = {
        name: round(result["cluster"][name]["median_ms"] - result["engine"][name]["median_ms"], 2)
        for name in ("ttfb", "total", "models", "queue")
    }
    return result


def measure_routing(cluster: ClusterJob, requests: int, seed: int) -> dict:
    """Swaps and wall time of a shuffled A/B mix, after one A and one B (not counted) have built and loaded both."""
    for arch in (A, B):
        cluster.client.generate_wait(body_for(arch, steps=4))
    before = counters(cluster)
    mix = [A, B] * (requests // 2)
    random.Random(seed).shuffle(mix)
    t0 = time.perf_counter()
    for i, arch in enumerate(mix):
        answer = cluster.client.generate_wait(body_for(arch, steps=4, seed=i))
        assert "result" in answer, answer
    wall = time.perf_counter() - t0
    after = counters(cluster)
    return {
        "requests": len(mix),
        "model_changes_in_mix": sum(1 for x, y in zip(mix, mix[1:]) if x != y),
        "wall_s": round(wall, 2),
        **{name: after[name] - before[name] for name in ("holder_builds", "misses", "holder_reuses")},
    }


def counters(cluster: ClusterJob) -> dict:
    """The replicas' engine counters, summed: holder_builds are model swaps, misses pool loads."""
    totals: dict = {}
    for replica in cluster.health()["replicas"]:
        for name, value in replica["counters"].items():
            totals[name] = totals.get(name, 0) + value
    return totals


def real_body(folder: Path, arch: str, steps: int, seed: int) -> dict:
    """A real-size request as a user sends it: native size, latents streamed every step (the engine's default)."""
    return {
        "model": {"arch": arch, "name_or_path": str(folder / arch), "dtype": "bfloat16"},
        "sample": {"prompt": "a red fox in the snow", "width": 1024, "height": 1024, "seed": seed}
        | {"num_inference_steps": steps, "guidance_scale": 3.5 if arch == "flux" else 5.0},
    }


def build_real(folder: Path, archs: tuple, device: str = "cuda", small: bool = False) -> None:
    """Flux.1-dev and SDXL at real size, random init, as testing/bench/gpu_suite.py builds them (once); ``small``
    builds the same layout at toy width, for the CPU test of this function."""
    import torch

    from testing.bench.real_size import BUILDERS

    for arch in archs:
        if not (folder / arch / ".done").exists():
            BUILDERS[arch](str(folder / arch), device, torch.bfloat16, small=small)
            (folder / arch / ".done").write_text("ok")


def measure_throughput(cluster: ClusterJob, bodies: dict, requests: int, clients: int, seed: int) -> dict:
    """The shuffled mix from ``clients`` threads at once: images/s, latency percentiles, swaps."""
    from extensions_built_in.inference_engine.client import EngineClient

    for body in bodies.values():  # every model loaded once somewhere, not counted
        cluster.client.generate_wait(body)
    mix = list(bodies) * (requests // len(bodies))
    random.Random(seed).shuffle(mix)
    before = counters(cluster)

    def one(i: int) -> float:
        with EngineClient.from_engine_json(str(cluster.engine_json), timeout=60, generation_timeout_s=900) as c:
            t0 = time.perf_counter()
            body = bodies[mix[i]] | {"sample": bodies[mix[i]]["sample"] | {"seed": i}}
            answer = c.generate_wait(body)
            assert "result" in answer or "results" in answer, answer
            return time.perf_counter() - t0

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = sorted(pool.map(one, range(len(mix))))
    wall = time.perf_counter() - t0
    after = counters(cluster)
    return {
        "requests": len(mix),
        "clients": clients,
        "wall_s": round(wall, 2),
        "images_per_s": round(len(mix) / wall, 4),
        "p50_s": round(statistics.median(latencies), 3),
        "p95_s": round(latencies[int(0.95 * (len(latencies) - 1))], 3),
        **{name: after.get(name, 0) - before.get(name, 0) for name in ("holder_builds", "misses")},
        # what the swap rule weighed at the end (placement.py): medians of each replica's run and swap times
        "replicas_measured": [replica.get("measured") for replica in cluster.health()["replicas"]],
    }


def throughput(args) -> dict:
    """(a) one replica, (b) ``--replicas`` routed by residency, (c) as many at random: the same mix each."""
    if args.real:
        folder = Path(args.real)
        build_real(folder, ("flux", "sdxl"))
        bodies = {arch: real_body(folder, arch, args.steps, 0) for arch in ("flux", "sdxl")}
    else:
        bodies = {arch: body_for(arch, steps=args.steps) for arch in (A, B)}
    gpus = {"gpus_per_replica": args.gpus_per_replica}
    engine = {"vram_budget_gb": args.vram_budget_gb} if args.vram_budget_gb else {}
    if args.real:  # request paths to checkpoints load only from the engine's model roots
        engine["model_roots"] = [str(Path(args.real).resolve())]
    runs = {
        "one_replica": ("residency", 1),
        "residency": ("residency", args.replicas),
        "random": ("random", args.replicas),
    }
    results = {}
    for name, (routing, replicas) in runs.items():
        with tempfile.TemporaryDirectory() as tmp:
            device = "cuda" if args.gpus_per_replica else None
            cluster = ClusterJob(
                Path(tmp), routing=routing, cluster=gpus | {"replicas": replicas}, device=device, engine=engine
            )
            cluster.start(timeout=900)
            try:
                results[name] = measure_throughput(cluster, bodies, args.requests, args.clients, args.seed)
            finally:
                cluster.stop()
        if args.out:  # after every run, so a cut run keeps what it measured
            Path(args.out).write_text(json.dumps({"throughput": results}, indent=2) + "\n")
    one, res, rnd = (results[k]["images_per_s"] for k in ("one_replica", "residency", "random"))
    results["residency_vs_one"] = round(res / one, 3)
    results["residency_vs_random"] = round(res / rnd, 3)
    return results


def run(routing: str, requests: int, seed: int, ingress: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cluster = ClusterJob(Path(tmp), routing=routing).start()
        try:
            result = {"routing": measure_routing(cluster, requests, seed)}
            if ingress:
                result["ingress"] = measure_ingress(cluster, requests)
            return result
        finally:
            cluster.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--clients", type=int, default=0, help="> 0: the throughput run (see the docstring)")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--gpus-per-replica", type=float, default=0, help="0.5: two replicas share one GPU")
    parser.add_argument(
        "--vram-budget-gb", type=float, default=0, help="each engine's engine.vram_budget_gb (replicas sharing a GPU)"
    )
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument(
        "--real",
        nargs="?",
        const="",
        help="a folder for real-size Flux.1-dev and SDXL (built there if missing; alone: --models)",
    )
    parser.add_argument("--models", default="/tmp/aitk_models", help="--real's folder when it names none")
    parser.add_argument("--tiny", action="store_true", help="tiny models whatever --real says (a queue's smoke run)")
    args = parser.parse_args()
    args.real = None if args.tiny or args.real is None else (args.real or args.models)
    args.gpus_per_replica = 0 if args.tiny else args.gpus_per_replica  # the smoke run's replicas are CPU ones
    if args.out and not args.out.endswith(".json"):  # a folder, as testing/bench/gpu_queue.sh passes
        Path(args.out).mkdir(parents=True, exist_ok=True)
        args.out = str(Path(args.out) / "cluster_bench.json")
    if args.clients:
        results = {"date": time.strftime("%Y-%m-%d"), "args": vars(args), "throughput": throughput(args)}
        print(json.dumps(results, indent=2))
        if args.out:
            Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
        return 0
    residency = run("residency", args.requests, args.seed, ingress=True)
    baseline = run("random", args.requests, args.seed, ingress=False)
    results = {
        "machine": f"{platform.processor() or platform.machine()}, {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "ingress": residency["ingress"],
        "routing": {"residency": residency["routing"], "random": baseline["routing"]},
    }
    print(json.dumps(results, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
