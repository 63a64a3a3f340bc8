"""Does ``engine.vram_budget_gb`` itself slow a launch-bound step? One process, one real-size UNet, the step timed
with and without the allocator's memory fraction, alternating.

    python3 testing/bench/fraction_probe.py --out $OUT --wheels .whl_engine          # on the GPU machine
    .venv/bin/python testing/bench/fraction_probe.py --out /tmp/probe --tiny           # CPU smoke run

Why: under every budget SD 1.5 and SDXL run the full card's own plan, so the engine runs the same code per step,
and the only thing a budget changes is ``torch.cuda.set_per_process_memory_fraction`` (``toolkit/device.py``).
Yet fresh engines under a budget stepped 1.3-1.9x slower than on the full card in one sweep and 0.84x in
another (docs/BENCHMARKS.md, seventeenth run). Between engines the process, the order and the machine all
change; here only the fraction does. Each round times ``--repeats`` UNet calls (batch 2, as under CFG, at the
family's native size) once per setting, in alternating order, and OUT/fraction_probe.json is rewritten after
every round. On CPU the fraction is not set (there is none): the run checks the plumbing.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.gpu_machine import bench_parser, micro_bench_setup, parse_bench_args  # noqa: E402

NATIVE_LATENT = {"sd1": 64, "sdxl": 128}  # 512² and 1024² through the VAE's 8x
GIB = 1024**3


def build_unet(arch: str, device: str, dtype, tiny: bool):
    from testing.bench.real_build import (
        component_config,
        construct,
        merged,
        real_configs,
        shallow_overrides,
        weighted_components,
    )
    from toolkit.models.tiny import tiny_checkpoint

    comp = weighted_components(arch)["unet"]
    depth = 1 if tiny else None
    config = component_config(tiny_checkpoint(arch), comp.subfolder, real_configs(arch).get("unet", {}), depth)
    if tiny:
        config = merged(config, shallow_overrides(arch, "unet"))
    return construct(comp.cls, config, device, dtype).eval()


def unet_inputs(unet, size: int, device: str, dtype) -> dict:
    """Batch 2 at ``size`` latent pixels, 77 text tokens; SDXL's pooled text and size conditioning besides."""
    import torch

    cfg = unet.config
    inputs = {
        "sample": torch.randn(2, cfg.in_channels, size, size, device=device, dtype=dtype),
        "timestep": torch.tensor(500, device=device),
        "encoder_hidden_states": torch.randn(2, 77, cfg.cross_attention_dim, device=device, dtype=dtype),
    }
    if cfg.addition_embed_type == "text_time":
        pooled = cfg.projection_class_embeddings_input_dim - 6 * cfg.addition_time_embed_dim
        inputs["added_cond_kwargs"] = {
            "text_embeds": torch.randn(2, pooled, device=device, dtype=dtype),
            "time_ids": torch.tensor([[size * 8, size * 8, 0, 0, size * 8, size * 8]] * 2, device=device, dtype=dtype),
        }
    return inputs


def set_fraction(fraction) -> None:
    import torch

    if fraction is not None:
        torch.cuda.set_per_process_memory_fraction(fraction, 0)


def step_times(unet, inputs: dict, steps: int, cuda: bool) -> list:
    """Seconds per call, each from the host's view (a launch-bound step is the host's time, as in the engine)."""
    import torch

    times = []
    with torch.inference_mode():
        for _ in range(steps):
            t = time.perf_counter()
            unet(**inputs)
            if cuda:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
    return times


def probe(args, arch: str, device: str, dtype, result: dict, save) -> None:
    import torch

    cuda = device == "cuda"
    unet = build_unet(arch, device, dtype, args.tiny)
    inputs = unet_inputs(unet, 8 if args.tiny else NATIVE_LATENT[arch], device, dtype)
    budget = min(1.0, args.budget_gb * GIB / torch.cuda.get_device_properties(0).total_memory) if cuda else None
    settings = {"whole": 1.0 if cuda else None, f"{args.budget_gb:g} GiB": budget}
    rows = result[arch] = {"fraction": budget, "rounds": [], "median_s": {}}
    step_times(unet, inputs, 3, cuda)  # warm-up: cuDNN's choices, the allocator's first blocks
    for index in range(args.rounds):
        order = list(settings) if index % 2 == 0 else list(reversed(settings))
        timing = {}
        for name in order:
            set_fraction(settings[name])
            timing[name] = round(statistics.median(step_times(unet, inputs, args.repeats, cuda)), 5)
        rows["rounds"].append({"order": order, "median_s": timing})
        rows["median_s"] = {n: round(statistics.median(r["median_s"][n] for r in rows["rounds"]), 5) for n in settings}
        save()
    set_fraction(settings["whole"])
    del unet


def main(argv=None) -> int:
    parser = bench_parser(__doc__, work="/tmp/aitk_fraction")
    parser.add_argument("--families", default="sd1,sdxl")
    parser.add_argument("--budget-gb", type=float, default=24)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=30, help="UNet calls per setting in each round")
    args = parse_bench_args(parser, argv)
    device, dtype, out, meta = micro_bench_setup(args)
    result = {"meta": meta}

    def save() -> None:
        (out / "fraction_probe.json").write_text(json.dumps(result, indent=1))

    for arch in [a.strip() for a in args.families.split(",") if a.strip()]:
        probe(args, arch, device, dtype, result, save)
        print(arch, json.dumps(result[arch]["median_s"]), flush=True)
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
