"""Scoring and pictures for the shapes demo model: the held-out prompts, shape/colour/background accuracy read
back from samples (``testing/train_shapes/dataset.py`` draws and checks them), a labelled grid, the loss plot."""

from __future__ import annotations

import math

import numpy as np

from testing.train_shapes import dataset as D

EVAL_PROMPTS = [
    (shape, colour, bg)
    for shape, colour, bg in [
        ("circle", "red", "blue"),
        ("square", "green", "white"),
        ("triangle", "blue", "yellow"),
        ("circle", "yellow", "black"),
        ("square", "purple", "gray"),
        ("triangle", "orange", "green"),
        ("circle", "green", "purple"),
        ("square", "blue", "orange"),
        ("triangle", "red", "white"),
        ("circle", "orange", "black"),
        ("square", "yellow", "blue"),
        ("triangle", "purple", "yellow"),
        ("circle", "purple", "white"),
        ("square", "red", "green"),
        ("triangle", "green", "black"),
        ("circle", "blue", "gray"),
        ("square", "orange", "purple"),
        ("triangle", "yellow", "red"),
    ]
]


def evaluate(pipe, seeds=(0, 1), steps: int = 25, cfg: float = 5.0, device="cpu"):
    import torch

    rows, images = [], []
    for seed in seeds:
        for shape, colour, bg in EVAL_PROMPTS:
            prompt = D.caption(shape, colour, bg)
            g = torch.Generator("cpu").manual_seed(seed)
            out = pipe(
                prompt,
                height=64,
                width=64,
                num_inference_steps=steps,
                guidance_scale=cfg,
                generator=g,
                output_type="np",
            )
            img = (out.images[0].clip(0, 1) * 255).round().astype(np.uint8)
            images.append((prompt, img))
            rows.append(dict(prompt=prompt, seed=seed, **D.score_image(img, shape, colour, bg)))
    acc = {k: float(np.mean([r[k] for r in rows])) for k in ("shape_ok", "colour_ok", "background_ok")}
    return acc, rows, images


def grid(images, cols: int = 6, label: bool = True, scale: int = 2):
    """A labelled grid of (prompt, image) pairs as a PIL image."""
    from PIL import Image, ImageDraw

    cell, pad = 64 * scale, 28 if label else 0
    rows = math.ceil(len(images) / cols)
    out = Image.new("RGB", (cols * cell, rows * (cell + pad)), (255, 255, 255))
    draw = ImageDraw.Draw(out)
    for i, (prompt, img) in enumerate(images):
        x, y = (i % cols) * cell, (i // cols) * (cell + pad)
        out.paste(Image.fromarray(img).resize((cell, cell), Image.NEAREST), (x, y))
        if label:
            head, _, tail = prompt.partition(" on ")
            for j, line in enumerate([head, "on " + tail if tail else ""]):
                draw.text((x + 3, y + cell + 2 + 12 * j), line, fill=(0, 0, 0))
    return out


def plot_losses(rows, path: str) -> None:
    """loss.png: one panel per phase, log-scale loss against step (PIL only)."""
    from PIL import Image, ImageDraw

    phases = [p for p in ("vae", "unet") if any(r["phase"] == p for r in rows)]
    w, h, m = 420, 260, 40
    img = Image.new("RGB", (w * len(phases), h), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for k, phase in enumerate(phases):
        pts = [(r["step"], r["loss"]) for r in rows if r["phase"] == phase and r["loss"] > 0]
        if len(pts) < 2:
            continue
        xs, ys = np.array([p[0] for p in pts], float), np.log10([p[1] for p in pts])
        x0, y0 = k * w + m, h - m
        sx = (w - 2 * m) / max(1e-9, xs.max() - xs.min())
        sy = (h - 2 * m) / max(1e-9, ys.max() - ys.min())
        line = [(x0 + (x - xs.min()) * sx, y0 - (y - ys.min()) * sy) for x, y in zip(xs, ys)]
        draw.rectangle([x0, m, k * w + w - m, y0], outline=(180, 180, 180))
        draw.line(line, fill=(200, 40, 40), width=2)
        draw.text((x0, 8), f"{phase} loss (log10), steps 0-{int(xs.max())}", fill=(0, 0, 0))
        draw.text((x0 - 36, m - 6), f"{10 ** ys.max():.3g}", fill=(0, 0, 0))
        draw.text((x0 - 36, y0 - 6), f"{10 ** ys.min():.3g}", fill=(0, 0, 0))
    img.save(path)
