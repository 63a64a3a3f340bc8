"""The one table of families: arch name -> the class in its file under ``toolkit/models/archs``.

Arch files import diffusers only inside methods, so reading the table (and serving ``GET /models``) stays
cheap. A new family is a new file plus one line here.
"""
from __future__ import annotations

import importlib

ARCHS = {
    # image
    "sd1": "toolkit.models.archs.sd1:SD1Model",
    "flux": "toolkit.models.archs.flux:FluxModel",
    # video
    "wan21": "toolkit.models.archs.wan21:Wan21Model",
    # audio
    "ace_step_15": "toolkit.models.archs.ace_step_15:AceStep15Model",
}


class UnknownArchError(ValueError):
    pass


def get_model_class(arch: str):
    name = str(arch).partition(":")[0]
    if name not in ARCHS:
        raise UnknownArchError(f"unknown arch {arch!r}; known: {', '.join(sorted(ARCHS))}")
    module, _, cls = ARCHS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def describe_all() -> list[dict]:
    return [get_model_class(a).describe() for a in ARCHS]
