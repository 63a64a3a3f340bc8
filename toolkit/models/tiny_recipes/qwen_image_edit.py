"""Tiny Qwen-Image-Edit: the fixture of toolkit/models/archs/qwen_image_edit.py, the tiny Qwen-Image components
(qwen_image.py) and a Qwen2-VL processor."""

from toolkit.models.tiny_recipes import _parts as tiny_parts
from toolkit.models.tiny_recipes import qwen_image

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import QwenImageEditPipeline

    parts = qwen_image.parts(variant)
    return QwenImageEditPipeline(processor=tiny_parts.qwen2_vl_processor(parts["tokenizer"]), **parts)
