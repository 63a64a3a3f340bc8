"""Where a request's checkpoint may come from: ``model.name_or_path`` and ``model.extras_name_or_path``.

* A local path (absolute, ``./``, ``~``, a bare name, a single file) loads only from under the model roots,
  once its links are resolved (by default the models folder and the Hugging Face cache). Its refusal reads the
  same whether the path exists or not: an engine that answered "no config.json in /root" for one path and
  "does not exist" for another would map the disk for whoever holds the token.
* A hub id (``org/name``, ``toolkit/models/components/sources.py``) is a hub id, never a same-named folder in the
  working directory. With ``engine.allow_downloads: false`` it must already be whole in the local cache, which
  is read from disk before the request is queued; ``engine.max_download_gb`` sizes what a load would fetch
  from the hub's file list, on the main thread before anything is fetched (the server's thread never waits
  on the network).
* ``tiny:`` and ``builtin:`` name checkpoints the engine builds or ships, always allowed.

The operator's own models (``engine.default_model`` and the ``engine.models`` aliases, from the job config)
may point anywhere: the strings they name pass as they are. The download rules hold for every load, since
they are about this machine's disk and network, whoever named the model.

No torch here; ``check`` needs no network either.
"""

from __future__ import annotations

import os
from typing import Iterable, Optional

from extensions_built_in.inference_engine.assets import AssetError, is_inside, real_path
from extensions_built_in.inference_engine.resident import LoadFailed
from toolkit.models.components import hub
from toolkit.models.components.sources import source_kind
from toolkit.paths import MODELS_PATH

FIELDS = ("name_or_path", "extras_name_or_path")


class SourceRefused(ValueError):
    """A checkpoint this request may not name; ``field`` is the model key that named it."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def default_model_roots() -> list[str]:
    """The models folder and the Hugging Face cache (a snapshot there is a checkpoint folder like any other)."""
    from huggingface_hub import constants

    return [MODELS_PATH, constants.HF_HUB_CACHE]


def operator_sources(models: Optional[dict], default_model: Optional[dict]) -> set:
    """The checkpoint strings the job config names itself: ``engine.default_model`` and every alias."""
    configs = [default_model or {}] + [v for v in (models or {}).values() if isinstance(v, dict)]
    return {str(c[f]) for c in configs for f in FIELDS if c.get(f)}


class ModelSources:
    def __init__(
        self,
        roots: Optional[Iterable[str]] = None,
        trusted: Iterable[str] = (),
        allow_downloads: bool = True,
        max_download_gb: Optional[float] = None,
    ):
        self.roots = [os.path.abspath(os.path.expanduser(r)) for r in (roots or default_model_roots())]
        self.trusted = set(trusted)
        cap = None if max_download_gb is None else int(float(max_download_gb) * 1024**3)
        self.policy = hub.DownloadPolicy(bool(allow_downloads), cap)
        hub.use_policy(self.policy)  # one engine a process: its rules hold for every thread's loads

    # ------------------------------------------------------------------ before queueing (server thread)
    def check(self, model_class, cfg) -> None:
        """``SourceRefused`` for a local path outside the roots, or a hub id missing from the cache while downloads
        are off. Disk reads only."""
        for field in FIELDS:
            value = getattr(cfg, field)
            if not value or value in self.trusted:
                continue
            kind = source_kind(value)
            if kind == "local":
                self._check_local(field, value)
            elif kind == "hub" and not self.policy.allowed:
                missing = hub.missing_from_cache(value, _subfolders(model_class, cfg, field), cfg.variant)
                if missing:
                    raise SourceRefused(
                        field,
                        f"{value!r} is not whole in this machine's Hugging Face cache (missing: "
                        f"{', '.join(m or 'top level' for m in missing)}), and this engine does not download "
                        "(engine.allow_downloads: false)",
                    )

    def _check_local(self, field: str, value: str) -> None:
        """One answer for a path outside the roots, existing or not; ``..`` is refused outright, since where it
        leads past a link would tell whether that link exists."""
        try:
            real = real_path(os.path.expanduser(value))
        except AssetError:
            real = None
        parts = value.replace("\\", "/").split("/")
        if real is None or ".." in parts or not any(is_inside(real, root) for root in self.roots):
            raise SourceRefused(
                field,
                f"{value!r} is not a hub id 'org/name', tiny:<arch> or builtin:<name>, nor a path inside the "
                f"engine's model folders ({', '.join(self.roots)})",
            )

    # ------------------------------------------------------------------ before loading (main thread)
    def prepare_default(self, model: dict) -> None:
        """``prepare_load`` for ``engine.default_model``, from its config as the job file gives it."""
        from toolkit.config_modules import ModelConfig
        from toolkit.models.registry import get_model_class

        self.prepare_load(get_model_class(model.get("arch") or "sd1"), ModelConfig.from_dict(model))

    def prepare_load(self, model_class, cfg) -> None:
        """The cap checked against the whole model before any of it is fetched (``hub.DownloadRefused`` names the
        field and both sizes), under this engine's rules (again: a test process may hold several engines)."""
        hub.use_policy(self.policy)
        if self.policy.max_bytes is None or not hub.downloads_possible():
            return
        needs = []
        for field, repo, subfolders in _hub_sources(model_class, cfg):
            if hub.fetched_already(repo, subfolders, cfg.variant):
                continue
            try:
                files, size = hub.download_size(repo, subfolders, cfg.variant)
            except Exception as e:  # the hub unreachable, no such repo: the load would fail the same way
                raise LoadFailed(f"Sizing the download of {repo!r} failed: {type(e).__name__}: {e}") from e
            if files:
                needs.append((field, repo, files, size))
        total = sum(size for *_, size in needs)
        if total > self.policy.max_bytes:
            parts = "; ".join(f"model.{f} {r!r}: {n} file(s), {hub.size_text(s)}" for f, r, n, s in needs)
            raise hub.DownloadRefused(
                f"{parts}: {hub.size_text(total)} to download, over this engine's limit of "
                f"{hub.size_text(self.policy.max_bytes)} (engine.max_download_gb); nothing was downloaded"
            )


def _subfolders(model_class, cfg, field: str) -> set:
    """The component folders ``field`` supplies. A single-file denoiser takes its config from the extras
    checkpoint's folder of the same name, so that folder counts for the extras too."""
    main_file = source_kind(cfg.name_or_path) == "local" and cfg.name_or_path.endswith(".safetensors")
    wanted = {"main"} if field == "name_or_path" else {"extras"} | ({"main"} if main_file else set())
    if field == "name_or_path" and cfg.extras_name_or_path == cfg.name_or_path:
        wanted.add("extras")
    return {c.subfolder for c in model_class.components.values() if c.source in wanted}


def _hub_sources(model_class, cfg) -> list[tuple[str, str, set]]:
    """(field, repo, subfolders) for each hub id the model loads from, each repo once."""
    found: dict = {}
    for field in FIELDS:
        value = getattr(cfg, field)
        if value and source_kind(value) == "hub":
            _, _, folders = found.setdefault(value, (field, value, set()))
            folders |= _subfolders(model_class, cfg, field)
    return list(found.values())


__all__ = ["FIELDS", "ModelSources", "SourceRefused", "default_model_roots", "operator_sources"]
