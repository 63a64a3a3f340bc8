"""Which families share denoiser calls, and how close each batched image is to its image alone.

For every family's tiny checkpoint (or those named): two requests alone, then the same two started together
on threads sharing steps (toolkit/models/step_batching.py). Prints one row per family: whether batching is
refused and why, the denoiser calls by how many requests each carried, and each image's PSNR against alone.
A family whose calls never merge still gives the same images (it runs alone within the batch); one that
merges must stay at or above 40 dB.

    .venv/bin/python testing/bench/batch_families.py [arch ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import pathlib
import sys
import threading
import traceback

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def as_array(media) -> np.ndarray:
    for name in ("image", "frames", "audio"):
        value = getattr(media, name, None)
        if value is not None:
            return np.asarray(value, dtype=np.float64)
    raise ValueError("no media")


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(((a - b) ** 2).mean())
    peak = max(1.0, float(np.abs(a).max()))
    return float("inf") if mse == 0 else round(10 * np.log10(peak**2 / mse), 1)


def requests(model, folder):
    from testing.test_models import gen_config

    return [
        gen_config(model, folder, seed=11, prompt="a red circle", num_inference_steps=8),
        gen_config(
            model, folder, seed=12, prompt="a blue square on green grass", guidance_scale=5.0, num_inference_steps=8
        ),
    ]


def family_row(arch: str, folder) -> dict:
    from toolkit.config_modules import ModelConfig
    from toolkit.models import step_batching
    from toolkit.models.registry import get_model_class

    model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
    model.load_model()
    gens = requests(model, folder)
    row = {"arch": arch, "refusal": step_batching.refusal(model, gens[0])}
    if row["refusal"]:
        return row
    alone = [as_array(model.generate_media(copy.deepcopy(g))) for g in gens]
    batcher, out, errors = step_batching.StepBatcher(), {}, {}
    start = threading.Barrier(len(gens))

    def run(i):
        start.wait()
        try:
            out[i] = as_array(model.generate_media(copy.deepcopy(gens[i]), batch=batcher.member(str(i))))
        except Exception:
            errors[i] = traceback.format_exc(limit=3)

    with step_batching.gathering(step_batching.denoisers(model), step_batching.other_modules(model)):
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(gens))]
        [t.start() for t in threads]
        [t.join(600) for t in threads]
    row["calls_by_size"] = dict(sorted(batcher.sizes.items()))
    row["merged"] = any(size > 1 for size in batcher.sizes)
    row["psnr_db"] = [psnr(a, out[i]) if i in out else None for i, a in enumerate(alone)]
    if errors:
        row["error"] = next(iter(errors.values()))[-600:]
    return row


def main() -> None:
    import tempfile

    from toolkit.models.registry import ARCHS

    parser = argparse.ArgumentParser()
    parser.add_argument("archs", nargs="*")
    parser.add_argument("--json")
    args = parser.parse_args()
    folder = pathlib.Path(tempfile.mkdtemp())
    rows = []
    for arch in args.archs or sorted(ARCHS):
        rows.append(family_row(arch, folder))
        print(json.dumps(rows[-1]), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
