"""A compare grid's plan: the ``POST /grid`` body, its axes expanded into cells, the order they run in, their
labels, and the body that replays the grid. No torch and no HTTP.

A grid is a base request (``model``/``sample``/``stream``, as ``POST /generate`` takes) and up to three axes, each
a list of values of one setting; every combination is a cell, run as an ordinary engine request. The first axis
is the columns, the second the rows, the third the pages (A1111's X/Y/Z plot). Cells are numbered in that
layout (``index = x + y·len(X) + z·len(X)·len(Y)``) but run grouped by what decides the resident holder (the
model, the LoRA, its multiplier), so a LoRA is swapped once per group and the base model never reloads between
cells that share it.

A ``lora`` value ``{"job": name}`` means every checkpoint that training job saved, ordered by step (the LoRA
library's ``job`` and ``step``, as ``GET /loras`` lists them); the replay body names the files themselves, so a
checkpoint saved later does not change a replayed grid. A ``prompt`` value ``{"search_replace": [a, b, c]}`` is
A1111's Prompt S/R: the base prompt as written, then with ``a`` replaced by ``b``, then by ``c``. A ``model``
value (a ``name_or_path``, or an object of model keys) replaces the base's checkpoint and keeps its other keys
(dtype, LoRAs), so two checkpoints compare under the same settings. A base seed of -1 is resolved once, so every
cell shares one seed (as A1111's plot does) and the replay repeats it.
"""

from __future__ import annotations

import copy
import itertools
import os
import random
from dataclasses import dataclass
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from extensions_built_in.inference_engine.bodies import GenerateBody, ModelBody, SampleBody, StreamBody

MAX_AXES = 3
MAX_VALUES = 64  # one axis
MAX_CELLS = 64  # the whole grid: each cell is a queued request, and the queue holds 64 by default
AXIS_NAMES = (
    "lora",
    "lora_multiplier",
    "prompt",
    "seed",
    "guidance_scale",
    "num_inference_steps",
    "sampler",
    "scheduler",
    "model",
)
# Axes that change the resident holder, outermost first: cells sharing their values run one after another.
HOLDER_AXES = ("model", "lora", "lora_multiplier")
SAMPLE_AXES = ("prompt", "seed", "guidance_scale", "num_inference_steps", "sampler", "scheduler")
# The request field each axis writes, for naming an axis value when the engine refuses the field.
AXIS_FIELDS = {
    "lora": "lora_path",
    "lora_multiplier": "lora_multiplier",
    "prompt": "prompt",
    "seed": "seed",
    "guidance_scale": "guidance_scale",
    "num_inference_steps": "num_inference_steps",
    "sampler": "sampler",
    "scheduler": "scheduler",
}
LABEL_CHARS = 60  # a prompt longer than this is cut in its label (the metadata keeps it whole)


class AxisBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Literal[AXIS_NAMES]  # type: ignore[valid-type]
    values: list[Any] = Field(..., min_length=1, max_length=MAX_VALUES)


class GridBody(BaseModel):
    """``POST /grid``: a generate body plus ``axes``."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    model: ModelBody
    sample: SampleBody
    stream: StreamBody = StreamBody()
    axes: list[AxisBody] = Field(..., min_length=1, max_length=MAX_AXES)


class GridError(ValueError):
    """A grid the engine cannot run; ``loc`` names the field (a 422, as FastAPI's own)."""

    def __init__(self, loc: tuple, message: str):
        super().__init__(message)
        self.loc = loc


@dataclass
class Axis:
    name: str
    values: list  # as the replay body names them (jobs expanded to files)
    labels: list[str]
    steps: list  # a LoRA's training step per value (None elsewhere)


@dataclass
class Cell:
    index: int
    coords: tuple  # one value index per axis
    values: dict  # axis name -> value
    labels: dict  # axis name -> label
    body: dict  # the generate body this cell runs: {model, sample, stream}
    request_id: Optional[str] = None
    result: Optional[dict] = None  # the result frame's header, once saved
    config: Optional[dict] = None  # the start frame's resolved config
    error: Optional[dict] = None


@dataclass
class GridPlan:
    axes: list[Axis]
    base: dict  # {model, sample, stream} with the seed resolved
    cells: list[Cell]

    @property
    def shape(self) -> list[int]:
        return [len(a.values) for a in self.axes]

    def run_order(self) -> list[Cell]:
        """Cells grouped by model, then LoRA, then multiplier (in the order their values were given), then the
        grid's own order: a LoRA switch happens once per group."""
        position = {a.name: i for i, a in enumerate(self.axes)}

        def key(cell: Cell):
            outer = tuple(cell.coords[position[n]] if n in position else 0 for n in HOLDER_AXES)
            return outer + (cell.index,)

        return sorted(self.cells, key=key)

    def replay(self) -> dict:
        """The body that runs this grid again, cell for cell."""
        return copy.deepcopy(self.base) | {"axes": [{"name": a.name, "values": a.values} for a in self.axes]}

    def describe(self) -> dict:
        """The layout a client draws before any cell is done: axes with labels, and each cell's place."""
        return {
            "shape": self.shape,
            "axes": [{"name": a.name, "labels": a.labels, "steps": a.steps} for a in self.axes],
            "cells": [
                {"cell": c.index, "coords": list(c.coords), "labels": c.labels, "request_id": c.request_id}
                for c in self.cells
            ],
            "order": [c.index for c in self.run_order()],
        }


# ---------------------------------------------------------------------------------------------- planning
def plan_grid(body: GridBody, lora_entries=lambda: []) -> GridPlan:
    """Cells for ``body``. ``lora_entries``: the LoRA library's listing (``LoraLibrary.entries``), read only
    when an axis names a training job. ``GridError`` names the field."""
    base = {
        "model": body.model.model_dump(exclude_none=True),
        "sample": body.sample.model_dump(exclude_none=True),
        "stream": body.stream.model_dump(),
    }
    if base["sample"].get("batch_count", 1) != 1:
        raise GridError(("body", "sample", "batch_count"), "a grid cell is one image: leave batch_count at 1")
    if base["sample"].get("seed", -1) == -1:
        base["sample"]["seed"] = random.randint(0, 2**32 - 1)
    names = [a.name for a in body.axes]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise GridError(("body", "axes", i, "name"), f"the axis {name!r} is given twice")
    listing = Listing(lora_entries)
    axes = [expand_axis(i, a, base, listing) for i, a in enumerate(body.axes)]
    if "lora_multiplier" in names and "lora" not in names and not base["model"].get("lora_path"):
        raise GridError(
            ("body", "axes", names.index("lora_multiplier"), "name"),
            "a lora_multiplier axis needs a LoRA: a lora axis, or model.lora_path",
        )
    count = 1
    for axis in axes:
        count *= len(axis.values)
    if count > MAX_CELLS:
        raise GridError(("body", "axes"), f"{count} cells; a grid holds at most {MAX_CELLS}")
    cells = []
    for coords in itertools.product(*(range(len(a.values)) for a in axes)):
        index = sum(c * stride for c, stride in zip(coords, strides([len(a.values) for a in axes])))
        cell_body = copy.deepcopy(base)
        values, labels = {}, {}
        for axis, c in zip(axes, coords):
            values[axis.name], labels[axis.name] = axis.values[c], axis.labels[c]
            apply_value(cell_body, axis.name, axis.values[c], base)
        cells.append(Cell(index, coords, values, labels, cell_body))
    cells.sort(key=lambda c: c.index)
    for cell in cells:
        check_cell(cell, axes)
    return GridPlan(axes, base, cells)


def strides(shape: list[int]) -> list[int]:
    """The first axis varies fastest: index = x + y·len(X) + z·len(X)·len(Y)."""
    out, step = [], 1
    for n in shape:
        out.append(step)
        step *= n
    return out


def expand_axis(i: int, axis: AxisBody, base: dict, lora_entries) -> Axis:
    loc = ("body", "axes", i, "values")
    if axis.name == "lora":
        values, labels, steps = [], [], []
        for j, value in enumerate(axis.values):
            for path, label, step in lora_values(value, (*loc, j), lora_entries):
                values.append(path)
                labels.append(label)
                steps.append(step)
        if len(values) > MAX_VALUES:
            raise GridError(loc, f"{len(values)} LoRAs; an axis holds at most {MAX_VALUES}")
        return Axis("lora", values, labels, steps)
    if axis.name == "prompt":
        values = prompt_values(axis.values, base["sample"].get("prompt", ""), loc)
        return Axis("prompt", values, [short(v) for v in values], [None] * len(values))
    if axis.name == "model":
        values = []
        for j, value in enumerate(axis.values):
            if isinstance(value, str):
                value = {"name_or_path": value}
            if not isinstance(value, dict):
                raise GridError((*loc, j), "a model value is a name_or_path or a model object")
            values.append(value)
        labels = [model_label(v, base["model"]) for v in values]
        return Axis("model", values, labels, [None] * len(values))
    kinds = {"lora_multiplier": float, "guidance_scale": float, "seed": int, "num_inference_steps": int}
    values = []
    for j, value in enumerate(axis.values):
        want = kinds.get(axis.name, str)
        if isinstance(value, bool) or (want is str and not isinstance(value, str)):
            raise GridError((*loc, j), f"{axis.name} values are {want.__name__}s, not {value!r}")
        if want is not str:
            try:
                number = want(value)
            except (TypeError, ValueError):
                raise GridError((*loc, j), f"{axis.name} values are numbers, not {value!r}") from None
            if want is int and number != value:
                raise GridError((*loc, j), f"{axis.name} values are whole numbers, not {value!r}")
            value = number
        values.append(value)
    return Axis(axis.name, values, [f"{v:g}" if isinstance(v, float) else str(v) for v in values], [None] * len(values))


def lora_values(value, loc: tuple, lora_entries) -> list[tuple]:
    """(path or None, label, step) for one ``lora`` value: a path, ``null`` (no LoRA), ``{"path": …}`` or
    ``{"job": name}`` (every checkpoint of that job, by step)."""
    if value is None or value == "":
        return [(None, "no LoRA", None)]
    if isinstance(value, dict) and set(value) == {"path"}:
        value = value["path"]
    if isinstance(value, str):
        entry = next((e for e in lora_entries() if same_file(e["path"], value)), None)
        step = entry.get("step") if entry else None
        return [(value, lora_label(value, entry), step)]
    if isinstance(value, dict) and set(value) == {"job"} and isinstance(value["job"], str) and value["job"]:
        job = value["job"]
        saves = [e for e in lora_entries() if e.get("job") == job]
        if not saves:
            raise GridError(loc, f"the training job {job!r} has no saved LoRA in the engine's LoRA folders")
        saves.sort(key=lambda e: (e.get("step") is None, e.get("step") or 0, e["path"]))
        return [(e["path"], lora_label(e["path"], e), e.get("step")) for e in saves]
    raise GridError(loc, 'a lora value is a file path, null (no LoRA), {"path": …} or {"job": "<training job>"}')


class Listing:
    """The LoRA library's listing, read once per plan however many values ask (each read rescans the folders),
    and only if one asks."""

    def __init__(self, read):
        self._read, self._entries = read, None

    def __call__(self) -> list[dict]:
        if self._entries is None:
            self._entries = list(self._read())
        return self._entries


def same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def lora_label(path: str, entry: Optional[dict]) -> str:
    """The job and step where the library knows them (``my_job @ 500``), else the file's name."""
    if entry and entry.get("step") is not None:
        return f"{entry.get('title') or entry.get('tag')} @ {entry['step']}"
    return (entry or {}).get("tag") or os.path.splitext(os.path.basename(path))[0]


def prompt_values(values: list, base_prompt: str, loc: tuple) -> list[str]:
    if len(values) == 1 and isinstance(values[0], dict):
        sr = values[0]
        words = sr.get("search_replace") if set(sr) == {"search_replace"} else None
        if not isinstance(words, list) or len(words) < 2 or not all(isinstance(w, str) and w for w in words):
            raise GridError((*loc, 0), 'Prompt S/R is {"search_replace": [search, replacement, …]}: two words or more')
        if words[0] not in base_prompt:
            raise GridError((*loc, 0), f"Prompt S/R: {words[0]!r} is not in the prompt {short(base_prompt)!r}")
        return [base_prompt] + [base_prompt.replace(words[0], w) for w in words[1:]]
    for j, value in enumerate(values):
        if not isinstance(value, str):
            raise GridError((*loc, j), 'prompt values are strings, or one {"search_replace": [...]}')
    return list(values)


def short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def model_label(value: dict, base: dict) -> str:
    """A local checkpoint by its file or folder name; a hub id or ``tiny:`` name as written."""
    name = str(value.get("name_or_path") or base.get("name_or_path") or "")
    if os.path.isabs(name) or name.startswith("."):
        return os.path.basename(name.rstrip("/")) or name
    return name


def apply_value(body: dict, name: str, value, base: dict) -> None:
    """Write one axis value into a cell's body."""
    if name == "lora":
        if value is None:
            body["model"].pop("lora_path", None)
        else:
            body["model"]["lora_path"] = value
    elif name == "lora_multiplier":
        body["model"]["lora_multiplier"] = value
    elif name == "model":  # the value's keys over the base's, the base's checkpoint fields dropped
        kept = {k: v for k, v in body["model"].items() if k not in ("name_or_path", "extras_name_or_path")}
        body["model"] = kept | copy.deepcopy(value)
    else:
        body["sample"][name] = value


def check_cell(cell: Cell, axes: list[Axis]) -> None:
    """The cell's body as ``POST /generate`` would type-check it; an error names the axis value behind it."""
    try:
        GenerateBody.model_validate(cell.body)
    except ValidationError as e:
        error = e.errors()[0]
        raise GridError(axis_loc(cell, axes, tuple(error["loc"])), error["msg"]) from None


def axis_loc(cell: Cell, axes: list[Axis], loc: tuple) -> tuple:
    """``loc`` inside a cell's body, as the grid body's field: the axis value that wrote it, else the base."""
    field_name = next((p for p in reversed(loc) if isinstance(p, str)), None)
    for i, axis in enumerate(axes):
        if axis.name == "model" and loc and loc[0] == "model" and field_name not in ("lora_path", "lora_multiplier"):
            return ("body", "axes", i, "values", cell.coords[i])
        if AXIS_FIELDS.get(axis.name) == field_name:
            return ("body", "axes", i, "values", cell.coords[i])
    return ("body", *[p for p in loc if p != "body"])
