"""Where a result's save time goes, on the machine that runs the engine (issue #14's peer line).

    python testing/bench/save_probe.py --out RESULTS_DIR --wheels .whl_engine [--size 1024] [--repeats 5]
    python testing/bench/save_probe.py --out /tmp/smoke --tiny

On the H100 machine (docs/BENCHMARKS.md, twenty-fourth run) the engine's ``save_s`` for a 1024² Flux image was
0.26 s, while the bench's own ``save_image`` of the same image, float-to-uint8 conversion included, took 0.21 s:
the engine's end to end then lost to the peers' by 1 %. This times each layer of the engine's save on one
picture in one process (``Image.save`` at the engine's Pillow level, ``save_image``: fpng since the
twenty-fourth run, toolkit/png_writer.py; ``save_media`` with its
thumbnail, ``save_generated`` with the embedded settings, the last also from a second thread), after the same
size through an engine (``python run.py``, a small Flux on the GPU, latents streamed every step), whose
results report ``save_s``; the layers are then timed on that engine's own last picture (random-init weights
draw noise, which compresses worse and slower than a real picture).

Results: RESULTS_DIR/save_probe.json, written after each stage.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.engine_process import engine_process  # noqa: E402
from testing.bench.gpu_machine import bench_parser, parse_bench_args  # noqa: E402


def _median_s(fn, repeats: int) -> dict:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median_s": round(statistics.median(times), 4), "runs": [round(t, 4) for t in times]}


def _on_a_thread(fn):
    """As the engine's saver runs it: another thread, the main one waiting."""

    def run():
        thread = threading.Thread(target=fn)
        thread.start()
        thread.join()

    return run


def layers(image, folder: Path, repeats: int) -> dict:
    from PIL import Image

    from toolkit.config_modules import GenerateImageConfig
    from toolkit.media import PNG_COMPRESS_LEVEL, GeneratedMedia, save_generated, save_image, save_media
    from toolkit.media_info import PARAMETERS

    info = {PARAMETERS: "a red fox in the snow\nSteps: 28, Seed: 1", "aitk": json.dumps({"prompt": "x" * 900})}
    gen = GenerateImageConfig(prompt="x", width=image.shape[1], height=image.shape[0], output_folder=str(folder))
    generated = GeneratedMedia("image", image=image)
    return {
        "pil_save": _median_s(
            lambda: Image.fromarray(image).save(folder / "a.png", compress_level=PNG_COMPRESS_LEVEL), repeats
        ),
        "save_image": _median_s(lambda: save_image(image, str(folder / "b.png")), repeats),
        "save_media": _median_s(lambda: save_media(image, str(folder / "c.png")), repeats),
        "save_generated": _median_s(lambda: save_generated(generated, gen, info=info), repeats),
        "save_generated_thread": _median_s(_on_a_thread(lambda: save_generated(generated, gen, info=info)), repeats),
    }


def through_engine(args, device: str) -> dict:
    import torch

    from testing.bench.real_size import BUILDERS

    model = Path(args.models) / "flux_small"
    if not (model / ".done").exists():
        BUILDERS["flux"](str(model), device, torch.float32 if args.tiny else torch.bfloat16, small=True)
        (model / ".done").write_text("ok")
    body = {
        "model": {"arch": "flux", "name_or_path": str(model), "dtype": "float32" if args.tiny else "bf16"},
        "sample": {"prompt": "a red fox", "num_inference_steps": 4, "seed": 1, "width": args.size, "height": args.size},
        "stream": {"latents": "raw", "every_n_steps": 1},
    }
    saves, path = [], None
    roots = {"model_roots": [str(args.models)]}  # request paths to checkpoints load only from there
    with engine_process(Path(args.work) / "engine", device, log=Path(args.out) / "engine.log", **roots) as client:
        for _ in range(1 + args.repeats):
            for frame in client.generate(body):
                if frame.type == "result":
                    saves.append(frame.header["timings"]["save_s"])
                    path = frame.header["path"]
                elif frame.type == "error":
                    raise RuntimeError(frame.header.get("message"))
    return {"save_s": round(statistics.median(saves[1:]), 4), "runs": saves, "path": path}


def main(argv=None) -> int:
    parser = bench_parser(__doc__, work="/tmp/aitk_save_probe")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    args = parse_bench_args(parser, argv)
    import numpy as np
    import torch
    from PIL import Image

    device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
    out, folder = Path(args.out), Path(args.work) / "layers"
    out.mkdir(parents=True, exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    results: dict = {"size": args.size, "device": device}
    results["engine"] = through_engine(args, device)
    (out / "save_probe.json").write_text(json.dumps(results, indent=1))
    image = np.asarray(Image.open(results["engine"]["path"]).convert("RGB"))  # the engine's own picture
    results["layers"] = layers(image, folder, args.repeats)
    (out / "save_probe.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
