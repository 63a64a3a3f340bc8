"""Tiny FLUX.2 [klein] 4B: the fixture of toolkit/models/archs/flux2_klein.py, its Qwen3-4B text encoder
16 wide (the shared recipe is in _flux2.py)."""

from toolkit.models.tiny_recipes._flux2 import build_klein

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    return build_klein(variant, te_hidden=16)
