"""Tiny random-init checkpoints: how tests and the offline demo run every family without downloads.

``tiny:<arch>`` builds the family's tiny pipeline once (``build_tiny`` of its recipe module under
``toolkit/models/tiny_recipes``), saves it as an ordinary diffusers folder in a cache, and from then on it loads
through the same ``from_pretrained`` path as a real model. Recipes keep the production VAE compression (so latent
shapes match real models) and shrink widths. Tokenizers are built from in-memory vocabularies (transformers 5.x
constructors take ``vocab``/``merges``), since nothing may be fetched at test time. Each recipe's numbers are the
real model's where shapes depend on them (latent channels, VAE compression, patch sizes), and small elsewhere.
The tokenizers and modules recipes share are in ``toolkit/models/tiny_recipes/_parts.py``: fixtures, kept apart
from this lookup, which the model loader uses for ``tiny:`` paths.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

# Bump when a recipe changes, so stale cached folders are not reused.
RECIPE_VERSION = 2


def cache_root() -> str:
    from toolkit.paths import TOOLKIT_ROOT

    return os.environ.get("AITK_TINY_CACHE") or os.path.join(TOOLKIT_ROOT, ".cache", "tiny")


def tiny_checkpoint(name: str) -> str:
    """Folder of the tiny checkpoint ``name`` (an arch, or ``arch/variant``), built on first use.

    Built into a temp folder and renamed into place, so concurrent processes (one per arch in ``--all``)
    never see a half-written checkpoint."""
    arch, _, variant = name.partition("/")
    folder = os.path.join(cache_root(), f"v{RECIPE_VERSION}", name.replace("/", "__"))
    # A modular-only pipeline (MiniMax-H3) saves modular_model_index.json in place of model_index.json.
    if any(os.path.isfile(os.path.join(folder, index)) for index in ("model_index.json", "modular_model_index.json")):
        return folder
    build = recipe_builder(arch)
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".building-", dir=os.path.dirname(folder))
    try:
        pipe = build(variant or None)
        pipe.save_pretrained(tmp, safe_serialization=True)
        try:
            os.rename(tmp, folder)
        except OSError:  # another process won the race; its folder is as good as ours
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def recipe_module(arch: str):
    """The fixture module of ``arch`` under ``toolkit/models/tiny_recipes`` (its name is the arch's with every
    character that cannot be in a module name made ``_``: ``ltx2.3`` -> ``ltx2_3``), or None."""
    import importlib

    name = re.sub(r"\W", "_", str(arch).partition(":")[0])
    try:
        return importlib.import_module(f"toolkit.models.tiny_recipes.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"toolkit.models.tiny_recipes.{name}":
            raise
        return None


def _recipe(arch: str, attr: str):
    value = getattr(recipe_module(arch), attr, None)
    if value is None:
        name = re.sub(r"\W", "_", str(arch).partition(":")[0])
        raise ValueError(f"arch {arch!r} has no tiny recipe: toolkit/models/tiny_recipes/{name}.py defines no {attr}")
    return value


def recipe_builder(arch: str):
    """``build_tiny(variant)`` of ``arch``'s recipe module."""
    return _recipe(arch, "build_tiny")


def sample(arch: str) -> dict:
    """Small request settings that suit ``arch``'s tiny checkpoint (tests, the demo): its recipe's ``SAMPLE``."""
    return dict(_recipe(arch, "SAMPLE"))
