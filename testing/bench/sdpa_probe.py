"""Which SDPA kernel a compiled block really runs under the engine's attention order, and what that costs.

    python testing/bench/sdpa_probe.py --out RESULTS_DIR [--wheels .whl_engine] [--fa4 /tmp/aitk_fa4_parts]  # GPU
    python testing/bench/sdpa_probe.py --out /tmp/probe --tiny                   # CPU smoke run

Why: alone, cuDNN's attention took 0.42 ms against flash's 0.81 ms at Flux's 1024² shape on the H200
(``attention_kernels.py``, 2026-12-03): 57 attention calls make that ~22 ms a step, which is the eager gap
measured between the two (0.1932 vs 0.1713 s/step), yet compiled, flash and cuDNN were within 1 %. So either
inductor's graph runs one kernel whatever the order, or something else eats the gain.

Stage ``sdpa`` (torch only): one attention call at Flux's shape inside ``attention_kernels(first)``
(toolkit/models/attention.py, what the engine enters around a generation), eager and compiled; the attention
ops and CUDA kernels the profiler saw, and the median time. Stage ``flux`` (diffusers): the real-size Flux.1-dev
transformer (random init on the GPU), one 1024² forward, eager and compiled by the engine's ``compile_denoiser``,
under flash first and cuDNN first (and FA4 with ``--fa4``). RESULTS_DIR/sdpa_probe.json is rewritten after every
measurement. Answered on 2026-12-03 (docs/BENCHMARKS.md, "Twelfth run"): each order runs its own kernel compiled;
the 1 % came from inductor's cache, and PyTorch's own order on the H200 is already cuDNN's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.attention_kernels import timed  # noqa: E402
from testing.bench.gpu_machine import bench_parser, micro_bench_setup, parse_bench_args  # noqa: E402
from toolkit.models.attention import attention_kernels  # noqa: E402
from toolkit.models.compile import first_line  # noqa: E402

ORDERS = ("flash", "cudnn", "efficient")
MARKS = ("scaled_dot_product", "flash", "cudnn", "fmha", "attention")


def ops_seen(fn, cuda: bool) -> list:
    """The attention ops (aten) and kernels (CUDA) one call ran, by the profiler's names."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        fn()
        if cuda:
            import torch

            torch.cuda.synchronize()
    names = {event.key for event in prof.key_averages()}
    return sorted(name[:160] for name in names if any(mark in name.lower() for mark in MARKS))


def measure(fn, args, cuda: bool) -> dict:
    try:
        first, ms = timed(fn, args.repeats, cuda)
        return {"ms": round(ms, 4), "first_s": round(first, 2), "ops": ops_seen(fn, cuda)}
    except Exception as e:
        return {"failed": first_line(e)}


def compiler(args):
    import torch

    # On CPU a smoke run: AOT autograd still picks the kernel at trace time, without inductor's minutes.
    return (lambda fn: torch.compile(fn, backend="aot_eager")) if args.tiny else torch.compile


def sdpa_stage(args, device, dtype, rows, save) -> None:
    import torch
    import torch.nn.functional as F

    heads, tokens, dim = (2, 64, 16) if args.tiny else (24, 4608, 128)
    q, k, v = (torch.randn(1, heads, tokens, dim, device=device, dtype=dtype) for _ in range(3))

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q * 1.0, k, v)

    for first in ORDERS:
        for compiled in (False, True):
            torch._dynamo.reset()
            fn = compiler(args)(attend) if compiled else attend
            with attention_kernels(first):
                rows[f"{first}{'_compiled' if compiled else ''}"] = measure(
                    lambda fn=fn: fn(q, k, v), args, device == "cuda"
                )
            save()


def flux_stage(args, device, dtype, rows, save) -> None:
    import torch
    from diffusers import FluxTransformer2DModel

    import toolkit.models.compile as compile_module
    from testing.bench.real_size import _build

    small = dict(
        num_layers=1, num_single_layers=1, attention_head_dim=16, num_attention_heads=2, axes_dims_rope=(4, 6, 6)
    )
    text_width, pooled = (32, 32) if args.tiny else (4096, 768)
    model = _build(
        lambda: FluxTransformer2DModel(
            **(small if args.tiny else {}),
            joint_attention_dim=text_width,
            pooled_projection_dim=pooled,
            guidance_embeds=True,
        ),
        device,
        dtype,
    )
    image, text = (64, 16) if args.tiny else (4096, 512)
    inputs = dict(
        hidden_states=torch.randn(1, image, 64, device=device, dtype=dtype),
        encoder_hidden_states=torch.randn(1, text, text_width, device=device, dtype=dtype),
        pooled_projections=torch.randn(1, pooled, device=device, dtype=dtype),
        timestep=torch.tensor([0.5], device=device, dtype=dtype),
        img_ids=torch.zeros(image, 3, device=device, dtype=dtype),
        txt_ids=torch.zeros(text, 3, device=device, dtype=dtype),
        guidance=torch.tensor([3.5], device=device, dtype=dtype),
        return_dict=False,
    )

    def forward():
        with torch.no_grad():
            return model(**inputs)

    orders = ("flash", "cudnn") + (("fa4",) if args.fa4 else ())  # fa4: its carried parts (bench_parser's --fa4)
    for first in orders:
        with attention_kernels(first):
            rows[first] = measure(forward, args, device == "cuda")
        save()
    if args.tiny:
        compile_module.torch_compile = lambda fn, **kwargs: torch.compile(fn, backend="aot_eager")
    compile_module.compile_denoiser(model, "max" if args.tiny else "auto", placement="gpu")
    for first in orders:
        torch._dynamo.reset()  # traced again under this order
        with attention_kernels(first):
            rows[f"{first}_compiled"] = measure(forward, args, device == "cuda")
        save()


def main(argv=None) -> int:

    parser = bench_parser(__doc__, work="/tmp/aitk_sdpa_probe")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--stages", default="sdpa,flux")
    args = parse_bench_args(parser, argv)
    device, dtype, out, meta = micro_bench_setup(args)
    result = {"meta": meta}

    def save():
        (out / "sdpa_probe.json").write_text(json.dumps(result, indent=2))

    stages = {"sdpa": sdpa_stage, "flux": flux_stage}
    for name in args.stages.split(","):
        result[name] = {}
        try:
            stages[name](args, device, dtype, result[name], save)
        except Exception as e:
            result[name]["failed"] = first_line(e)
        save()
        print(name, json.dumps(result[name])[:2000], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
