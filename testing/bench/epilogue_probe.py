"""The GEMM epilogues of toolkit/models/epilogues.py alone, at Flux.1-dev's 1024² shapes, against what inductor
makes of the same ops: do they save the memory-bound Triton kernels they remove, and are they as exact?

    python testing/bench/epilogue_probe.py --out RESULTS_DIR
    python testing/bench/epilogue_probe.py --out /tmp/smoke --tiny     # the same run on CPU, tokens / 16

* ``ff``: a double block's feed-forward projection, 4,096 image tokens, 3072 -> 12288, tanh GELU:
  ``torch.compile``'d ``gelu(linear(x))`` (cuBLAS with the bias, then a Triton GELU: the engine's ``auto``)
  against ``linear_gelu_tanh`` (cuBLASLt's GELU epilogue).
* ``single_tail``: a single block's MLP and output projection over 4,608 tokens:
  ``proj_out(cat(attn, gelu(proj_mlp(x))))`` compiled, against ``linear_of_concat(attn, linear_gelu_tanh(…))``.

Median of ``--repeats`` calls (CUDA events) after warm-ups, and the largest absolute difference from the same
ops in float32 on the same bf16 inputs. Results: RESULTS_DIR/epilogue_probe.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.attention_kernels import timed  # noqa: E402
from testing.bench.gpu_machine import bench_parser, micro_bench_setup, parse_bench_args  # noqa: E402
from toolkit.models.epilogues import linear_gelu_tanh, linear_of_concat  # noqa: E402

DIM, MLP = 3072, 12288  # Flux.1-dev: inner dim, mlp_ratio 4


def ff(x, w, b):
    import torch.nn.functional as F

    return F.gelu(F.linear(x, w, b), approximate="tanh")


def single_tail(attn, x, w_mlp, b_mlp, w_out, b_out):
    import torch
    import torch.nn.functional as F

    return F.linear(torch.cat([attn, ff(x, w_mlp, b_mlp)], -1), w_out, b_out)


def fused_tail(attn, x, w_mlp, b_mlp, w_out, b_out):
    return linear_of_concat(attn, linear_gelu_tanh(x, w_mlp, b_mlp), w_out, b_out)


def compare(cases: dict, inputs: tuple, args, cuda: bool) -> dict:
    """Each case's median ms and error against the first case's ops in float32."""
    reference = cases["float32"](*(t.float() for t in inputs))
    row = {}
    for name, fn in cases.items():
        if name == "float32":
            continue
        out = fn(*inputs)
        first, ms = timed(lambda fn=fn: fn(*inputs), args.repeats, cuda)
        row[name] = {
            "ms": round(ms, 4),
            "first_s": round(first, 2),
            "max_abs_err": float((out.float() - reference).abs().max()),
        }
    return row


def kernels(fn, inputs) -> list:
    """The GPU kernels one call runs, by name: whether cuBLASLt took the GELU into its GEMM."""
    import torch

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn(*inputs)
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def main(argv=None) -> int:
    import torch

    parser = bench_parser(__doc__, work="/tmp/aitk_epilogue")
    parser.add_argument("--repeats", type=int, default=50)
    args = parse_bench_args(parser, argv)
    device, dtype, out, meta = micro_bench_setup(args)
    cuda = device == "cuda"
    image, tokens = (4096, 4608) if not args.tiny else (256, 288)
    g = torch.Generator().manual_seed(0)

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).to(device, dtype)

    w_mlp, b_mlp = rand(MLP, DIM, scale=DIM**-0.5), rand(MLP, scale=0.1)
    w_out, b_out = rand(DIM, DIM + MLP, scale=(DIM + MLP) ** -0.5), rand(DIM, scale=0.1)
    result = {"meta": meta}
    ff_inputs = (rand(image, DIM), w_mlp, b_mlp)
    result["ff"] = compare(
        {"float32": ff, "compiled": torch.compile(ff), "eager": ff, "epilogue": linear_gelu_tanh}, ff_inputs, args, cuda
    )
    tail_inputs = (rand(tokens, DIM), rand(tokens, DIM), w_mlp, b_mlp, w_out, b_out)
    cases = {"float32": single_tail, "compiled": torch.compile(single_tail), "epilogue": fused_tail}
    result["single_tail"] = compare(cases, tail_inputs, args, cuda)
    if cuda:
        result["kernels"] = {
            "ff": kernels(linear_gelu_tanh, ff_inputs),
            "single_tail": kernels(fused_tail, tail_inputs),
        }
    for part in ("ff", "single_tail"):
        row = result[part]
        row["saved_ms"] = round(row["compiled"]["ms"] - row["epilogue"]["ms"], 4)
    # Per Flux step: 19 double blocks (ff on 4096 image + ff_context on 512 text tokens), 38 single blocks.
    result["saved_ms_per_flux_step_estimate"] = round(
        19 * result["ff"]["saved_ms"] * 4608 / 4096 + 38 * result["single_tail"]["saved_ms"], 2
    )
    (out / "epilogue_probe.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
