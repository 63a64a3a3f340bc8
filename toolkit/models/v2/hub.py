"""Which files of a component folder a loader reads, and fetching only those from the Hugging Face hub.

Classic repositories keep several formats and variants side by side (``.bin`` beside ``.safetensors``, ``fp16``
copies, Flax and ONNX exports): fetching a whole subfolder downloads several times what ``from_pretrained``
reads. ``component_files`` is the one rule for what is read (one weight format, the chosen variant, plus the
configs and tokenizer files); the download, the pool's identity and the memory plan's sizes all use it, so two
variants of one component are two identities and a repo's extra copies cost nothing.
"""

from __future__ import annotations

import os
import re
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


_fetched: dict = {}  # (repo, subfolder, variant) -> snapshot folder; a resident engine asks the hub once per run


def fetch_component(
    repo: str, subfolder: Optional[str], variant: Optional[str] = None, report: Optional[Reporter] = None
) -> str:
    """The local snapshot folder of ``repo`` holding this component's files, fetching only those not cached.

    With ``HF_HUB_OFFLINE`` set the cache is all there is: a component missing from it is an error that says so."""
    key = (repo, subfolder, variant)
    if key not in _fetched or not os.path.isdir(_fetched[key]):  # a cache cleaned meanwhile is fetched again
        from huggingface_hub import constants

        _fetched[key] = (_from_cache if constants.HF_HUB_OFFLINE else _from_hub)(repo, subfolder, variant, report)
    return _fetched[key]


def _in_folder(path: str, subfolder: Optional[str]) -> bool:
    return os.path.dirname(path) == (subfolder or "")


def _from_hub(repo: str, subfolder: Optional[str], variant: Optional[str], report: Optional[Reporter]) -> str:
    from huggingface_hub import HfApi, snapshot_download, try_to_load_from_cache

    info = HfApi().model_info(repo, files_metadata=True)
    sizes = {s.rfilename: s.size or 0 for s in info.siblings or [] if _in_folder(s.rfilename, subfolder)}
    wanted = [
        f"{subfolder}/{n}" if subfolder else n for n in component_files([os.path.basename(p) for p in sizes], variant)
    ]
    if not wanted:
        where = f"{repo}/{subfolder}" if subfolder else repo
        raise FileNotFoundError(f"hub repository {where!r} has no files a loader reads")
    missing = [p for p in wanted if not isinstance(try_to_load_from_cache(repo, p, revision=info.sha), str)]
    if missing and report:
        total = sum(sizes[p] for p in missing)
        report(f"Downloading {repo}/{subfolder or ''}: {len(missing)} file(s), {total / 1024**3:.2f} GiB")
    # The branch, not info.sha: a download by branch records refs/main, which an offline run resolves from.
    return snapshot_download(repo, allow_patterns=wanted)


def _from_cache(repo: str, subfolder: Optional[str], variant: Optional[str], report: Optional[Reporter]) -> str:
    """The snapshot ``refs/main`` names. Not ``snapshot_download(local_files_only=True)``: it refuses a snapshot
    that lacks any file of the repo, and one fetched by this module lacks, on purpose, every file not read."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    storage = os.path.join(constants.HF_HUB_CACHE, repo_folder_name(repo_id=repo, repo_type="model"))
    try:
        with open(os.path.join(storage, "refs", "main")) as f:
            root = os.path.join(storage, "snapshots", f.read().strip())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{repo!r} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}), and HF_HUB_OFFLINE is set"
        ) from None
    if not folder_files(os.path.join(root, subfolder or ""), variant):
        raise FileNotFoundError(
            f"{repo!r} in the Hugging Face cache has no {subfolder or 'top-level'} files, and HF_HUB_OFFLINE is set"
        )
    return root
