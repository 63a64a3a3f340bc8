"""What the Generate page's pickers offer. ``GET /loras``: every ``.safetensors`` with LoRA weights under the
LoRA roots, with what AI Toolkit knows about it. ``GET /checkpoints``: diffusers folders and single-file
checkpoints under the model roots. AI Toolkit saves a run's LoRAs as
``<training folder>/<job>/<job>_<step:09d>.safetensors`` beside the job's ``config.yaml`` and writes
``training_info`` and ``ss_base_model_version`` into the file's metadata (docs/LORA_FORMATS.md), so the job,
the step and the family come from there. Reads headers and YAML only: no torch here."""

from __future__ import annotations

import json
import os
import re
from typing import Optional

MAX_FILES = 2000  # a picker, not an indexer: a root with more is listed up to this many
MAX_DEPTH = 3  # <root>/<job>/<file> and one folder below it
STEP_IN_NAME = re.compile(r"_(\d{6,9})(?:_(?:high|low)_noise)?\.safetensors$")


def list_loras(roots: list[str]) -> list[dict]:
    """Newest first. Files that are not LoRAs (checkpoints, broken files) are left out."""
    from toolkit.models.components.loading import safetensors_header
    from toolkit.models.lora import lora_layers

    found, seen = [], set()
    for root in roots:
        for path in _safetensors_under(root):
            real = os.path.realpath(path)
            if real in seen or len(found) >= MAX_FILES:
                continue
            seen.add(real)
            try:
                header = safetensors_header(path)  # read once: it says both "a LoRA?" and what AI Toolkit recorded
                if not lora_layers(header):
                    continue
                found.append(_describe(path, root, header.get("__metadata__") or {}))
            except (OSError, ValueError):
                continue
    return sorted(found, key=lambda e: -e["mtime"])


def list_checkpoints(roots: list[str]) -> list[dict]:
    """Diffusers folders (a ``model_index.json``; the pipeline class it names) and single ``.safetensors`` files
    that are not LoRAs, by path. A diffusers folder's own weight files are not listed again."""
    from toolkit.models.lora import file_layers

    found = []
    for root in roots:
        for folder, files in _walk(root):
            if "model_index.json" in files:
                found.append(
                    {
                        "path": folder,
                        "name": os.path.basename(folder),
                        "kind": "diffusers",
                        "pipeline": _pipeline_class(folder),
                        "root": os.path.abspath(root),
                    }
                )
            for name in files:
                path = os.path.join(folder, name)
                if not name.endswith(".safetensors") or _inside_diffusers_folder(folder):
                    continue
                try:
                    if file_layers(path):
                        continue
                except (OSError, ValueError):
                    continue
                found.append(
                    {
                        "path": path,
                        "name": name,
                        "kind": "single_file",
                        "bytes": os.path.getsize(path),
                        "root": os.path.abspath(root),
                    }
                )
            if len(found) >= MAX_FILES:
                return sorted(found, key=lambda e: e["path"])
    return sorted(found, key=lambda e: e["path"])


def _pipeline_class(folder: str) -> Optional[str]:
    try:
        with open(os.path.join(folder, "model_index.json"), encoding="utf-8") as f:
            return json.load(f).get("_class_name")
    except (OSError, ValueError, AttributeError):
        return None


def _inside_diffusers_folder(folder: str) -> bool:
    parent = os.path.dirname(folder)
    return os.path.isfile(os.path.join(folder, "model_index.json")) or os.path.isfile(
        os.path.join(parent, "model_index.json")
    )


def _walk(root: str):
    """(folder, file names) to ``MAX_DEPTH`` levels, hidden folders skipped."""
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        return
    for folder, dirs, files in os.walk(root):
        depth = os.path.relpath(folder, root).count(os.sep) + (folder != root)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < MAX_DEPTH - 1 else []
        yield folder, sorted(files)


def _safetensors_under(root: str):
    for folder, files in _walk(root):
        for name in files:
            if name.endswith(".safetensors"):
                yield os.path.join(folder, name)


def _describe(path: str, root: str, meta: dict) -> dict:
    folder = os.path.dirname(path)
    job_config = _job_config(folder)
    stat = os.stat(path)
    return {
        "path": path,
        "name": os.path.basename(path),
        "root": os.path.abspath(root),
        "bytes": stat.st_size,
        "mtime": stat.st_mtime,
        "job": _job_name(job_config) or meta.get("ss_output_name"),
        "step": _step(meta, path),
        "arch": _arch(job_config),
        "base_model": meta.get("ss_base_model_version"),
    }


def _job_config(folder: str) -> Optional[dict]:
    path = os.path.join(folder, "config.yaml")
    if not os.path.isfile(path):
        return None
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            config = yaml.safe_load(f)
    except (OSError, yaml.YAMLError):
        return None
    return config if isinstance(config, dict) else None


def _job_name(config: Optional[dict]) -> Optional[str]:
    name = ((config or {}).get("config") or {}).get("name")
    return str(name) if name else None


def _arch(config: Optional[dict]) -> Optional[str]:
    """``config.process[0].model.arch`` (tag dropped), or the flags older configs carry instead."""
    try:
        model = config["config"]["process"][0]["model"]
    except (TypeError, KeyError, IndexError):
        return None
    if model.get("arch"):
        return str(model["arch"]).split(":")[0]
    flags = (("is_flux", "flux"), ("is_xl", "sdxl"), ("is_v3", "sd3"), ("is_lumina2", "lumina2"))
    return next((arch for flag, arch in flags if model.get(flag)), "sd1")


def _step(meta: dict, path: str) -> Optional[int]:
    try:
        return int(json.loads(meta["training_info"])["step"])
    except (KeyError, ValueError, TypeError):
        match = STEP_IN_NAME.search(os.path.basename(path))
        return int(match.group(1)) if match else None
