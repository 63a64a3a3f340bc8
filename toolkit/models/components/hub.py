"""Which files of a component folder a loader reads, and fetching only those from the Hugging Face hub.

Classic repositories keep several formats and variants side by side (``.bin`` beside ``.safetensors``, ``fp16``
copies, Flax and ONNX exports): fetching a whole subfolder downloads several times what ``from_pretrained``
reads. ``component_files`` is the one rule for what is read (one weight format, the chosen variant, plus the
configs and tokenizer files); the download, the pool's identity and the memory plan's sizes all use it, so two
variants of one component are two identities and a repo's extra copies cost nothing.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

# What ``from_pretrained`` (diffusers and transformers) reads as weights, best first.
WEIGHT_FORMATS = (".safetensors", ".bin")
# Configs, tokenizers, processors and chat templates. Anything else (Flax, TensorFlow, ONNX or OpenVINO exports,
# original checkpoints, READMEs, images) is never read.
CONFIG_EXTS = (".json", ".txt", ".model", ".jinja", ".tiktoken")
SHARD = re.compile(r"-\d{5}-of-\d{5}")

Reporter = Callable[[str], None]


def weight_format(name: str) -> Optional[str]:
    """``.safetensors`` / ``.bin`` for a weight file or a shard index of one, else None."""
    if name.endswith(WEIGHT_FORMATS):
        return os.path.splitext(name)[1]
    if ".index" in name and name.endswith(".json"):
        for fmt in WEIGHT_FORMATS:
            if fmt + ".index" in name:
                return fmt
    return None


def variant_of(name: str) -> Optional[str]:
    """The variant a weight file or index carries (``unet/diffusion_pytorch_model.fp16.safetensors`` -> fp16).

    diffusers inserts it before the last extension, shards and indexes included
    (``model.safetensors.index.fp16.json``, ``model.fp16-00001-of-00002.safetensors``)."""
    segments = SHARD.sub("", os.path.basename(name)).split(".")[1:-1]
    rest = [s for s in segments if s not in ("safetensors", "bin", "index")]
    return rest[-1] if rest else None


def component_files(names: Iterable[str], variant: Optional[str] = None) -> list[str]:
    """The names (of one folder's files) that a loader reads: every config and tokenizer file, and the weights
    of one format (safetensors over bin) and one variant (``variant`` when the folder has it, else the plain
    weights; a folder without the variant loads its plain weights, as diffusers falls back)."""
    names = sorted(set(names))
    weights = [n for n in names if weight_format(n)]
    chosen_variant = variant if variant and any(variant_of(n) == variant for n in weights) else None
    candidates = [n for n in weights if variant_of(n) == chosen_variant]
    fmt = next((f for f in WEIGHT_FORMATS if any(n.endswith(f) for n in candidates)), None)
    keep = [n for n in names if not weight_format(n) and n.endswith(CONFIG_EXTS)]
    keep += [n for n in candidates if weight_format(n) == fmt]
    return sorted(keep)


def folder_files(folder: str, variant: Optional[str] = None) -> list[str]:
    """Full paths of what a loader reads in a local component folder."""
    if not os.path.isdir(folder):
        return []
    names = [n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n))]
    return [os.path.join(folder, n) for n in component_files(names, variant)]


def uses_variant(folder: str, variant: Optional[str]) -> bool:
    """Whether ``from_pretrained`` must be told the variant: only when the folder has its weights."""
    return bool(variant) and any(variant_of(os.path.basename(p)) == variant for p in folder_files(folder, variant))


class DownloadRefused(ValueError):
    """A hub download this engine's rules forbid (``engine.allow_downloads``, ``engine.max_download_gb``): the
    request asked for it, so it is the request's error, and nothing was downloaded."""


@dataclass(frozen=True)
class DownloadPolicy:
    allowed: bool = True
    max_bytes: Optional[int] = None  # None: no cap


_policy = [DownloadPolicy()]  # the process's: an engine is one process, and every thread of it reads its rules


def use_policy(policy: DownloadPolicy) -> None:
    """The rules for every load in this process from now on, on any thread (the server thread reads configs)."""
    _policy[0] = policy


def current_policy() -> DownloadPolicy:
    return _policy[0]


def downloads_possible() -> bool:
    from huggingface_hub import constants

    return current_policy().allowed and not constants.HF_HUB_OFFLINE


_fetched: dict = {}  # (repo, subfolder, variant) -> snapshot folder; a resident engine asks the hub once per run


def fetch_component(
    repo: str, subfolder: Optional[str], variant: Optional[str] = None, report: Optional[Reporter] = None
) -> str:
    """The local snapshot folder of ``repo`` holding this component's files, fetching only those not cached.

    With ``HF_HUB_OFFLINE`` set, or downloads off, the cache is all there is: a component missing from it is an
    error that says so. A download over the cap is refused before it starts."""
    key = (repo, subfolder, variant)
    if key not in _fetched or not os.path.isdir(_fetched[key]):  # a cache cleaned meanwhile is fetched again
        _fetched[key] = (_from_hub if downloads_possible() else _from_cache)(repo, subfolder, variant, report)
    return _fetched[key]


def fetched_already(repo: str, subfolders: Iterable[Optional[str]], variant: Optional[str]) -> bool:
    """Whether this process already holds every one of these components (no hub call needed to know)."""
    return all(os.path.isdir(_fetched.get((repo, s, variant), "")) for s in subfolders)


def config_source_of(repo: str) -> str:
    """Where diffusers reads one config of ``repo`` from: the repo id, or with downloads off, the cached snapshot
    (diffusers' own download would not ask this module)."""
    if current_policy().allowed:
        return repo
    root = cached_snapshot(repo)
    if root is None:
        raise DownloadRefused(f"{repo!r} is not in the Hugging Face cache, and this engine does not download")
    return root


def _in_folder(path: str, subfolder: Optional[str]) -> bool:
    return os.path.dirname(path) == (subfolder or "")


def download_size(repo: str, subfolders: Iterable[Optional[str]], variant: Optional[str]) -> tuple[int, int]:
    """(files, bytes) that fetching these components of ``repo`` would download, from the hub's file list: one
    call to the hub, nothing downloaded."""
    from huggingface_hub import HfApi

    info = HfApi().model_info(repo, files_metadata=True)
    files = total = 0
    for subfolder in subfolders:
        _, missing, sizes = _wanted(repo, info, subfolder, variant)
        files, total = files + len(missing), total + sum(sizes[p] for p in missing)
    return files, total


def _wanted(repo: str, info, subfolder: Optional[str], variant: Optional[str]) -> tuple[list, list, dict]:
    """The repo paths of one component a loader reads, those of them the cache lacks, and every file's size in its
    folder."""
    from huggingface_hub import try_to_load_from_cache

    sizes = {s.rfilename: s.size or 0 for s in info.siblings or [] if _in_folder(s.rfilename, subfolder)}
    wanted = [
        f"{subfolder}/{n}" if subfolder else n for n in component_files([os.path.basename(p) for p in sizes], variant)
    ]
    if not wanted:
        where = f"{repo}/{subfolder}" if subfolder else repo
        raise FileNotFoundError(f"hub repository {where!r} has no files a loader reads")
    missing = [p for p in wanted if not isinstance(try_to_load_from_cache(repo, p, revision=info.sha), str)]
    return wanted, missing, sizes


def _from_hub(repo: str, subfolder: Optional[str], variant: Optional[str], report: Optional[Reporter]) -> str:
    from huggingface_hub import HfApi, snapshot_download

    info = HfApi().model_info(repo, files_metadata=True)
    wanted, missing, sizes = _wanted(repo, info, subfolder, variant)
    total, cap = sum(sizes[p] for p in missing), current_policy().max_bytes
    where = f"{repo}/{subfolder or ''}"
    if missing and cap is not None and total > cap:  # the engine checked the whole model; this guards the rest
        raise DownloadRefused(f"{where} would download {size_text(total)}, over this engine's cap of {size_text(cap)}")
    if missing and report:
        report(f"Downloading {where}: {len(missing)} file(s), {total / 1024**3:.2f} GiB")
    # The branch, not info.sha: a download by branch records refs/main, which an offline run resolves from.
    return snapshot_download(repo, allow_patterns=wanted)


def size_text(size: int) -> str:
    """Bytes as a person reads them: a cap of a few MiB must not print as 0.00 GiB."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.2f} {unit}"
    return f"{size} B"


def cached_snapshot(repo: str) -> Optional[str]:
    """The snapshot folder ``refs/main`` names in the local cache, or None: read from disk, no network."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    storage = os.path.join(constants.HF_HUB_CACHE, repo_folder_name(repo_id=repo, repo_type="model"))
    try:
        with open(os.path.join(storage, "refs", "main")) as f:
            root = os.path.join(storage, "snapshots", f.read().strip())
    except (FileNotFoundError, NotADirectoryError):
        return None
    return root if os.path.isdir(root) else None


def missing_from_cache(repo: str, subfolders: Iterable[Optional[str]], variant: Optional[str]) -> list[str]:
    """The components (subfolders; "" for the top level) the local cache has no loadable files for: what a load
    with downloads off would fail on. From disk alone, so the server's thread may ask before queueing."""
    root = cached_snapshot(repo)
    return [s or "" for s in subfolders if root is None or not _complete(os.path.join(root, s or ""), variant)]


def _complete(folder: str, variant: Optional[str]) -> bool:
    """Files a loader reads are there, and every shard a weight index names (a download cut short has the index
    and some shards)."""
    files = folder_files(folder, variant)
    for index in (p for p in files if p.endswith(".index.json") or ".index." in os.path.basename(p)):
        try:
            with open(index) as f:
                shards = set(json.load(f).get("weight_map", {}).values())
        except (OSError, ValueError, AttributeError):
            return False
        if not all(os.path.isfile(os.path.join(folder, shard)) for shard in shards):
            return False
    return bool(files)


def _from_cache(repo: str, subfolder: Optional[str], variant: Optional[str], report: Optional[Reporter]) -> str:
    """The snapshot ``refs/main`` names. Not ``snapshot_download(local_files_only=True)``: it refuses a snapshot
    that lacks any file of the repo, and one fetched by this module lacks, on purpose, every file not read."""
    from huggingface_hub import constants

    why = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else "this engine does not download"
    error = FileNotFoundError if constants.HF_HUB_OFFLINE else DownloadRefused
    root = cached_snapshot(repo)
    if root is None:
        raise error(f"{repo!r} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}), and {why}")
    if not folder_files(os.path.join(root, subfolder or ""), variant):
        raise error(f"{repo!r} in the Hugging Face cache has no {subfolder or 'top-level'} files, and {why}")
    return root
