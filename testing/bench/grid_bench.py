"""A compare grid against the same images made plainly and by hand (issue #58's GPU line).

    .venv/bin/python testing/bench/grid_bench.py --tiny --arch sd1 --steps 2 --out /tmp/grid_bench.json
    python3 testing/bench/grid_bench.py --wheels .whl_engine --device cuda --arch sdxl --real --size 1024 \\
        --steps 25 --rank 16 --out $OUT/grid_sdxl.json

``--real`` builds the family's real-size random-init checkpoint first (testing/bench/real_build.py) into
``--models/<arch>``, on the GPU machine; ``--tiny`` (the default) takes the family's tiny checkpoint, on the CPU,
at its tiny size. Four checkpoints of one LoRA, as a training run saves them (steps 250 to 1000), are written as
safetensors with random weights of rank ``--rank`` on every linear layer of the denoiser's transformer blocks (as
AI Toolkit trains them: testing/lora_files.py reads the layers off the checkpoint's own config), in the family's
diffusers layout (``unet.`` or ``transformer.`` keys).

One engine, started as users start it (``run.py``, its own process), after one plain request to load the model:

- ``plain``: 16 generations with no LoRA (the grid's 4 prompts, 4 times), one after another;
- ``lora_warm``: one request with a fifth LoRA, unmeasured by the rest: the first LoRA on a denoiser (on a
  compiled one, its hot-swap slots and their compile) is paid once per engine, not per grid;
- ``grid``: ``POST /grid``, 4 checkpoints x 4 prompts, streamed to its end (the labelled pages included);
- ``by_hand``: the same 16 cells as separate ``/generate`` requests, A1111-style: per checkpoint, 4 requests
  naming that LoRA;
- ``plain_after``: the 4 prompts again with no LoRA: whether plain steps went back to their speed once LoRAs had
  been used (hot-swap slots stay at scale 0; ``--lora-patch`` copies the original weights back).

Same steps, size and seed throughout. Per stage: total and per-cell median wall time, the engine's own per-request
load and sample seconds, ``/health`` counters before and after (pool misses and holder builds that stay put: the
base model never reloaded; LoRA loads: one per checkpoint) and the ratios grid/plain and by_hand/plain. JSON after
each stage, so a cut run keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

PROMPTS = ["a lighthouse at dusk", "two cats on a sofa", "a bowl of ramen", "a snowy mountain village"]
STEPS = (250, 500, 750, 1000)  # the checkpoints' training steps
JOB = "grid_bench"


def base_body(args) -> dict:
    from testing.stream_contract import body_for

    body = body_for(args.arch, steps=args.steps, seed=1234, prompt=PROMPTS[0])
    if args.model:
        body["model"] = {"arch": args.arch, "name_or_path": args.model, "dtype": args.dtype}
        if args.size:
            body["sample"].update(width=args.size, height=args.size)
    return body


def write_loras(args, folder: Path) -> list[str]:
    """The four checkpoints (and a fifth file for the warm-up), random, rank ``--rank``; kept when already there."""
    import torch
    from safetensors.torch import save_file

    from testing.lora_files import random_lora
    from toolkit.models.registry import get_model_class

    folder.mkdir(parents=True, exist_ok=True)
    prefix = "unet." if "unet" in get_model_class(args.arch).components else "transformer."
    dtype = torch.bfloat16 if args.model else torch.float32
    paths = []
    for i, step in enumerate((*STEPS, 0)):
        path = folder / (f"{JOB}_{step:09d}.safetensors" if step else "warm_up.safetensors")
        if not path.exists():
            # N(0, 0.01²) entries: a rank-32 delta of a few % of a 3072-wide layer's input, finite in bf16
            state = random_lora(args.arch, None, args.model, args.rank, "blocks", seed=i, scale=0.01, dtype=dtype)
            meta = {"training_info": json.dumps({"step": step, "epoch": 1}), "ss_output_name": JOB}
            save_file({prefix + k: v for k, v in state.items()}, str(path), metadata=meta)
        paths.append(str(path))
    return paths


def counters(client) -> dict:
    health = client.health()
    return health["counters"] | {"compile_graphs": health["compile"]["graphs"], "pool_entries": len(health["pool"])}


def lora_loads(headers: list) -> int:
    message = lambda h: h.get("message", "") if h.get("type") == "status" else ""  # noqa: E731
    return sum(message(h).startswith("Loading") and "LoRA" in message(h) for h in headers)


def one_request(client, body: dict) -> dict:
    """One streamed /generate: its wall time, the engine's timings, and whether a LoRA loaded."""
    started = time.monotonic()
    headers = [f.header | {"type": f.type} for f in client.generate(body)]
    result = next((h for h in headers if h["type"] == "result"), None)
    if result is None:
        raise RuntimeError(f"a request failed: {[h for h in headers if h['type'] == 'error'] or headers[-3:]}")
    wall, timings = time.monotonic() - started, result.get("timings", {})
    return {"wall_s": wall, "timings": timings, "lora_loads": lora_loads(headers)}


def with_cell(body: dict, prompt: str, lora=None) -> dict:
    out = json.loads(json.dumps(body))
    out["sample"]["prompt"] = prompt
    if lora:
        out["model"]["lora_path"] = lora
    return out


def requests_stage(client, bodies: list) -> dict:
    before, started = counters(client), time.monotonic()
    rows = [one_request(client, b) for b in bodies]
    total = time.monotonic() - started
    loads = sum(r["lora_loads"] for r in rows)
    return summary(total, [r["wall_s"] for r in rows], rows, before, counters(client), loads)


def grid_stage(client, body: dict, loras: list) -> dict:
    grid = body | {"axes": [{"name": "lora", "values": loras}, {"name": "prompt", "values": PROMPTS}]}
    before, started = counters(client), time.monotonic()
    ends, headers, cells = [], [], {}
    for frame in client.grid(grid):
        header = frame.header | {"type": frame.type}
        headers.append(header)
        if frame.type == "result" and "cell" in header:
            cells[header["cell"]] = header
            ends.append(time.monotonic())
        if frame.type == "error":
            raise RuntimeError(f"the grid failed: {header}")
    total = time.monotonic() - started
    walls = [b - a for a, b in zip([started, *ends], ends)]  # each cell from the one before it ended
    rows = [{"timings": h.get("timings", {})} for h in cells.values()]
    out = summary(total, walls, rows, before, counters(client), lora_loads(headers))
    pages = next((h for h in headers if h["type"] == "result" and "cell" not in h), {}).get("pages", [])
    return out | {"cells": len(cells), "pages": len(pages), "after_last_cell_s": round(time.monotonic() - ends[-1], 4)}


def summary(total: float, walls: list, rows: list, before: dict, after: dict, loads: int) -> dict:
    delta = {k: after[k] - before[k] for k in after if isinstance(after[k], (int, float)) and k in before}

    def median_of(key):
        values = [r["timings"][key] for r in rows if r.get("timings", {}).get(key) is not None]
        return round(statistics.median(values), 4) if values else None

    return {
        "cells": len(walls),
        "total_s": round(total, 4),
        "cell_median_s": round(statistics.median(walls), 4),
        "cell_range_s": [round(min(walls), 4), round(max(walls), 4)],
        "engine_load_median_s": median_of("load_s"),
        "engine_sample_median_s": median_of("sample_s"),
        "engine_step_median_s": median_of("step_s"),
        "lora_loads": loads,
        # Weights read into the pool (misses) or dropped from it: none, so the base model never reloaded; a LoRA
        # switch builds a new holder (pipeline) from the pooled components (holder_builds, hits).
        "base_reloaded": bool(delta.get("misses") or delta.get("evictions")),
        "counters_before": before,
        "counters_after": after,
        "counters_delta": delta,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="sdxl")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="bfloat16", help="the real-size checkpoint's (tiny ones run float32)")
    parser.add_argument("--size", type=int, default=0, help="width and height (0: the family's; tiny: its own)")
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--compile", default="auto", help="engine.compile")
    parser.add_argument("--lora-patch", action="store_true", help="engine.lora_patch: LoRAs added into the weights")
    parser.add_argument("--out", default="grid_bench.json", help="the JSON file (a folder: grid_bench.json in it)")
    parser.add_argument("--real", action="store_true", help="build the real-size checkpoint into --models first")
    parser.add_argument("--models", default="/tmp/aitk_models")
    parser.add_argument("--wheels", help="folder of wheels to install first (testing/bench/fetch_gpu_wheels.sh)")
    parser.add_argument("--tiny", action="store_true", help="the tiny checkpoint on CPU (default; wins over --real)")
    return parser


def main(argv=None) -> int:
    from testing.bench.engine_process import engine_process

    args = build_parser().parse_args(argv)
    out = Path(args.out) / "grid_bench.json" if Path(args.out).is_dir() else Path(args.out)
    if args.wheels:
        from testing.bench.gpu_machine import install_wheels

        install_wheels(args.wheels)
    if args.tiny:
        args.real, args.device = False, "cpu"
    args.model = str(Path(args.models) / args.arch) if args.real else None
    if args.real and not Path(args.model, "model_index.json").exists():
        import torch

        from testing.bench.real_build import build_real

        build_real(args.arch, args.model, args.device, torch.bfloat16)
    lora_folder = Path(args.models) / f"grid_loras_{args.arch}_r{args.rank}{'' if args.real else '_tiny'}"
    started = time.monotonic()
    *checkpoints, warm_lora = write_loras(args, lora_folder)
    loras = {"folder": str(lora_folder), "files": checkpoints, "write_s": round(time.monotonic() - started, 2)}
    results = {"args": vars(args), "loras": loras}
    body, folder = base_body(args), Path(tempfile.mkdtemp(prefix="grid_bench_"))
    options = {"compile": args.compile, "lora_patch": args.lora_patch, "lora_roots": [str(lora_folder.resolve())]}
    if args.model:  # request paths to checkpoints load only from the engine's model roots
        options["model_roots"] = [str(Path(args.model).resolve().parent)]
    with engine_process(folder, args.device, log=folder / "engine.log", start_timeout=600, **options) as client:
        results["warm"] = one_request(client, body)  # the model loads (and compiles) before any stage
        stages = (
            ("plain", lambda: requests_stage(client, [with_cell(body, p) for _ in checkpoints for p in PROMPTS])),
            ("lora_warm", lambda: requests_stage(client, [with_cell(body, PROMPTS[0], warm_lora)])),
            ("grid", lambda: grid_stage(client, body, checkpoints)),
            ("by_hand", lambda: requests_stage(client, [with_cell(body, p, c) for c in checkpoints for p in PROMPTS])),
            ("plain_after", lambda: requests_stage(client, [with_cell(body, p) for p in PROMPTS])),
        )
        for name, run in stages:
            results[name] = run()
            if name in ("grid", "by_hand") and results.get("plain"):
                results[name][f"{name}_over_plain"] = round(results[name]["total_s"] / results["plain"]["total_s"], 4)
            print(name, json.dumps({k: v for k, v in results[name].items() if not k.startswith("counters_")}))
            out.write_text(json.dumps(results, indent=1))
        results["health"] = {
            k: client.health().get(k) for k in ("compile", "prompt_cache", "vram", "memory", "lora_patch")
        }
    out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
