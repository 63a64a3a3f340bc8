"""Coloured shapes on plain backgrounds: the synthetic data set behind ``builtin:shapes``.

Every sample is a pure function of ``(seed, index)``, drawn with PIL: one filled circle, square or triangle in
one of six colours on a contrasting plain background, at a varied position and size, with a caption such as
``"a red circle on a blue background"``. ``shape_coverage``/``shape_mask`` give the exact region a shape covers,
so tests can score generated images against rendered masks of each shape.

Geometry (pixels, image ``res`` x ``res``): a shape is given by its centre ``(cx, cy)`` and half-extent ``s``.
Its bounding box is ``[cx - s, cx + s] x [cy - s, cy + s]``; the circle is inscribed in it, the square fills it,
the triangle points up with its apex at the top centre and its base along the bottom edge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

RES = 64
SUPERSAMPLE = 4  # shapes are drawn at 4x and box-filtered down: anti-aliased edges, exact coverage
SHAPES = ("circle", "square", "triangle")
COLOURS = {
    "red": (220, 30, 35),
    "green": (30, 165, 50),
    "blue": (35, 70, 215),
    "yellow": (245, 215, 30),
    "purple": (140, 45, 185),
    "orange": (245, 135, 20),
}
BACKGROUNDS = {**COLOURS, "white": (250, 250, 250), "black": (12, 12, 12), "gray": (128, 128, 128)}
# Pairs too close to read apart at a glance are never drawn together.
_CLOSE = {
    frozenset(p)
    for p in (("red", "orange"), ("orange", "yellow"), ("yellow", "white"), ("purple", "blue"), ("red", "purple"))
}
SIZE_RANGE = (9, 22)  # half-extent s in pixels at RES=64
MARGIN = 2


def backgrounds_for(colour: str) -> list[str]:
    """The backgrounds a ``colour`` shape may be drawn on (not itself, nothing too close to it)."""
    return [b for b in BACKGROUNDS if b != colour and frozenset((b, colour)) not in _CLOSE]


@dataclass(frozen=True)
class ShapeSample:
    shape: str
    colour: str
    background: str
    cx: float
    cy: float
    s: float
    res: int = RES

    @property
    def caption(self) -> str:
        return caption(self.shape, self.colour, self.background)

    def image(self) -> np.ndarray:
        return render(self)

    def mask(self) -> np.ndarray:
        return shape_mask(self.shape, self.cx, self.cy, self.s, self.res)


def caption(shape: str, colour: Optional[str] = None, background: Optional[str] = None) -> str:
    text = f"{_article(colour)} {colour} {shape}" if colour else f"a {shape}"
    return f"{text} on {_article(background)} {background} background" if background else text


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def caption_variants(sample: ShapeSample) -> list[str]:
    """What the model is trained to follow: the full caption, and shorter ones that leave parts unsaid."""
    return [
        caption(sample.shape, sample.colour, sample.background),
        caption(sample.shape, sample.colour),
        caption(sample.shape, background=sample.background),
    ]


def sample_params(seed: int, index: int, res: int = RES) -> ShapeSample:
    """The ``index``-th sample of the data set ``seed``: deterministic, independent of any other index."""
    rng = np.random.default_rng([seed, index])
    shape = SHAPES[rng.integers(len(SHAPES))]
    colour = list(COLOURS)[rng.integers(len(COLOURS))]
    options = backgrounds_for(colour)
    background = options[rng.integers(len(options))]
    scale = res / RES
    s = rng.uniform(*SIZE_RANGE) * scale
    lo, hi = s + MARGIN * scale, res - s - MARGIN * scale
    cx, cy = rng.uniform(lo, hi), rng.uniform(lo, hi)
    return ShapeSample(shape, colour, background, round(cx, 2), round(cy, 2), round(s, 2), res)


def shape_coverage(
    shape: str, cx: float, cy: float, s: float, res: int = RES, supersample: int = SUPERSAMPLE
) -> np.ndarray:
    """Fraction of each pixel the shape covers (res x res float32 in [0, 1]), drawn with PIL."""
    from PIL import Image, ImageDraw

    k = supersample
    big = Image.new("L", (res * k, res * k), 0)
    draw = ImageDraw.Draw(big)
    x0, y0, x1, y1 = (cx - s) * k, (cy - s) * k, (cx + s) * k, (cy + s) * k
    if shape == "circle":
        draw.ellipse([x0, y0, x1 - 1, y1 - 1], fill=255)
    elif shape == "square":
        draw.rectangle([x0, y0, x1 - 1, y1 - 1], fill=255)
    elif shape == "triangle":
        draw.polygon([(cx * k, y0), (x1 - 1, y1 - 1), (x0, y1 - 1)], fill=255)
    else:
        raise ValueError(f"unknown shape {shape!r}; one of {SHAPES}")
    small = big.resize((res, res), Image.BOX) if k > 1 else big
    return np.asarray(small, dtype=np.float32) / 255.0


def shape_mask(
    shape: str, cx: float, cy: float, s: float, res: int = RES, supersample: int = SUPERSAMPLE
) -> np.ndarray:
    """The pixels the shape covers at least half of (res x res bool)."""
    return shape_coverage(shape, cx, cy, s, res, supersample) >= 0.5


def render(sample: ShapeSample) -> np.ndarray:
    """The sample's RGB image (res x res x 3 uint8)."""
    alpha = shape_coverage(sample.shape, sample.cx, sample.cy, sample.s, sample.res)[..., None]
    fg = np.asarray(COLOURS[sample.colour], dtype=np.float32)
    bg = np.asarray(BACKGROUNDS[sample.background], dtype=np.float32)
    return (alpha * fg + (1 - alpha) * bg).round().astype(np.uint8)


def _render_range(args) -> tuple:
    seed, start, stop, res = args
    samples = [sample_params(seed, i, res) for i in range(start, stop)]
    return np.stack([render(s) for s in samples]), samples


def render_dataset(seed: int, n: int, res: int = RES, workers: int = 0) -> tuple:
    """Images (n x res x res x 3 uint8) and their ShapeSamples for indices 0..n-1; ``workers`` > 1 renders in
    processes (the result does not depend on it)."""
    chunk = 2048
    jobs = [(seed, a, min(a + chunk, n), res) for a in range(0, n, chunk)]
    if workers and workers > 1 and len(jobs) > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_render_range, jobs)
    else:
        parts = [_render_range(j) for j in jobs]
    images = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, res, res, 3), np.uint8)
    samples = [s for p in parts for s in p[1]]
    return images, samples


# ---------------------------------------------------------------------------------------------- scoring
def nearest_palette(image: np.ndarray, names=None) -> np.ndarray:
    """Per pixel, the index (into ``names``, default all BACKGROUNDS) of the nearest palette colour."""
    names = list(names or BACKGROUNDS)
    palette = np.asarray([BACKGROUNDS[n] for n in names], dtype=np.float32)
    d = ((image[..., None, :].astype(np.float32) - palette) ** 2).sum(-1)
    return d.argmin(-1)


def foreground_mask(image: np.ndarray, background: str, threshold: float = 60.0) -> np.ndarray:
    """Pixels farther than ``threshold`` (RGB distance) from the named background colour."""
    bg = np.asarray(BACKGROUNDS[background], dtype=np.float32)
    return np.sqrt(((image.astype(np.float32) - bg) ** 2).sum(-1)) > threshold


def dominant_colour(image: np.ndarray, region: np.ndarray, names=None) -> Optional[str]:
    """The palette colour most pixels of ``region`` are nearest to (None for an empty region)."""
    names = list(names or COLOURS)
    if not region.any():
        return None
    idx = nearest_palette(image[region], names)
    return names[np.bincount(idx, minlength=len(names)).argmax()]


def iou(a: np.ndarray, b: np.ndarray) -> float:
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 0.0


def best_fit(mask: np.ndarray, shape: str, search: int = 3) -> tuple:
    """The best IoU of ``mask`` with rendered masks of ``shape`` whose box is near ``mask``'s bounding box
    (centre and half-extent searched +-``search`` px). Returns (iou, (cx, cy, s))."""
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        return 0.0, None
    res = mask.shape[0]
    cx0, cy0 = (xs.min() + xs.max() + 1) / 2, (ys.min() + ys.max() + 1) / 2
    s0 = max(xs.max() + 1 - xs.min(), ys.max() + 1 - ys.min()) / 2
    best = (0.0, None)
    offsets = range(-search, search + 1)
    for ds in offsets:
        s = s0 + ds
        if s < 2:
            continue
        for dx in offsets:
            for dy in offsets:
                params = (cx0 + dx, cy0 + dy, s)
                score = iou(mask, shape_mask(shape, *params, res=res, supersample=1))
                if score > best[0]:
                    best = (score, params)
    return best


def classify_shape(mask: np.ndarray, search: int = 2) -> tuple:
    """(best shape, {shape: best IoU}) for a foreground mask."""
    scores = {shape: best_fit(mask, shape, search)[0] for shape in SHAPES}
    return max(scores, key=scores.get), scores


MAX_AREA = 0.55  # the largest shape drawn covers 47 % of the image; more than this is no shape at all
MIN_AREA = 0.01


def score_image(image: np.ndarray, shape: str, colour: str, background: str) -> dict:
    """How a generated image reads against its prompt: the shape region is the largest blob of pixels away from
    the prompted background colour; its dominant palette colour and its best-fitting shape (IoU against rendered
    masks of each shape) are compared with the prompt's. A region of implausible size counts as no shape."""
    fg = largest_component(foreground_mask(image, background))
    area = float(fg.mean())
    valid = MIN_AREA <= area <= MAX_AREA
    got_shape, ious = classify_shape(fg) if valid else (None, {})
    got_colour = dominant_colour(image, fg) if valid else None
    bg_colour = dominant_colour(image, ~fg, list(BACKGROUNDS)) if valid else None
    return dict(
        shape=got_shape,
        colour=got_colour,
        background=bg_colour,
        ious=ious,
        area=round(area, 4),
        shape_ok=got_shape == shape,
        colour_ok=got_colour == colour,
        background_ok=bg_colour == background,
    )


def largest_component(mask: np.ndarray) -> np.ndarray:
    """The largest 4-connected component of ``mask`` (stray pixels off the shape are dropped)."""
    h, w = mask.shape
    labels = np.zeros((h, w), dtype=np.int32)
    best, best_size, label = 0, 0, 0
    for y0, x0 in zip(*np.nonzero(mask)):
        if labels[y0, x0]:
            continue
        label += 1
        labels[y0, x0] = label
        stack, size = [(y0, x0)], 0
        while stack:
            y, x = stack.pop()
            size += 1
            for ny, nx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
                if 0 <= ny < h and 0 <= nx < w and mask[ny, nx] and not labels[ny, nx]:
                    labels[ny, nx] = label
                    stack.append((ny, nx))
        if size > best_size:
            best, best_size = label, size
    return labels == best if best else mask
