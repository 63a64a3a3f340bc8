"""The job config's ``engine:`` block as one object: every setting, its default, and how its value is read.

The defaults live here and nowhere else: the job process (InferenceEngine.py), the test harness
(testing/engine_harness.py) and the cluster's replicas all build an :class:`EngineSettings`, and README's
"Engine settings" table is checked against these fields (testing/test_engine_settings.py). Each value is read
as the job config always read it: an explicit ``null`` is the default, numbers and flags go through
``float``/``int``/``bool``, and keys that are not settings are ignored (the cluster's ``engine:`` block is
handed to its replicas whole). Values are checked where they are used (request_memory.py, toolkit/models/
compile.py, attention.py), which name the setting in their error.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from toolkit.paths import MODELS_PATH


def _setting(default: Any, read: Optional[Callable[[Any], Any]] = None, **kwargs) -> Any:
    """A field whose config value goes through ``read`` (None: taken as it is)."""
    return field(default=default, metadata={"read": read}, **kwargs)


def _list_or_none(value: Any) -> Optional[list]:
    return list(value) if value else None  # an empty list is the default too


@dataclass(frozen=True)
class EngineSettings:
    # Folders. None: ``<training_folder>/<job name>``, and ``outputs`` / ``assets`` in it (for_job resolves them);
    # one configured elsewhere must be empty, absent, or the engine's from an earlier run (folders.py).
    job_folder: Optional[str] = _setting(None, str)
    output_folder: Optional[str] = _setting(None, str)
    assets_folder: Optional[str] = _setting(None, str)
    # The component pool (README "Memory: the component pool").
    keep_resident_gb: float = _setting(0.0, float)
    keep_in_ram_gb: float = _setting(0.0, float)
    idle_unload_seconds: float = _setting(0.0, float)
    warm_up: bool = _setting(True, bool)
    max_queue: int = _setting(64, int)  # 0: no cap
    vram_budget_gb: float = _setting(0.0, lambda v: float(v or 0))  # 0: the whole card
    host_ram_budget_gb: float = _setting(0.0, lambda v: float(v or 0))  # 0: the machine's RAM
    # The memory plan (request_memory.py, toolkit/memory_quality.py).
    memory: str = _setting("auto", str)
    memory_qtype: str = _setting("auto", str)
    memory_quality: str = _setting("balanced", str)
    # Speed (toolkit/models/compile.py, toolkit/models/attention.py, toolkit/gc_heap.py,
    # toolkit/models/prompt_cache.py).
    compile: str = _setting("auto", str)
    compile_cache_dir: Optional[str] = _setting(None)
    attention: str = _setting("auto", str)
    freeze_heap: bool = _setting(True, bool)
    prompt_cache: int = _setting(16, int)
    # Requests sharing denoiser steps (batching.py): how many at once (0: what the memory plan fits; 1: off, the
    # default until docs/BENCHMARKS.md "Batching" measures it on a GPU), and how long a lone request waits for
    # company (0: never slower alone).
    max_batch: int = _setting(1, int)
    batch_wait_ms: float = _setting(0.0, float)
    # LoRAs added into a resident denoiser's weights while they are wanted, the originals copied back exactly
    # afterwards (toolkit/models/lora_patch.py): steps at the base model's speed for a host copy of the weights
    # the LoRAs touch. Off: unmerged adapters, what every LoRA test and the hot-swap slots were built on.
    lora_patch: bool = _setting(False, bool)
    # Uploads (assets.py).
    assets_max_gb: float = _setting(2.0, float)
    assets_max_age_hours: float = _setting(168.0, float)
    # Where models and LoRAs come from (model_sources.py, request_checks.py). lora_roots None: MODELS_PATH (and
    # the training folder, for a job: AI Toolkit writes the LoRAs it trains there); model_roots None: MODELS_PATH
    # and the Hugging Face cache. The operator's own default_model and models may point anywhere.
    lora_roots: Optional[list] = _setting(None, _list_or_none)
    model_roots: Optional[list] = _setting(None)
    allow_downloads: bool = _setting(True, bool)
    max_download_gb: Optional[float] = _setting(None)  # None: no cap
    default_model: Optional[dict] = _setting(None)  # warm-loaded at start-up
    models: Optional[dict] = _setting(None)  # alias -> model settings, for the OpenAI Images API (model_aliases.py)

    @classmethod
    def from_config(cls, engine: Optional[Mapping] = None) -> "EngineSettings":
        """From a job config's ``engine:`` block (None or absent: every default)."""
        engine = engine if isinstance(engine, Mapping) else {}
        values = {}
        for f in dataclasses.fields(cls):
            value = engine.get(f.name)
            if value is None:
                continue
            read = f.metadata["read"]
            values[f.name] = read(value) if read is not None else value
        return cls(**values)

    def for_job(self, job_name: str, training_folder: str) -> "EngineSettings":
        """The folders a job process uses, absolute: unset ones under ``<training_folder>/<job_name>``, and the
        training folder among the LoRA roots unless ``lora_roots`` is set."""

        def unless_set(value: Optional[str], default: str) -> str:
            return os.path.abspath(default if value is None else value)

        job_folder = unless_set(self.job_folder, os.path.join(training_folder, job_name))
        return dataclasses.replace(
            self,
            job_folder=job_folder,
            output_folder=unless_set(self.output_folder, os.path.join(job_folder, "outputs")),
            assets_folder=unless_set(self.assets_folder, os.path.join(job_folder, "assets")),
            lora_roots=self.lora_roots or [MODELS_PATH, os.path.abspath(training_folder)],
        )
