"""A finished compare grid as files: one PNG per page (a value of the third axis) with labelled columns and rows,
and the JSON that replays it. No torch.

The first axis labels the columns, the second the rows; each page names its third-axis value in a title line.
A LoRA's label carries its training step. The pictures keep the cells' own pixels (no resampling), each cell
at the top left of a slot as large as the largest cell, so a cell's pixels can be compared with the file it
came from. A video cell shows its first frame (a contact sheet's poster; the cell's own file plays in the
viewer), a sound cell a grey slot saying so, and a cell that failed or was cancelled a grey slot with the reason.

Every page carries, in its ``aitk`` text (``toolkit/media_info.py``, read back by ``read_info``), the first
cell's resolved request as any result does (so a tool that restores settings from an image still can) plus
``grid``: the axes and labels, every cell's place, labels, resolved settings and file, and the replay body. Its
``parameters`` text is A1111's for that first cell with a ``Grid:`` line naming the axes, as A1111's X/Y/Z plot
writes its grids.
"""

from __future__ import annotations

import json
import os
from typing import Optional

from extensions_built_in.inference_engine.grid_plan import GridPlan
from extensions_built_in.inference_engine.outputs import Outputs, read_json, sidecar_of
from toolkit.media import AUDIO_EXTS, VIDEO_EXTS, save_media
from toolkit.media_info import FULL, PARAMETERS, parameters_text

FONT_SIZE = 18
PAD = 8
BACKGROUND = (255, 255, 255)
EMPTY = (200, 200, 200)
INK = (0, 0, 0)
LABEL_MAX = 240  # pixels: a longer label wraps, then is cut


def font(size: int = FONT_SIZE):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size)  # Pillow's scalable default (with FreeType)
    except TypeError:  # an older Pillow: its bitmap font
        return ImageFont.load_default()


def text_size(draw, text: str, face) -> tuple[int, int]:
    left, top, right, bottom = draw.textbbox((0, 0), text, font=face)
    return right - left, bottom - top


def fit(draw, text: str, face, width: int) -> str:
    """``text`` cut with an ellipsis to ``width`` pixels."""
    if text_size(draw, text, face)[0] <= width:
        return text
    while text and text_size(draw, text + "…", face)[0] > width:
        text = text[:-1]
    return text + "…"


def axis_title(plan: GridPlan, i: int) -> str:
    return plan.axes[i].name if i < len(plan.axes) else ""


def wrap(draw, text: str, face, width: int, max_lines: int = 3) -> list[str]:
    """``text`` in lines of at most ``width`` pixels, broken at spaces; the last line cut with an ellipsis."""
    lines, line = [], ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if not line or text_size(draw, candidate, face)[0] <= width:
            line = candidate
        else:
            lines.append(line)
            line = word
    lines.append(line)
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + [" ".join(lines[max_lines - 1 :])]
    return [fit(draw, part, face, width) for part in lines]


def compose_page(plan: GridPlan, page: int, images: dict):
    """One page: ``images`` maps a cell index to its PIL image (missing: failed or cancelled). A column is as
    wide as its largest cell, or as its label up to ``LABEL_MAX`` pixels; labels wrap at spaces."""
    from PIL import Image, ImageDraw

    shape = plan.shape + [1] * (3 - len(plan.shape))
    cols, rows = shape[0], shape[1]
    sizes = [im.size for im in images.values()] or [(64, 64)]
    cw, ch = max(w for w, _ in sizes), max(h for _, h in sizes)
    face = font(min(max(cw // 20, FONT_SIZE), 48))
    draw = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    line = text_size(draw, "Ag@", face)[1] + PAD // 2
    col_labels = plan.axes[0].labels
    sw = max(cw, min(max(text_size(draw, t, face)[0] for t in col_labels), LABEL_MAX))  # a slot's width
    col_lines = [wrap(draw, t, face, sw) for t in col_labels]
    row_labels = plan.axes[1].labels if len(plan.axes) > 1 else []
    label_w = 0
    if row_labels:
        widest = max(text_size(draw, t, face)[0] for t in row_labels + [axis_title(plan, 1)])
        label_w = min(widest, LABEL_MAX) + 2 * PAD
    title_h = line + PAD if len(plan.axes) > 2 else 0
    head_h = line * (1 + max(len(ls) for ls in col_lines)) + PAD  # the axis name, then each column's value
    width = label_w + cols * sw + (cols + 1) * PAD
    height = title_h + head_h + rows * ch + (rows + 1) * PAD
    canvas = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(canvas)
    if title_h:
        title = f"{axis_title(plan, 2)}: {plan.axes[2].labels[page]}"
        draw.text((PAD, PAD // 2), fit(draw, title, face, width - 2 * PAD), INK, face)
    top = title_h
    draw.text((label_w + PAD, top), fit(draw, axis_title(plan, 0), face, width - label_w - PAD), INK, face)
    if label_w:
        draw.text((PAD, top + head_h - line - PAD), fit(draw, axis_title(plan, 1), face, label_w - PAD), INK, face)
    for x, lines in enumerate(col_lines):
        left = label_w + PAD + x * (sw + PAD)
        for k, text in enumerate(lines):
            draw.text((left, top + line * (1 + k)), text, INK, face)
    for y in range(rows):
        cell_top = top + head_h + PAD + y * (ch + PAD)
        if label_w:
            lines = wrap(draw, row_labels[y], face, label_w - PAD)
            for k, text in enumerate(lines):
                draw.text((PAD, cell_top + ch // 2 - line * len(lines) // 2 + line * k), text, INK, face)
        for x in range(cols):
            index = x + y * cols + page * cols * rows
            left = label_w + PAD + x * (sw + PAD)
            image = images.get(index)
            if image is not None:
                canvas.paste(image.convert("RGB"), (left, cell_top))
            else:
                draw.rectangle((left, cell_top, left + cw - 1, cell_top + ch - 1), fill=EMPTY)
                reason = _slot_text(plan.cells[index])
                draw.text((left + PAD, cell_top + PAD), fit(draw, reason, face, cw - 2 * PAD), INK, face)
    return canvas


def grid_metadata(plan: GridPlan, page: int) -> dict:
    """What a page's ``aitk`` text carries under ``grid``."""
    return {
        "page": page,
        "pages": len(plan.axes[2].values) if len(plan.axes) > 2 else 1,
        "shape": plan.shape,
        "axes": [{"name": a.name, "values": a.values, "labels": a.labels, "steps": a.steps} for a in plan.axes],
        "cells": [
            {
                "cell": c.index,
                "coords": list(c.coords),
                "labels": c.labels,
                "request_id": c.request_id,
                "config": c.config,
                "path": (c.result or {}).get("path"),
                "seed": (c.result or {}).get("seed"),
                "error": c.error,
            }
            for c in plan.cells
        ],
        "replay": plan.replay(),
    }


def grid_texts(plan: GridPlan, page: int) -> dict:
    first = next((c.config for c in plan.cells if c.config), None) or {}
    axes = "; ".join(f"{'XYZ'[i]}: {a.name} ({', '.join(a.labels)})" for i, a in enumerate(plan.axes))
    text = (parameters_text(first) + "\n" if first else "") + f"Grid: {axes}"
    full = dict(first) | {"grid": grid_metadata(plan, page)}
    return {PARAMETERS: text, FULL: json.dumps(full, sort_keys=True, default=str)}


def _slot_text(cell) -> str:
    """What an empty slot says: why the cell has no picture."""
    if cell.error:
        return cell.error.get("code") or "failed"
    return "sound" if _ext((cell.result or {}).get("path") or "") in AUDIO_EXTS else "missing"


def _ext(path: str) -> str:
    return os.path.splitext(path)[1].lower().lstrip(".")


def cell_still(path: str):
    """A cell's picture on the page (RGB), or None for a sound: an image itself, a video's first frame."""
    from PIL import Image

    if _ext(path) in AUDIO_EXTS:
        return None
    if _ext(path) in VIDEO_EXTS:
        from toolkit.models.from_video import read_frames

        return read_frames(path, 1)[0]
    with Image.open(path) as im:
        return im.convert("RGB")


def read_cell(cell):
    """The cell's still for its page (None: no file, or a sound); an unreadable file becomes the cell's error."""
    path = (cell.result or {}).get("path")
    if not path or not os.path.isfile(path):
        return None
    try:
        return cell_still(path)
    except (OSError, ValueError):
        cell.error = {"code": "unreadable", "message": f"{path} could not be read"}
        return None


def read_cell_images(plan: GridPlan, read: Optional[dict] = None) -> dict:
    """Every cell's still by index; ``read``: those already read as their cells finished (grid_run.py)."""
    read = read or {}
    images = {cell.index: read[cell.index] if cell.index in read else read_cell(cell) for cell in plan.cells}
    return {index: still for index, still in images.items() if still is not None}


def save_grid(plan: GridPlan, folder: str, grid_id: str, read: Optional[dict] = None) -> dict:
    """The pages, each with its sidecar (what ``GET /outputs`` lists as ``meta``: the gallery shows a grid as one
    item from it), and the replay JSON (``grid_<id>.replay.json``, a body ``POST /grid`` takes as it is).
    ``read``: cells' stills already read (``read_cell_images``)."""
    images = read_cell_images(plan, read)
    pages = len(plan.axes[2].values) if len(plan.axes) > 2 else 1
    paths = []
    for page in range(pages):
        path = os.path.join(folder, f"grid_{grid_id}" + (f"_p{page + 1}" if pages > 1 else "") + ".png")
        texts = grid_texts(plan, page)
        save_media(compose_page(plan, page, images), path, kind="image", info=texts)
        meta = json.loads(texts[FULL])
        Outputs.write_sidecar(path, {"request_id": grid_id, "grid": meta.pop("grid"), "config": meta})
        paths.append(path)
    mark_cells(plan, grid_id, paths)
    replay_path = os.path.join(folder, f"grid_{grid_id}.replay.json")
    tmp = replay_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(plan.replay(), f, indent=2)
    os.replace(tmp, replay_path)
    return {"pages": paths, "replay_path": replay_path}


def mark_cells(plan: GridPlan, grid_id: str, pages: list[str]) -> None:
    """Each cell's sidecar names its grid and page (``grid_cell``): the gallery shows the grid as one item, its
    page, and keeps the cells' own files for the viewer and for reuse."""
    per_page = plan.shape[0] * (plan.shape[1] if len(plan.shape) > 1 else 1)
    for cell in plan.cells:
        path = (cell.result or {}).get("path")
        data = read_json(sidecar_of(path)) if path else None
        if data is not None:
            page = pages[cell.index // per_page]
            data["grid_cell"] = {"grid": grid_id, "cell": cell.index, "page": os.path.basename(page)}
            Outputs.write_sidecar(path, data)


def read_grid(path: str) -> Optional[dict]:
    """A page's ``grid`` metadata back from the file (None: not a grid page)."""
    from toolkit.media_info import read_info

    full = read_info(path).get(FULL)
    return json.loads(full).get("grid") if full else None
