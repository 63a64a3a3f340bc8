"""What an OpenAI-style client may name in ``model``: an alias from ``engine.models``, or ``arch:name_or_path``.

OpenAI clients carry one string where the engine needs a whole model config plus sample settings that suit it
(Z-Image Turbo wants 9 steps and no guidance; builtin:shapes draws at 64x64). ``engine.models`` gives such a
config a name once, in the engine's config, and every client then only says the name. Entries are checked
against the same bodies ``POST /generate`` uses when the engine starts, so a typo stops the engine with the
alias named instead of failing each request later.

No HTTP and no torch: the server asks, the engine's config fills it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Optional

from pydantic import ValidationError

from extensions_built_in.inference_engine.bodies import ModelBody, SampleBody
from toolkit.models.arch_tags import UnknownArchTag
from toolkit.models.registry import ARCHS, UnknownArchError, get_model_class

ALIAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")


class UnknownModel(LookupError):
    """No alias and no ``arch:name_or_path`` by that name; the message says what would have worked."""


class ModelRequired(ValueError):
    """No ``model`` given and no alias to fall back on."""


class ModelRefused(ValueError):
    """An ``arch:name_or_path`` whose checkpoint a request may not name (``model_sources.py``)."""


@dataclass(frozen=True)
class ModelChoice:
    id: str
    model: dict  # ModelBody keys
    model_class: type
    sample: dict = field(default_factory=dict)  # SampleBody keys, the alias's defaults (no prompt)


class ModelAliases:
    def __init__(self, config: Optional[dict] = None, sources=None):
        self.created = int(time.time())
        self.sources = sources  # a ModelSources: an arch:name_or_path passes its check before anything is stored
        self.entries = {alias: _entry(alias, value) for alias, value in _mapping(config).items()}

    def resolve(self, name: Optional[str]) -> ModelChoice:
        if not name:
            if not self.entries:
                raise ModelRequired("model is required: this engine has no engine.models alias to fall back on")
            return next(iter(self.entries.values()))
        if name in self.entries:
            return self.entries[name]
        arch, _, path = name.partition(":")
        if arch in ARCHS and path:
            try:
                model = ModelBody(arch=arch, name_or_path=path).model_dump(exclude_none=True)
            except ValidationError as e:
                raise UnknownModel(f"The model `{name}` is not usable: {_first_message(e)}") from None
            self._check_source(name, arch, model)
            return ModelChoice(name, model, get_model_class(arch))
        hint = f"name a checkpoint of that family as '{arch}:<hub id, folder or tiny:{arch}>'" if arch in ARCHS else ""
        known = ", ".join(self.entries) or "none configured"
        raise UnknownModel(
            f"The model `{name}` does not exist. Use an engine.models alias ({known}) or 'arch:name_or_path'"
            + (f"; {hint}" if hint else "")
        )

    def _check_source(self, name: str, arch: str, model: dict) -> None:
        """The checks ``POST /generate`` applies to a checkpoint, here too: an edit's images are stored only
        after its model is known to be allowed."""
        from extensions_built_in.inference_engine.model_sources import SourceRefused
        from toolkit.config_modules import ModelConfig

        if self.sources is None:
            return
        try:
            self.sources.check(get_model_class(arch), ModelConfig.from_dict(model))
        except SourceRefused as e:
            raise ModelRefused(f"The model `{name}` is not usable: {e}") from None

    def listing(self) -> list[dict]:
        """OpenAI's model objects: the aliases first, then every image family (its id takes a checkpoint:
        ``sd1:<name_or_path>``; a bare family name is no model)."""
        rows = [
            self._row(alias, c.model_class, owned_by="engine.models", name_or_path=c.model["name_or_path"])
            for alias, c in self.entries.items()
        ]
        for arch in ARCHS:
            cls = get_model_class(arch)
            if cls.modality == "image":
                rows.append(self._row(arch, cls, owned_by="family", usage=f"{arch}:<name_or_path>"))
        return rows

    def _row(self, model_id: str, cls, **extra) -> dict:
        return {
            "id": model_id,
            "object": "model",
            "created": self.created,
            "arch": cls.arch,
            "modality": cls.modality,
            "edits": bool(cls.control_images),
            **extra,
        }


def _mapping(config) -> dict:
    if config in (None, {}):
        return {}
    if not isinstance(config, dict):
        raise ValueError(f"engine.models must map an alias to model settings, not {type(config).__name__}")
    return config


def _entry(alias, value) -> ModelChoice:
    where = f"engine.models.{alias}"
    if not isinstance(alias, str) or not ALIAS.match(alias):
        raise ValueError(f"{where}: an alias is 1-128 letters, digits and ._:/@+- (starting with a letter or digit)")
    if not isinstance(value, dict) or "arch" not in value or "name_or_path" not in value:
        raise ValueError(f"{where} needs at least arch and name_or_path")
    model = dict(value)
    sample = model.pop("sample", None) or {}
    try:
        model_class = get_model_class(model["arch"])
        model = model_class.model_for(model["arch"], model)  # checks the tag too: a typo stops the engine
    except (UnknownArchError, UnknownArchTag) as e:
        raise ValueError(f"{where}.arch: {e}") from None
    if not isinstance(sample, dict) or "prompt" in sample:
        raise ValueError(f"{where}.sample must be a mapping of sample defaults (the prompt comes with each request)")
    try:
        model = ModelBody(**model).model_dump(exclude_none=True)
        SampleBody(prompt="", **sample)
    except (ValidationError, TypeError) as e:
        raise ValueError(f"{where}: {e}") from None
    return ModelChoice(alias, model, model_class, dict(sample))


def _first_message(error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
