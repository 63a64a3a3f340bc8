"""Each SDPA kernel alone on the attention shapes the families run at their native sizes, before any pipeline:
is FlashAttention 4 faster than PyTorch's own flash kernel (FlashAttention 2) on this GPU, and is it as exact?

    python testing/bench/attention_kernels.py --out RESULTS_DIR [--fa4 /tmp/aitk_fa4_parts]
    python testing/bench/attention_kernels.py --out /tmp/smoke --tiny     # the same run on CPU, shapes / 16

Per shape and kernel (flash, cudnn, efficient, fa4): the median of ``--repeats`` calls timed with CUDA events
after three warm-ups (FA4's first call, its JIT compile, is reported as ``first_s``), and the largest absolute
difference from the math kernel in float32 on the same bf16 inputs. A kernel that cannot take a shape is
recorded with PyTorch's reason. Results: RESULTS_DIR/attention_kernels.json, rewritten after every shape.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.compile_bench import _only_kernel  # noqa: E402
from testing.bench.gpu_machine import bench_parser, micro_bench_setup, parse_bench_args  # noqa: E402
from toolkit.models.attention import FA4_IMPL, KERNELS, flash_impl  # noqa: E402
from toolkit.models.compile import first_line  # noqa: E402

# name -> (heads, query tokens, key tokens, head dim), batch 1, from the model cards' configs at native size.
SHAPES = {
    # Flux.1-dev 1024²: 24 heads x 128 (num_attention_heads, attention_head_dim); 64x64 latent patches + 512 T5
    "flux_1024": (24, 4608, 4608, 128),
    # Z-Image 1024²: dim 3840 / 30 heads; 4096 image patches + the padded caption (512 here)
    "zimage_1024": (30, 4608, 4608, 128),
    # Wan 2.1 1.3B 832x480x33: 12 heads x 128; 9 latent frames x 30 x 52 patches (self-attention)
    "wan21_480p": (12, 14040, 14040, 128),
    # Wan 2.1 1.3B cross-attention to 512 UMT5 tokens
    "wan21_cross": (12, 14040, 512, 128),
    # SDXL 1024²: UNet self-attention at 64x64 (10 heads x 64) and 32x32 (20 heads x 64), CFG batch folded in
    "sdxl_64x64": (20, 4096, 4096, 64),
    "sdxl_32x32": (40, 1024, 1024, 64),
    # SD3.5 Large 1024²: 38 heads x 64; 4096 image patches + 333 text tokens (77 CLIP + 256 T5)
    "sd35_1024": (38, 4429, 4429, 64),
}


def timed(fn, repeats: int, cuda: bool) -> tuple[float, float]:
    """(first call s, median call ms)."""
    import torch

    t0 = time.monotonic()
    fn()
    if cuda:
        torch.cuda.synchronize()
    first = time.monotonic() - t0
    for _ in range(2):
        fn()
    times = []
    for _ in range(repeats):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1000)
    return first, statistics.median(times)


def measure(name, shape, args, device, dtype) -> dict:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, current_flash_attention_impl, sdpa_kernel

    heads, q_len, k_len, dim = shape
    if args.tiny:
        q_len, k_len = max(16, q_len // 16), max(16, k_len // 16)
    g = torch.Generator(device="cpu").manual_seed(0)
    q, k, v = (torch.randn(1, heads, n, dim, generator=g).to(device, dtype) for n in (q_len, k_len, k_len))
    with sdpa_kernel([SDPBackend.MATH]):
        reference = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
    row = {"shape": [heads, q_len, k_len, dim]}
    for kernel in KERNELS:
        try:
            with _only_kernel(kernel), flash_impl(FA4_IMPL if kernel == "fa4" else None):
                impl = current_flash_attention_impl()  # FA4's row ran FA4, not PyTorch's flash kernel
                out = F.scaled_dot_product_attention(q, k, v)
                first, ms = timed(lambda: F.scaled_dot_product_attention(q, k, v), args.repeats, device == "cuda")
            row[kernel] = {
                "ms": round(ms, 4),
                "first_s": round(first, 3),
                "max_abs_err": float((out.float() - reference).abs().max()),
                "flash_impl": impl,
            }
        except Exception as e:
            row[kernel] = {"unsupported": first_line(e)}
    return row


def main(argv=None) -> int:

    parser = bench_parser(__doc__, work="/tmp/aitk_attention")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    args = parse_bench_args(parser, argv)
    device, dtype, out, meta = micro_bench_setup(args)
    result = {"meta": meta, "shapes": {}}
    for name in args.shapes.split(","):
        result["shapes"][name] = measure(name, SHAPES[name], args, device, dtype)
        print(name, json.dumps(result["shapes"][name]), flush=True)
        (out / "attention_kernels.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
