"""Streaming overhead on CPU: per-step time of the bare diffusers call vs the engine streaming every step.

    python testing/bench/stream_overhead.py [--arch sd1] [--steps 200] [--repeats 3] [--write docs/bench/HISTORY.md]

Three ways to run the same generation (same tiny checkpoint, seed, size, steps):
  bare    pipe(...) called directly, no hook;
  hooked  BaseModel.generate_images with the step hook turning every step into progress + latent frames
          (what the engine's main thread does), no HTTP;
  http    the real engine over HTTP with a client reading the stream (includes saving the file).
Per-step time is (wall time of the call) / steps, median of the repeats. Tiny steps are ~ms, so this is the
worst case for relative overhead: on a real model a step is 50-3000 ms and the same absolute cost vanishes.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def measure(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    import torch

    from extensions_built_in.inference_engine.latent_preview import shrink
    from extensions_built_in.inference_engine.stream import FrameStream
    from testing.bench.engine_process import engine_process
    from testing.stream_contract import body_for
    from toolkit.config_modules import GenerateImageConfig, ModelConfig
    from toolkit.models import tiny
    from toolkit.models.registry import get_model_class

    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="sd1")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", help="append the table to this markdown file")
    args = parser.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))

    cls = get_model_class(args.arch)
    model = cls("cpu", ModelConfig(name_or_path=f"tiny:{args.arch}", arch=args.arch, dtype="float32"))
    model.load_model()
    out = tempfile.mkdtemp()
    sample = dict(
        tiny.sample(args.arch), prompt="a red circle", num_inference_steps=args.steps, seed=1, guidance_scale=4.0
    )
    gen = GenerateImageConfig(**sample, output_folder=out)
    model.prepare_gen_config(gen)

    def bare():
        g = torch.Generator("cpu").manual_seed(1)
        with torch.inference_mode():
            model.pipeline(**model.pipeline_kwargs(gen), generator=g, output_type="np")

    def hooked():
        stream = FrameStream("bench")

        def on_step(step):
            stream.emit("progress", step=step.step + 1, total=step.num_steps, eta_s=0.0, it_s=0.0)
            stream.emit_latent(step.step + 1, shrink(step.latents(), cls.latent.layout), cls.latent.layout)
            stream.collect()  # a reader that keeps up

        model.sample_step_hook = on_step
        try:
            g = GenerateImageConfig(**sample, output_folder=out)
            model.prepare_gen_config(g)
            with torch.inference_mode():
                model._sample(model.pipeline, g)
        finally:
            model.sample_step_hook = None

    bare_s = measure(bare, args.repeats)
    hooked_s = measure(hooked, args.repeats)
    body = body_for(args.arch, steps=args.steps, seed=1)
    with engine_process(Path(out) / "engine", "cpu") as client:

        def http():
            for _ in client.generate(body):
                pass

        http_s = measure(http, args.repeats)

    per = {k: v / args.steps * 1000 for k, v in (("bare", bare_s), ("hooked", hooked_s), ("http", http_s))}
    rows = [
        f"| {args.arch} | {args.steps} | {per['bare']:.2f} | {per['hooked']:.2f} | {per['hooked'] / per['bare']:.3f} "
        f"| {per['hooked'] - per['bare']:+.2f} | {per['http']:.2f} | {per['http'] / per['bare']:.3f} "
        f"| {per['http'] - per['bare']:+.2f} |"
    ]
    header = (
        "| arch | steps | bare ms/step | streamed ms/step (hook) | ratio | added ms/step | over HTTP ms/step "
        "| ratio | added ms/step |\n|---|---|---|---|---|---|---|---|---|"
    )
    table = header + "\n" + "\n".join(rows)
    print(table)
    if args.write:
        meta = (
            f"\n### Streaming overhead, CPU ({time.strftime('%Y-%m-%d')}, "
            f"{platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} cores, torch {torch.__version__})\n\n`python testing/bench/stream_overhead.py --arch "
            f"{args.arch} --steps {args.steps}`: every step streamed (progress + raw latent frame).\n\n"
        )
        with open(args.write, "a") as f:
            f.write(meta + table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
