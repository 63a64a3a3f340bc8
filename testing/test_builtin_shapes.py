"""builtin:shapes, the tiny trained SD1 model, follows its prompts: checked through the real engine and HTTP.

The model (toolkit/models/builtin/shapes, trained by testing/train_shapes/train.py) draws a circle, square or
triangle in one of six colours on a plain background. Each generated image is scored the way
testing/train_shapes/dataset.py's ``score_image`` reads it: the shape region is the largest blob of pixels away
from the prompted background colour; its dominant palette colour must be the prompted colour, and the shape whose
rendered mask fits it best (IoU, position and size searched) must be the prompted shape.

Thresholds (chance: colour 1/6, shape 1/3), over 18 prompts (every shape x colour pair) x 2 seeds, 20 DDIM
steps, CFG 5, 64x64, CPU:
  colour accuracy >= 0.80, shape accuracy >= 0.75, every shape >= 0.60 and every colour >= 0.50 on its own,
  background accuracy >= 0.75, median best-fit IoU >= 0.80.
Measured on the shipped model (same prompts, seeds 0-7, 144 images): 1.00 for colour, shape and background;
lowest best-fit IoU 0.89 (CFG 1 on seed 0: also 18/18).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import numpy as np
import pytest
from PIL import Image

from testing.engine_harness import EngineHarness
from testing.train_shapes import dataset as D
from toolkit.models.components.loading import builtin_checkpoint

STEPS, CFG, SEEDS = 20, 5.0, (0, 1)
COLOUR_MIN, SHAPE_MIN, PER_SHAPE_MIN, PER_COLOUR_MIN, BACKGROUND_MIN, MEDIAN_IOU_MIN = (
    0.80,
    0.75,
    0.60,
    0.50,
    0.75,
    0.80,
)
BACKGROUND_FOR = {  # one background per (shape, colour): varied, always drawable with that colour
    ("circle", "red"): "blue",
    ("square", "green"): "white",
    ("triangle", "blue"): "yellow",
    ("circle", "yellow"): "black",
    ("square", "purple"): "gray",
    ("triangle", "orange"): "green",
    ("circle", "green"): "purple",
    ("square", "blue"): "orange",
    ("triangle", "red"): "white",
    ("circle", "orange"): "black",
    ("square", "yellow"): "blue",
    ("triangle", "purple"): "yellow",
    ("circle", "purple"): "white",
    ("square", "red"): "green",
    ("triangle", "green"): "black",
    ("circle", "blue"): "gray",
    ("square", "orange"): "purple",
    ("triangle", "yellow"): "red",
}
PROMPTS = [(shape, colour, BACKGROUND_FOR[shape, colour]) for colour in D.COLOURS for shape in D.SHAPES]


def body(prompt: str, seed: int, cfg: float = CFG, steps: int = STEPS) -> dict:
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


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    harness = EngineHarness(tmp_path_factory.mktemp("shapes_engine"))
    yield harness
    harness.close()


def generate(engine, prompt: str, seed: int, **kw) -> tuple[np.ndarray, str]:
    out = engine.client.generate_wait(body(prompt, seed, **kw))
    assert out["http_status"] == 200, out
    path = out["result"]["path"]
    return np.asarray(Image.open(path).convert("RGB")), path


@pytest.fixture(scope="module")
def scored(engine):
    rows = []
    for seed in SEEDS:
        for shape, colour, background in PROMPTS:
            prompt = D.caption(shape, colour, background)
            image, path = generate(engine, prompt, seed)
            rows.append(
                dict(
                    prompt=prompt,
                    seed=seed,
                    want_shape=shape,
                    want_colour=colour,
                    path=path,
                    **D.score_image(image, shape, colour, background),
                )
            )
    return rows


def _rate(rows, key) -> float:
    return float(np.mean([r[key] for r in rows]))


def _misses(rows, key) -> str:
    return json.dumps(
        [{k: r[k] for k in ("prompt", "seed", "shape", "colour", "background", "area")} for r in rows if not r[key]],
        indent=1,
    )


def test_prompts_cover_every_shape_and_colour():
    assert len(PROMPTS) >= 12
    assert {p[0] for p in PROMPTS} == set(D.SHAPES) and {p[1] for p in PROMPTS} == set(D.COLOURS)
    assert all(bg in D.backgrounds_for(colour) for _, colour, bg in PROMPTS)


def test_colour_inside_the_shape_is_the_prompted_colour(scored):
    assert _rate(scored, "colour_ok") >= COLOUR_MIN, _misses(scored, "colour_ok")
    by_colour = defaultdict(list)
    for r in scored:
        by_colour[r["want_colour"]].append(r)
    for colour, rows in by_colour.items():
        assert _rate(rows, "colour_ok") >= PER_COLOUR_MIN, (colour, _misses(rows, "colour_ok"))


def test_shape_check_picks_the_prompted_shape_well_above_chance(scored):
    assert _rate(scored, "shape_ok") >= SHAPE_MIN, _misses(scored, "shape_ok")
    by_shape = defaultdict(list)
    for r in scored:
        by_shape[r["want_shape"]].append(r)
    for shape, rows in by_shape.items():
        assert _rate(rows, "shape_ok") >= PER_SHAPE_MIN, (shape, _misses(rows, "shape_ok"))
    best = [r["ious"].get(r["want_shape"], 0.0) for r in scored]
    assert float(np.median(best)) >= MEDIAN_IOU_MIN, best


def test_background_is_the_prompted_background(scored):
    assert _rate(scored, "background_ok") >= BACKGROUND_MIN, _misses(scored, "background_ok")


def test_changing_only_the_prompt_changes_the_output(engine, scored):
    """Same seed and settings; one word of the prompt changes, and the image follows that word."""
    base, _ = generate(engine, "a red circle on a white background", 3)
    for prompt, shape, colour in (
        ("a blue circle on a white background", "circle", "blue"),
        ("a red triangle on a white background", "triangle", "red"),
    ):
        image, _ = generate(engine, prompt, 3)
        assert np.abs(image.astype(int) - base.astype(int)).mean() > 5.0, prompt  # measured: 28 and 54
        score = D.score_image(image, shape, colour, "white")
        assert score["shape_ok"] and score["colour_ok"], (prompt, score)


def test_cfg_1_and_cfg_5_differ_and_a_repeat_is_identical(engine, scored):
    row = scored[0]
    image5 = np.asarray(Image.open(row["path"]).convert("RGB"))
    again, path = generate(engine, row["prompt"], row["seed"])
    assert open(path, "rb").read() == open(row["path"], "rb").read()  # same request, same bytes
    image1, _ = generate(engine, row["prompt"], row["seed"], cfg=1.0)
    assert np.abs(image1.astype(int) - image5.astype(int)).mean() > 3.0  # measured: 16


def test_shipped_folder_is_small_safetensors_with_the_real_clip_tokenizer():
    from transformers import CLIPTokenizer

    folder = builtin_checkpoint("shapes")
    files = [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs]
    assert sum(os.path.getsize(f) for f in files) <= 30 * 2**20
    weights = [f for f in files if f.endswith((".safetensors", ".bin", ".pt", ".ckpt"))]
    assert len(weights) == 3 and all(f.endswith(".safetensors") for f in weights)
    with open(os.path.join(folder, "model_index.json")) as f:
        index = json.load(f)
    assert index["_class_name"] == "StableDiffusionPipeline"
    tok = CLIPTokenizer.from_pretrained(os.path.join(folder, "tokenizer"))
    assert len(tok) == 49408 and tok("a photo of a cat").input_ids == [49406, 320, 1125, 539, 320, 2368, 49407]


def test_dataset_is_deterministic_and_its_masks_score_its_own_images():
    a, b = D.sample_params(0, 123), D.sample_params(0, 123)
    assert a == b and D.sample_params(1, 123) != a
    images, samples = D.render_dataset(7, 60)
    again, _ = D.render_dataset(7, 60)
    assert np.array_equal(images, again)
    for image, s in zip(images, samples):
        assert image.shape == (64, 64, 3) and s.caption.startswith(("a ", "an "))
        mask = s.mask()
        assert D.dominant_colour(image, mask) == s.colour
        score = D.score_image(image, s.shape, s.colour, s.background)
        assert score["shape_ok"] and score["colour_ok"] and score["background_ok"], (s, score)


def test_the_start_frame_carries_the_checkpoints_own_preview_fit_and_it_shows_the_colours(engine_server):
    """builtin:shapes ships latent_preview.json (testing/train_shapes/fit_preview.py): the preview of the final
    latent, projected the way clients do, has the prompted shape's colour where the image has it."""
    import numpy as np
    from PIL import Image

    from extensions_built_in.inference_engine.latent_preview import project_rgb

    body = {
        "model": {"arch": "sd1", "name_or_path": "builtin:shapes", "dtype": "float32"},
        "sample": {
            "prompt": "a red square on a blue background",
            "width": 64,
            "height": 64,
            "num_inference_steps": 20,
            "guidance_scale": 5,
            "seed": 3,
        },
    }
    frames = list(engine_server.client.generate(body))
    spec = frames[0].header["latent"]
    assert spec["factors_source"] == "checkpoint latent_preview.json"
    last = [f for f in frames if f.type == "latent"][-1]
    preview = project_rgb(last.array(), spec["rgb_factors"], spec["rgb_bias"]).astype(np.float32)
    result = next(f.header for f in frames if f.type == "result")
    image = np.asarray(Image.open(result["path"]).convert("RGB").resize((8, 8), Image.BOX), dtype=np.float32)
    assert np.abs(preview - image).mean() < 60  # a linear preview, not a decode: the colours, roughly
    red = preview[..., 0] > preview[..., 2] + 40
    blue = preview[..., 2] > preview[..., 0] + 40
    assert red.sum() >= 4 and blue.sum() >= 4  # the red square on the blue background is visible
