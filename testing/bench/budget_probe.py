"""Real-size Flux.1-dev under a VRAM budget, one fresh engine per memory option: what fits, and where the time goes.

    bash testing/bench/fetch_gpu_wheels.sh                                        # here
    python3 testing/bench/budget_probe.py --out $OUT --wheels .whl_engine --budget-gb 24     # on the GPU machine
    .venv/bin/python testing/bench/budget_probe.py --out /tmp/probe --tiny                    # CPU smoke run

The budget is a 24 GB card simulated on a larger one: a neighbour process holds the rest of the GPU
(``testing/bench/neighbour.py``; ``--budget-mode fraction``: ``engine.vram_budget_gb``). For each option
(none, ``low_vram``, ``layer_offloading``, ``quantize``, ``low_vram`` + ``quantize``) a new engine gets a cold
request and then the same request again; every frame is timestamped, so each request splits into load, prompt
encoding, sampling, decoding and saving as the client sees them. That split is what the memory plan of issue
#13 needs: which option costs what, and where ``low_vram``'s 40 s per image go. Text encoders are built at
real depth (``--te-layers 24``: T5-XXL), since offloading decisions depend on their size. JSON is written
after every option, so a cut run keeps what it measured.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.gpu_machine import bench_parser, parse_bench_args  # noqa: E402
from testing.bench.neighbour import add_budget_mode, card_budget, engine_found  # noqa: E402

OPTIONS = {
    "none": {},
    "low_vram": {"low_vram": True},
    "layer_offloading": {"layer_offloading": True},
    "quantize": {"quantize": True, "qtype": "float8", "quantize_te": True, "qtype_te": "float8"},
    "low_vram+quantize": {
        "low_vram": True,
        "quantize": True,
        "qtype": "float8",
        "quantize_te": True,
        "qtype_te": "float8",
    },
}
STAGE_ORDER = ("loading", "encoding", "sampling", "decoding", "saving")


def is_note(status: dict) -> bool:
    """The status frames a run keeps: the plan, a re-plan, a decode retried in smaller tiles (not kept before
    2026-12-04, so HunyuanVideo 1.5's 24 GiB run could not say whether its decode had retried) and NaN warnings."""
    return "oom" in status or "memory" in status or status["message"].startswith(("Warning", "Out of memory"))


def timed_request(client, body: dict, keep_path: bool = False) -> dict:
    """One generation, with the client-side time of every stage change (and the result's path if asked)."""
    from extensions_built_in.inference_engine.protocol import FrameDecoder

    t0 = time.monotonic()
    marks: dict = {}
    out: dict = {}
    with client.http.stream("POST", "/generate", json=body) as response:
        if response.status_code != 200:
            return {"http_status": response.status_code, "error": response.read()[:500].decode(errors="replace")}
        decoder = FrameDecoder()
        for chunk in response.iter_raw():
            now = round(time.monotonic() - t0, 3)
            for frame in decoder.feed(chunk):
                h = frame.header
                if frame.type == "status":
                    marks.setdefault(h["stage"], now)
                    if is_note(h):
                        out.setdefault("notes", []).append(h["message"][:400])
                elif frame.type == "progress":
                    marks.setdefault("first_step", now)
                    marks["last_step"] = now
                elif frame.type == "result":
                    marks["result"] = now
                    out["timings"] = h["timings"]
                    out["sha256"] = file_digest(h["path"])
                    if keep_path:
                        out["path"] = h["path"]
                elif frame.type == "error":
                    out["error"] = {"code": h["code"], "message": h["message"][:500]}
    out["total_s"] = round(time.monotonic() - t0, 3)
    out["marks"] = marks
    out["phases"] = phases(marks)
    return out


def file_digest(path: str) -> str:
    """Same seed, same weights: the same file. Compares a request under offloading with the full-GPU one."""
    import hashlib

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def phases(marks: dict) -> dict:
    """Durations between the stage changes the client saw (missing ones are left out)."""
    spans = {
        "load": ("loading", "encoding"),
        "encode": ("encoding", "first_step"),
        "sample": ("first_step", "last_step"),
        "decode": ("last_step", "saving"),
        "save": ("saving", "result"),
    }
    return {name: round(marks[b] - marks[a], 3) for name, (a, b) in spans.items() if a in marks and b in marks}


def build(models: Path, tiny: bool, te_layers: int) -> dict:
    import torch

    from testing.bench import real_size

    folder = models / "flux"
    t0 = time.monotonic()
    if not (folder / ".done").exists():
        real_size.TE_LAYERS = te_layers
        device = "cuda" if torch.cuda.is_available() and not tiny else "cpu"
        real_size.build_flux(str(folder), device, torch.float32 if tiny else torch.bfloat16, small=tiny)
        (folder / ".done").write_text("ok")
    size = {
        p.name: round(sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) / 2**30, 2)
        for p in folder.iterdir()
        if p.is_dir()
    }
    return {"s": round(time.monotonic() - t0, 1), "gib": size, "te_layers": te_layers}


def probe(args) -> dict:
    import torch

    from testing.bench.engine_process import engine_process

    tiny = args.tiny
    device = "cpu" if tiny or not torch.cuda.is_available() else "cuda"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result: dict = {
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "device": device,
            "tiny": tiny,
            "budget_gb": args.budget_gb or None,
            "budget_mode": args.budget_mode,
            "steps": args.steps,
            "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
        },
        "build": build(Path(args.models), tiny, args.te_layers),
        "options": {},
    }
    name = f"budget_probe_{args.budget_gb:g}gb.json" if args.budget_gb else "budget_probe_full.json"
    (out / name).write_text(json.dumps(result, indent=2))
    folder = str(Path(args.models) / "flux")
    size = 64 if tiny else 1024
    sample = {
        "prompt": "a red fox in the snow",
        "width": size,
        "height": size,
        "num_inference_steps": args.steps,
        "guidance_scale": 3.5,
        "seed": 1,
    }
    for option in args.options.split(","):
        model = {"arch": "flux", "name_or_path": folder, "dtype": "float32" if tiny else "bf16", **OPTIONS[option]}
        body = {"model": model, "sample": sample, "stream": {"latents": "none"}}
        row: dict = {}
        started = time.monotonic()
        try:
            with (
                card_budget(args.budget_gb, args.budget_mode, device) as (budget_options, record),
                engine_process(
                    Path(args.work) / option,
                    device,
                    log=out / f"engine_{option.replace('+', '_')}.log",
                    warm_up=True,
                    model_roots=[str(args.models)],  # request paths to checkpoints load only from there
                    **budget_options,
                ) as client,
            ):
                row.update(record, engine_found=engine_found(client.health()))
                row["cold"] = timed_request(client, body)
                if "error" not in row["cold"]:
                    row["warm"] = timed_request(client, body)
                health = client.health()
                row["vram"] = health.get("vram")
                row["pool"] = [
                    {k: e[k] for k in ("class", "subfolder", "bytes", "tier", "load_s")} for e in health["pool"]
                ]
        except Exception as e:  # one option's failure must not lose the others
            row["exception"] = f"{type(e).__name__}: {e}"[:500]
        row["wall_s"] = round(time.monotonic() - started, 1)
        result["options"][option] = row
        (out / name).write_text(json.dumps(result, indent=2, default=str))
        print(
            option,
            json.dumps(
                {
                    k: (v.get("phases"), v.get("error"), v.get("sha256")) if isinstance(v, dict) else v
                    for k, v in row.items()
                    if k in ("cold", "warm", "exception")
                }
            ),
            flush=True,
        )
    return result


def main(argv=None) -> int:
    parser = bench_parser(__doc__, work="/tmp/aitk_probe")
    parser.add_argument("--budget-gb", type=float, default=24, help="0: the whole card (the reference run)")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--te-layers", type=int, default=24, help="T5-XXL has 24")
    parser.add_argument("--options", default=",".join(OPTIONS))
    add_budget_mode(parser)
    probe(parse_bench_args(parser, argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
