"""Tiny random-init checkpoints, one module per family: fixtures for tests and the offline demo, kept apart
from the family files under ``toolkit/models/archs`` (which describe the real model only).

A module here is named after its arch (``toolkit.models.tiny.recipe_module``) and holds ``build_tiny(variant)``,
which returns a diffusers pipeline of random weights with the real model's shapes where shapes matter, and
``SAMPLE``, request settings that suit it.
"""
