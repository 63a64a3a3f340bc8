"""What the Generate page's libraries offer. ``GET /loras``: every ``.safetensors`` with LoRA weights under the
LoRA roots, with what AI Toolkit knows about it (lora_library.py: names, trigger words, previews). ``GET
/checkpoints``: diffusers folders, Hugging Face cache models and single-file checkpoints under the model roots,
each with its family and the defaults that fit it. AI Toolkit saves a run's LoRAs as
``<training folder>/<job>/<job>_<step:09d>.safetensors`` beside the job's ``config.yaml`` and writes
``training_info`` and ``ss_base_model_version`` into the file's metadata (docs/LORA_FORMATS.md), so the job,
the step and the family come from there. Reads headers and YAML only: no torch here."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from typing import Optional
from urllib.parse import quote

from extensions_built_in.inference_engine.lora_library import (
    HASHES,
    LISTING_TTL_S,
    sample_preview,
    tag_name,
    title,
    trigger_words,
)

MAX_FILES = 2000  # a picker, not an indexer: a root with more is listed up to this many
MAX_DEPTH = 3  # <root>/<job>/<file> and one folder below it
FILES_URL_PREFIX = "/api/files"  # where the UI serves the training folder (a sample image's ``preview_url``)
STEP_IN_NAME = re.compile(r"_(\d{6,9})(?:_(?:high|low)_noise)?\.safetensors$")


def safetensors_files(roots: list[str]):
    """(root, path) of each ``.safetensors`` under the roots, up to ``MAX_FILES``."""
    count = 0
    for root in roots:
        for path in _safetensors_under(root):
            if count >= MAX_FILES:
                return
            count += 1
            yield root, path


def describe_lora(path: str, root: str) -> Optional[dict]:
    """A LoRA file's entry, None when it is no LoRA. The header is read once: it says both "a LoRA?" and what AI
    Toolkit recorded."""
    from toolkit.models.components.loading import safetensors_header
    from toolkit.models.lora import lora_layers

    try:
        header = safetensors_header(path)
        if not lora_layers(header):
            return None
        return _describe(path, root, header.get("__metadata__") or {})
    except (OSError, ValueError):
        return None


def list_checkpoints(roots: list[str], device: str = "cpu", outputs: Optional[list[dict]] = None) -> list[dict]:
    """Diffusers folders (a ``model_index.json``), models in a Hugging Face cache (by hub id) and single
    ``.safetensors`` files that are not LoRAs, by path, each with its family (``toolkit/models/checkpoint_arch.py``),
    size, the defaults that fit it on this engine's ``device`` and, from ``outputs`` (the output folder's listing,
    newest first), the newest result made with it. A diffusers folder's own weight files are not listed again."""
    from toolkit.models.checkpoint_arch import pipeline_archs
    from toolkit.models.lora import lora_layers

    by_pipeline = pipeline_archs()
    found = []
    for root in roots:
        found += _hub_cache_models(root, by_pipeline)
        for folder, files in _walk(root):
            if "model_index.json" in files:
                found.append(_folder_entry(folder, root, by_pipeline))
            for name in files:
                path = os.path.join(folder, name)
                if not name.endswith(".safetensors") or _inside_diffusers_folder(folder):
                    continue
                header = _cached_header(path)
                if header is None or lora_layers(header):
                    continue
                from toolkit.models.checkpoint_arch import arch_of_header

                found.append(
                    {
                        "path": path,
                        "name": name,
                        "kind": "single_file",
                        "arch": arch_of_header(header),
                        "bytes": os.path.getsize(path),
                        "root": os.path.abspath(root),
                    }
                )
            if len(found) >= MAX_FILES:
                break
    newest = _newest_results(outputs or [])
    for entry in found:
        entry["defaults"] = checkpoint_defaults(entry, device)
        entry["thumbnail"] = newest.get(entry["path"]) or newest.get(os.path.realpath(entry["path"]))
        entry.pop("folder", None)
    return sorted(found, key=lambda e: e["path"])[:MAX_FILES]


# Where A1111 and ComfyUI keep upscaler files: a .pth there is listed by its place (a pickle is never opened
# to list it); a .safetensors anywhere under the roots is listed when its keys are an RRDBNet's.
UPSCALER_FOLDERS = {"esrgan", "realesrgan", "upscale_models", "upscalers"}
UPSCALER_KEYS = ("conv_first.weight", "model.0.weight", "params_ema.conv_first.weight")


def list_upscalers(roots: list[str]) -> list[dict]:
    """Upscaler files (toolkit/models/upscalers.py) under the model roots, for ``upscale.model``."""
    from toolkit.models.upscalers import EXTENSIONS

    found, seen = [], set()
    for root in roots:
        for folder, names in _walk(root):
            in_place = os.path.basename(folder).lower() in UPSCALER_FOLDERS
            for name in names:
                path = os.path.join(folder, name)
                if not name.endswith(EXTENSIONS) or os.path.realpath(path) in seen:
                    continue
                keys = _cached_header(path) if name.endswith(".safetensors") else None
                if (keys is not None and any(k in keys for k in UPSCALER_KEYS)) or (keys is None and in_place):
                    seen.add(os.path.realpath(path))
                    found.append({"name": name, "path": path, "bytes": os.path.getsize(path)})
    return sorted(found, key=lambda e: e["name"].lower())


def engine_dtype(device: str, arch: Optional[str]) -> str:
    """The dtype a checkpoint runs in on this engine: float32 on a CPU (which computes half precision in float32
    anyway, ``BaseModel._resolve_dtype``: a form asking float16 there only reloads the model); on a GPU float16
    for the UNet families and bfloat16 for the transformers, which are released and trained in bfloat16 and
    whose activations overflow float16's range."""
    if not str(device).startswith("cuda"):
        return "float32"
    from toolkit.models.registry import UnknownArchError, get_model_class

    try:
        components = get_model_class(arch or "sd1").components
    except UnknownArchError:
        return "float16"
    return "float16" if "unet" in components else "bfloat16"


def checkpoint_defaults(entry: dict, device: str) -> dict:
    """Size and dtype for a checkpoint: the size its own config says it was trained at (a folder's), else its
    family's."""
    from toolkit.models.checkpoint_arch import native_size
    from toolkit.models.registry import UnknownArchError, get_model_class

    out: dict = {"dtype": engine_dtype(device, entry.get("arch"))}
    try:
        family = get_model_class(entry["arch"]) if entry.get("arch") else None
    except UnknownArchError:
        family = None
    if family is None:
        return out
    size = native_size(entry["folder"], family) if entry.get("folder") else None
    if size:
        return out | {"width": size, "height": size}
    width, height = family.defaults.get("width"), family.defaults.get("height")
    return out | ({"width": width, "height": height} if width and height else {})


def hub_models() -> list[dict]:
    """Each family's and tag's published checkpoint (``toolkit/models/arch_tags.py``): what the library offers
    beside the files on disk."""
    from toolkit.models.registry import ARCHS, get_model_class

    out = []
    for arch in ARCHS:
        family = get_model_class(arch)
        if family.hub_id:
            out.append({"arch": arch, "value": arch, "hub_id": family.hub_id, "description": family.description})
        for tag in family.tags:
            value = f"{arch}:{tag}"
            hub_id = family.hub_id_for(value)
            if hub_id:
                description = family.tags[tag].get("description") or family.description
                out.append({"arch": arch, "value": value, "hub_id": hub_id, "description": description})
    return out


def _folder_entry(folder: str, root: str, by_pipeline: dict) -> dict:
    from toolkit.models.checkpoint_arch import arch_of_folder

    return {
        "path": folder,
        "name": os.path.basename(folder),
        "kind": "diffusers",
        "pipeline": _pipeline_class(folder),
        "arch": arch_of_folder(folder, by_pipeline),
        "bytes": _folder_bytes(folder),
        "root": os.path.abspath(root),
        "folder": folder,
    }


def _hub_cache_models(root: str, by_pipeline: dict) -> list[dict]:
    """Diffusers pipelines in a Hugging Face cache (``models--org--name/snapshots/<revision>``), listed by hub id:
    a request naming the id loads them from the cache."""
    out = []
    try:
        names = sorted(n for n in os.listdir(root) if n.startswith("models--"))
    except OSError:
        return out
    for name in names:
        snapshots = os.path.join(root, name, "snapshots")
        try:
            revisions = [os.path.join(snapshots, r) for r in os.listdir(snapshots)]
        except OSError:
            continue
        pipelines = [r for r in revisions if os.path.isfile(os.path.join(r, "model_index.json"))]
        if not pipelines:
            continue
        folder = max(pipelines, key=os.path.getmtime)
        hub_id = name[len("models--") :].replace("--", "/", 1)
        entry = _folder_entry(folder, root, by_pipeline)
        out.append(entry | {"path": hub_id, "name": hub_id, "kind": "hub_cache"})
    return out


def _folder_bytes(folder: str) -> int:
    """Weights and configs under a folder (links followed: a hub cache's snapshot links to its blobs)."""
    total = 0
    for sub, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.stat(os.path.join(sub, name)).st_size
            except OSError:
                pass
    return total


_HEADERS: dict = {}  # (real path, size, mtime) -> header: a refresh rereads only what changed


def clear_header_cache() -> None:
    _HEADERS.clear()


def _cached_header(path: str) -> Optional[dict]:
    from toolkit.models.components.loading import safetensors_header

    try:
        st = os.stat(path)
        key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        if key not in _HEADERS:
            header = safetensors_header(path)
            _HEADERS[key] = {k: v for k, v in header.items() if k != "__metadata__"}
        return _HEADERS[key]
    except (OSError, ValueError):
        return None


def _newest_results(outputs: list[dict]) -> dict:
    """Checkpoint (as a request named it) -> its newest result in the output folder: ``name``, ``url`` and
    ``ext``; the results record their request in their sidecars (``config.model.name_or_path``)."""
    newest: dict = {}
    for item in outputs:  # newest first
        model = (((item.get("meta") or {}).get("config") or {}).get("model") or {}).get("name_or_path")
        if isinstance(model, str) and model and model not in newest:
            ext = os.path.splitext(item.get("name", ""))[1].lstrip(".").lower()
            newest[model] = {"name": item.get("name"), "url": item.get("url"), "ext": ext}
    return newest


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
    config = job_config(folder)
    stat = os.stat(path)
    job = _job_name(config) or meta.get("ss_output_name")
    step = _step(meta, path)
    preview = sample_preview(folder, step)
    return {
        "path": path,
        "name": os.path.basename(path),
        "root": os.path.abspath(root),
        "bytes": stat.st_size,
        "mtime": stat.st_mtime,
        "job": job,
        "step": step,
        "arch": _arch(config),
        "base_model": meta.get("ss_base_model_version"),
        "title": title(path, meta, job),
        "tag": tag_name(path),
        "aliases": sorted({str(a) for a in (job, meta.get("ss_output_name")) if a}),
        "trigger_words": trigger_words(meta, config),
        "preview": preview,
        "preview_url": f"{FILES_URL_PREFIX}/{quote(os.path.abspath(preview), safe='')}" if preview else None,
    }


def job_config(folder: str) -> Optional[dict]:
    """A training job folder's ``config.yaml`` (AI Toolkit writes it there), or None when absent or unreadable."""
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


class UnknownLora(KeyError):
    def __init__(self, name: str, known: list[str]):
        super().__init__(name)
        self.name, self.known = name, known

    def __str__(self) -> str:
        shown = ", ".join(self.known[:12]) + (", …" if len(self.known) > 12 else "")
        return f"<lora:{self.name}> names no LoRA in the engine's LoRA folders" + (
            f" (known: {shown})" if shown else " (none found)"
        )


class LoraLibrary:
    """The listing (``GET /loras``) with each file's facts kept by path, size and modification time, and the
    names prompts use resolved against it."""

    def __init__(self, roots: list[str]):
        self.roots = list(roots)
        self.hashes = HASHES
        self._facts: dict = {}
        self._listing: list[dict] = []
        self._listed_at = 0.0
        self._lock = threading.Lock()

    def entries(self, max_age_s: float = 0.0) -> list[dict]:
        """Newest first. ``max_age_s``: a listing made that recently is reused as it is."""
        if max_age_s and time.monotonic() - self._listed_at < max_age_s:
            return self._listing
        found, seen, facts = [], set(), {}
        for root, path in safetensors_files(self.roots):
            try:
                st = os.stat(path)
            except OSError:
                continue
            key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
            if key[0] in seen:
                continue
            seen.add(key[0])
            entry = self._facts.get(key, False)
            if entry is False:
                entry = describe_lora(path, root)  # None: not a LoRA (a checkpoint, a broken file)
            facts[key] = entry
            if entry is not None:
                found.append(entry | {"hash": self.hashes.known(path)})
        found.sort(key=lambda e: -e["mtime"])
        with self._lock:
            self._facts, self._listing, self._listed_at = facts, found, time.monotonic()
        return found

    def resolve(self, name: str) -> dict:
        """The entry ``<lora:name>`` means: a file whose tag is ``name``, else the newest save of the job (or
        ``ss_output_name``) of that name; case-insensitive where nothing matches exactly. ``UnknownLora`` names
        the LoRAs there are."""
        for max_age in (LISTING_TTL_S, 0.0):  # a LoRA saved since the last listing: look once more
            entries = self.entries(max_age)
            found = _match(entries, name)
            if found is not None:
                return found
        raise UnknownLora(name, sorted({e["tag"] for e in entries}))


def _match(entries: list[dict], name: str) -> Optional[dict]:
    for fold in (lambda s: s, str.casefold):
        wanted = fold(name)
        exact = [e for e in entries if fold(e["tag"]) == wanted]
        if exact:
            return exact[0]  # newest first
        by_job = [e for e in entries if wanted in {fold(a) for a in e.get("aliases", []) if a}]
        if by_job:
            return by_job[0]
    return None
