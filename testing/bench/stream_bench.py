"""A streamed denoiser on the GPU: the step time with all of it resident, streamed block by block
(``toolkit/models/streaming.py``), and streamed with part of it kept on the GPU (``BlockStream.keep``), and
whether the output stays the resident one's.

    python3 testing/bench/stream_bench.py --out $OUT --wheels .whl_engine [--arch flux] [--keeps 0,0.5,0.75]
    .venv/bin/python testing/bench/stream_bench.py --out /tmp/stream --tiny     # CPU smoke run, tiny Flux

The transformer is built at its real config with random weights (bf16), straight into memory: no checkpoint,
so the run fits the few minutes a GPU call has left. Results: OUT/stream_bench.json, written after each stage.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.gpu_machine import bench_parser, parse_bench_args  # noqa: E402


def build(arch: str, tiny: bool, device: str):
    """Random init on the device in bf16 (12B parameters initialised on a CPU in float32 take minutes and 48 GB)."""
    import torch

    from testing.bench.real_build import component_config, construct, real_configs, weighted_components
    from toolkit.models.tiny import tiny_checkpoint

    folder = tiny_checkpoint(arch)
    comp = weighted_components(arch)["transformer"]
    config = component_config(folder, comp.subfolder, {} if tiny else real_configs(arch).get("transformer", {}))
    torch.manual_seed(0)
    return construct(comp.cls, config, device, torch.bfloat16)


def inputs(module, device, tiny: bool) -> dict:
    import torch

    cfg = module.config
    image, text = (16, 8) if tiny else (4096, 512)  # Flux at 1024²: 64x64 latent patches; T5's 512 tokens
    g = torch.Generator().manual_seed(1)
    return dict(
        hidden_states=torch.randn(1, image, cfg.in_channels, generator=g).to(device, torch.bfloat16),
        encoder_hidden_states=torch.randn(1, text, cfg.joint_attention_dim, generator=g).to(device, torch.bfloat16),
        pooled_projections=torch.randn(1, cfg.pooled_projection_dim, generator=g).to(device, torch.bfloat16),
        timestep=torch.tensor([0.5], device=device),
        img_ids=torch.zeros(image, 3, device=device),
        txt_ids=torch.zeros(text, 3, device=device),
        guidance=torch.tensor([3.5], device=device) if cfg.guidance_embeds else None,
        return_dict=False,
    )


def timed(module, kwargs, device, repeats: int) -> tuple[float, object]:
    import torch

    times, out = [], None
    with torch.inference_mode():
        for _ in range(repeats + 1):  # the first call warms up
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = module(**kwargs)[0]
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    return statistics.median(times[1:]), out


def main(argv=None) -> int:
    import torch

    parser = bench_parser(__doc__, work="/tmp/aitk_stream")
    parser.add_argument("--arch", default="flux")
    parser.add_argument("--keeps", default="0,0.5,0.75", help="shares of the blocks' bytes kept on the GPU")
    parser.add_argument("--repeats", type=int, default=3)
    args = parse_bench_args(parser, argv)
    from toolkit.models.streaming import BlockStream, module_bytes

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = "cpu" if args.tiny else "cuda"
    result: dict = {"arch": args.arch, "tiny": args.tiny, "device": device, "runs": {}}

    def save():
        (out_dir / "stream_bench.json").write_text(json.dumps(result, indent=2))

    t0 = time.monotonic()
    module = build(args.arch, args.tiny, device)
    result["build_s"] = round(time.monotonic() - t0, 1)
    result["gib"] = round(module_bytes(module) / 2**30, 2)
    save()
    kwargs = inputs(module, device, args.tiny)
    step, reference = timed(module, kwargs, device, args.repeats)
    result["runs"]["resident"] = {"step_s": round(step, 5)}
    save()
    module.to("cpu")
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    t0 = time.monotonic()
    stream = BlockStream(module, device, rest_stays=True)
    result["pin_s"] = round(time.monotonic() - t0, 1)
    blocks = sum(stream.sizes)
    for share in [float(s) for s in args.keeps.split(",")]:
        kept = stream.keep(int(blocks * share))
        step, out = timed(module, kwargs, device, args.repeats)
        result["runs"][f"keep {share:g}"] = {
            "step_s": round(step, 5),
            "kept_gib": round(kept / 2**30, 2),
            "streamed_gib": round((blocks - kept) / 2**30, 2),
            "same_output": bool(torch.equal(out, reference)),
            "max_abs_diff": float((out.float() - reference.float()).abs().max()),
            "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if device == "cuda" else None,
        }
        save()
        print(share, result["runs"][f"keep {share:g}"], flush=True)
    stream.remove()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
