"""Host memory behind the weights that wait off the GPU: what torch's pinned allocator takes for a tensor, what
``toolkit/models/pinned.py`` takes for the same copies, whether copies from each reach the GPU as fast, and how
fast torchao quantizes on the GPU and on the CPU (an 8-bit plan quantizes what it streams while loading); and
that a model visiting or group-offloaded from these copies computes what it does resident.

    python3 testing/bench/pinned_probe.py --out $OUT --wheels .whl_engine      # GPU machine
    .venv/bin/python testing/bench/pinned_probe.py --out /tmp/pinned --tiny    # CPU smoke run

Each figure is the process's resident set before and after the allocation (pinned pages count as shmem), so
run it in a fresh process. Results: OUT/pinned_probe.json, written after each stage.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.gpu_machine import bench_parser, parse_bench_args  # noqa: E402

GIB = 1024**3


def resident_kib() -> int:
    """Anonymous plus shared resident memory: where pinned and private pages show."""
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return sum(int(fields[k].split()[0]) for k in ("RssAnon", "RssShmem"))


def held_gib(allocate) -> tuple:
    """GiB the process holds more after ``allocate()`` (its pages touched), and what it made."""
    gc.collect()
    before = resident_kib()
    made = allocate()
    for t in made:
        t.fill_(1)
    return round((resident_kib() - before) / 1024**2, 3), made


def copy_gbps(host, device: str) -> float:
    import torch

    if device == "cpu":
        return 0.0
    target = torch.empty_like(host, device=device)
    target.copy_(host, non_blocking=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        target.copy_(host, non_blocking=True)
    torch.cuda.synchronize()
    return round(5 * host.numel() * host.element_size() / (time.perf_counter() - t0) / 1e9, 1)


def quantize_s_per_gb(device: str, tiny: bool) -> dict:
    import torch
    from torchao.quantization import (
        Float8DynamicActivationFloat8WeightConfig,
        Float8WeightOnlyConfig,
        Int8WeightOnlyConfig,
        PerRow,
        quantize_,
    )

    width = 256 if tiny else 6144
    configs = {"int8": Int8WeightOnlyConfig()}
    if device != "cpu":
        configs |= {
            "float8": Float8WeightOnlyConfig(),
            "float8dq": Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()),
        }
    result = {}
    for name, config in configs.items():
        for where in dict.fromkeys([device, "cpu"]):
            layers = torch.nn.Sequential(*[torch.nn.Linear(width, width, bias=False) for _ in range(4)])
            layers = layers.to(torch.bfloat16)
            t0 = time.perf_counter()
            quantize_(layers, config, device=where)
            if where != "cpu":
                torch.cuda.synchronize()
            result[f"{name}_{where}"] = round((time.perf_counter() - t0) / (4 * width * width * 2 / 1e9), 2)
    return result


def round_trips(device: str) -> dict:
    """The weights' two ways to the GPU from these copies give the resident output: a visit
    (``move_to_host``/``move_to_device``) and diffusers' group offloading over pre-locked weights."""
    import copy

    import torch

    from toolkit.models.components.loading import _group_offload
    from toolkit.models.offload import move_to_device, move_to_host

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(4)]).to(torch.bfloat16)
    x = torch.randn(8, 512, dtype=torch.bfloat16, device=device)
    with torch.inference_mode():
        want = copy.deepcopy(model).to(device)(x)
        visiting = copy.deepcopy(model)
        move_to_host(visiting)
        pinned = all(p.is_pinned() for p in visiting.parameters())
        move_to_device(visiting, device)
        grouped = copy.deepcopy(model)
        _group_offload(grouped, device, "leaf")
        return {
            "host_copies_pinned": pinned,
            "visit_equal": torch.equal(visiting(x), want),
            "group_offload_equal": torch.equal(grouped(x), want),
        }


def main(argv=None) -> int:
    parser = bench_parser(__doc__, work="/tmp/aitk_pinned")
    parser.add_argument("--gib", type=float, default=1.2, help="size of the probed tensor")
    args = parse_bench_args(parser, argv)
    import torch

    from toolkit.models.pinned import empty_like_all

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = "cpu" if args.tiny or not torch.cuda.is_available() else "cuda"
    size = int((0.01 if args.tiny else args.gib) * GIB)
    result: dict = {"torch": torch.__version__, "device": device, "tensor_gib": round(size / GIB, 3)}

    def save(stage: str, value) -> None:
        result[stage] = value
        (out / "pinned_probe.json").write_text(json.dumps(result, indent=2))

    like = torch.empty(size, dtype=torch.uint8)
    gib, made = held_gib(lambda: [torch.empty(size, dtype=torch.uint8, pin_memory=device != "cpu")])
    save("torch_pin_memory", {"held_gib": gib, "copy_gbps": copy_gbps(made[0], device)})
    del made
    gib, made = held_gib(lambda: empty_like_all([like]))
    save("empty_like_all", {"held_gib": gib, "pinned": made[0].is_pinned(), "copy_gbps": copy_gbps(made[0], device)})
    del made
    pieces = [torch.empty(size // 7, dtype=torch.uint8) for _ in range(7)]  # one block's many tensors
    gib, made = held_gib(lambda: empty_like_all(pieces))
    save("empty_like_all_7_pieces", {"held_gib": gib})
    del made
    save("round_trips", round_trips(device))
    save("quantize_s_per_gb", quantize_s_per_gb(device, args.tiny))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
