"""Tiny FLUX.1 Kontext [dev]: the fixture of toolkit/models/archs/flux_kontext.py, the tiny Flux.1 components
(flux.py) in a FluxKontextPipeline."""

from toolkit.models.tiny_recipes import flux

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import FluxKontextPipeline

    return FluxKontextPipeline(**{k: v for k, v in flux.build_tiny(variant).components.items()})
