"""Where a compiled step's time goes on the GPU: kernel time by kind, and how long the GPU sat idle.

    python testing/bench/step_profile.py --out RESULTS_DIR --wheels .whl_engine [--families flux] [--steps 4]  # GPU
    python testing/bench/step_profile.py --out /tmp/profile --tiny                                             # CPU

Why: Flux.1-dev's lossless step stays at 0.130 s against issue #14's 0.125 with every lossless attention kernel
for Hopper timed (FA4 on a par with cuDNN) and every lossless compile variant (docs/BENCHMARKS.md, thirteenth
run). Two different things could hold the other 4 %: the GPU waiting between kernels for the CPU to launch the
next (57 compiled blocks, their guards, the pipeline's Python between steps), which CUDA graphs remove, or the
kernels themselves (GEMMs at their rate; inductor's fused element-wise and norm kernels), which they do not.
This tells which, before any more compile variants are timed.

Per family: the bare pipeline (testing/bench/bare_pipeline.py) compiled the engine's way (``--compile``, default
``auto``), a warm-up call, one call timed without the profiler, then one under ``torch.profiler``. From the
trace's device kernels: the time some kernel ran (the union of their intervals), the rest of the profiled
call's steps being the GPU idle; kernel time by kind (``kind_of``); the top kernels. The profiler adds CPU time
per launch, so its idle is an upper bound; the unprofiled step is the figure to compare with. RESULTS_DIR/
step_profile.json is written after every family.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.gpu_machine import bench_parser, micro_bench_setup, parse_bench_args  # noqa: E402

# Kernel names by kind, first match wins: cuDNN's attention kernel is also a wgmma kernel, so attention comes
# before GEMMs. cuBLAS's Hopper GEMMs are named nvjet_* or sm90_xmma_*; CUTLASS's cutlass_*.
KINDS = (
    ("attention", ("flash", "fmha", "sdpa", "attention", "attn")),
    ("gemm", ("gemm", "nvjet", "xmma", "cutlass", "cublas", "matmul", "wgmma")),
    ("triton", ("triton_",)),
    ("copy", ("memcpy", "memset", "copy")),
)


MARK = "aitk::denoiser"  # a profiler range around each denoiser call
CALL = "aitk::call"  # around the whole pipeline call
PREPARE = "aitk::prepare"  # around the modulation table's prepare (toolkit/models/modulation.py), where there is one


def _ranged(name, fn, *args):
    from torch.profiler import record_function

    with record_function(name):
        return fn(*args)


def anatomy(events: list) -> dict:
    """Where a whole call's wall time goes on the CPU's clock (the call ends with a sync, so its end is the GPU's
    too): before the first denoiser call (encoding, latents, the table's fill), each denoiser call (the first
    beside the median: a CUDA graph's first replay of a call, a plan's read-back), between them (the scheduler
    and the step hook) and after the last (the VAE and the sync). Why: on the H100 under ``max`` with the
    modulation table the first progress frame came 0.30 s into a request against 0.03 s without it
    (docs/BENCHMARKS.md, twenty-third run)."""
    import statistics

    def spans(name):
        return sorted(
            (e.time_range.start, e.time_range.end) for e in events if e.name == name and e.device_type != _cuda()
        )

    call, calls, prepares = spans(CALL), spans(MARK), spans(PREPARE)
    if not call or not calls:
        return {}
    (start, end), ms = call[0], lambda us: round(us / 1000, 3)
    durations = [b - a for a, b in calls]
    gaps = [b[0] - a[1] for a, b in zip(calls, calls[1:])]
    return {
        "call_ms": ms(end - start),
        "before_first_denoiser_ms": ms(calls[0][0] - start),
        "first_denoiser_ms": ms(durations[0]),
        "median_denoiser_ms": ms(statistics.median(durations)),
        "median_gap_ms": ms(statistics.median(gaps)) if gaps else None,
        "after_last_denoiser_ms": ms(end - calls[-1][1]),
        "first_prepares_ms": [ms(b - a) for a, b in prepares][:3],  # the first fills the table
        "median_prepare_ms": ms(statistics.median(b - a for a, b in prepares)) if prepares else None,
    }


def kind_of(kernel: str) -> str:
    name = kernel.lower()
    return next((kind for kind, marks in KINDS if any(mark in name for mark in marks)), "other")


def covered(intervals: list) -> float:
    """The length of the union of (start, end) intervals: the time at least one kernel ran."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def breakdown(kernels: list, steps: int, window: tuple) -> dict:
    """``kernels``: (name, start µs, end µs) from a profiled call of ``steps`` steps; ``window``: (start, end) µs
    of its denoising loop, from the first denoiser call to the end of the last. Kernels outside it (the text
    encoders, the VAE) do not count."""
    start, end = window
    inside = [(n, max(a, start), min(b, end)) for n, a, b in kernels if b > start and a < end]
    by_kind: dict = {}
    by_name: dict = {}
    for name, a, b in inside:
        by_kind[kind_of(name)] = by_kind.get(kind_of(name), 0.0) + b - a
        by_name[name] = by_name.get(name, 0.0) + b - a
    busy = covered([(a, b) for _, a, b in inside])
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:12]
    return {
        "window_ms_per_step": round((end - start) / steps / 1000, 3),
        "busy_ms_per_step": round(busy / steps / 1000, 3),
        "idle_ms_per_step": round((end - start - busy) / steps / 1000, 3),
        "kernel_ms_per_step": {
            k: round(us / steps / 1000, 3) for k, us in sorted(by_kind.items(), key=lambda kv: -kv[1])
        },
        "top_kernels_ms_per_step": [[name[:160], round(us / steps / 1000, 3)] for name, us in top],
    }


def denoiser_window(events: list) -> tuple:
    """The span of the ``aitk::denoiser`` ranges: on the GPU's timeline where the profiler put them there (its
    ``gpu_user_annotation``), else the CPU's."""
    gpu = [e for e in events if e.name == MARK and e.device_type == _cuda()]
    spans = [(e.time_range.start, e.time_range.end) for e in (gpu or [e for e in events if e.name == MARK])]
    return min(a for a, _ in spans), max(b for _, b in spans)


def _cuda():
    import torch

    return torch.autograd.DeviceType.CUDA


def profile_family(args, arch: str, device: str, dtype) -> dict:
    import statistics

    from torch.profiler import ProfilerActivity, profile, record_function

    from testing.bench.bare_pipeline import BarePipeline, free
    from testing.bench.gpu_suite import SETTINGS, TINY_SETTINGS
    from testing.bench.real_size import BUILDERS

    folder = Path(args.models) / arch
    BUILDERS[arch](str(folder), device, dtype, small=args.tiny)
    settings = (TINY_SETTINGS if args.tiny else SETTINGS)[arch]
    bare = BarePipeline(arch, str(folder), device, "float32" if args.tiny else "bf16", settings, Path(args.out))
    row = {"compiled": bare.compile(args.compile)}
    bare.call(2)  # compiles
    row["step_s"] = statistics.median(bare.call(args.steps)[1] for _ in range(args.repeats))  # unprofiled
    denoiser = (
        bare.model.pipeline.transformer if hasattr(bare.model.pipeline, "transformer") else bare.model.pipeline.unet
    )
    forward = denoiser.forward

    def marked(*a, **kw):
        with record_function(MARK):
            return forward(*a, **kw)

    denoiser.forward = marked
    table = getattr(denoiser, "_aitk_modulation", None)
    prepare = table.prepare if table is not None else None
    if table is not None:
        table.prepare = lambda kwargs: _ranged(PREPARE, prepare, kwargs)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    try:
        with profile(activities=activities) as prof:
            with record_function(CALL):
                bare.call(args.steps)
    finally:
        denoiser.forward = forward
        if table is not None:
            del table.prepare
    events = list(prof.events())
    row["call_anatomy"] = anatomy(events)
    kernels = [
        (e.name, e.time_range.start, e.time_range.end) for e in events if e.device_type == _cuda() and e.name != MARK
    ]
    row.update(breakdown(kernels, args.steps, denoiser_window(events)), kernels=len(kernels))
    del bare, denoiser
    free()
    return row


def main(argv=None) -> int:
    parser = bench_parser(__doc__, work="/tmp/aitk_step_profile")
    parser.add_argument("--families", default="flux")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3, help="unprofiled calls; their median step")
    parser.add_argument("--compile", default="auto", choices=("off", "auto", "max"))
    args = parse_bench_args(parser, argv)
    if args.tiny and args.compile == "auto":
        args.compile = "off"  # inductor on a CPU compiles for minutes: the smoke run checks the plumbing
    device, dtype, out, meta = micro_bench_setup(args)
    result = {"meta": meta | {"compile": args.compile, "steps": args.steps}, "families": {}}
    for arch in args.families.split(","):
        try:
            result["families"][arch] = profile_family(args, arch, device, dtype)
        except Exception as e:  # one family's failure must not lose the others
            result["families"][arch] = {"failed": f"{type(e).__name__}: {e}"[:400]}
        (out / "step_profile.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=1)[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
