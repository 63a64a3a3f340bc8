"""docs/img/shapes_demo.png: builtin:shapes generated through the real engine and HTTP server, on CPU, labelled.

python -m testing.train_shapes.demo [--out docs/img/shapes_demo.png] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEMO_PROMPTS = [
    "a red circle on a blue background",
    "a green square on a white background",
    "a yellow triangle on a black background",
    "a purple circle on a gray background",
    "an orange square on a purple background",
    "a blue triangle on a yellow background",
    "a green circle on a black background",
    "a yellow square on a red background",
    "a red triangle on a white background",
    "a blue square on an orange background",
    "an orange circle on a green background",
    "a purple triangle on a white background",
]


def body(prompt: str, seed: int, steps: int = 20, cfg: float = 5.0) -> dict:
    return {
        "model": {"arch": "sd1", "name_or_path": "builtin:shapes", "dtype": "float32"},
        "sample": {
            "prompt": prompt,
            "width": 64,
            "height": 64,
            "num_inference_steps": steps,
            "guidance_scale": cfg,
            "seed": seed,
        },
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testing.train_shapes.demo")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "shapes_demo.png"))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ["HF_HUB_OFFLINE"] = "1"
    import numpy as np
    from PIL import Image

    from testing.engine_harness import EngineHarness
    from testing.train_shapes.evaluate import grid

    harness = EngineHarness(Path(tempfile.mkdtemp(prefix="shapes-demo-")))
    try:
        images = []
        for i, prompt in enumerate(DEMO_PROMPTS):
            out = harness.client.generate_wait(body(prompt, args.seed + i))
            images.append((prompt, np.asarray(Image.open(out["result"]["path"]).convert("RGB"))))
    finally:
        harness.close()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    grid(images, cols=6, scale=3).save(args.out, optimize=True)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
