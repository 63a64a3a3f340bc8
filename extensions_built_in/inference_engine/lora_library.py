"""The LoRA library: every LoRA file under the engine's LoRA roots with the name a person knows it by, its
trigger words and a preview, found by that name from a prompt's ``<lora:name:0.8>``, and hashed as A1111 and
Forge hash LoRAs for their ``Lora hashes`` text.

What a file is called: AI Toolkit names a run's saves ``<job>_<step:09d>.safetensors`` and writes the job name
as ``ss_output_name`` (docs/LORA_FORMATS.md); diffusers saves every LoRA as ``pytorch_lora_weights.safetensors``,
so there the folder names it. A prompt tag names a file by its stem (``<lora:my_job_000000250>``, the folder's
name for a diffusers file) or by its job (``<lora:my_job>``: the newest save of that job), as A1111 finds a LoRA
by its file name or its ``ss_output_name`` alias.

Trigger words: the job's ``trigger_word`` (AI Toolkit's config), then the most frequent captions' tags kohya's
trainers record as ``ss_tag_frequency``. Preview: the run's newest sample image for the file's step (AI Toolkit
writes ``<job folder>/samples/<time>__<step:09d>_<prompt index>.jpg``), else its newest sample.

The hash is A1111's for a ``.safetensors`` LoRA (``modules/hashes.py`` with ``use_addnet_hash``: the sha256 of
the bytes after the header, which metadata edits leave alone; Civitai's AutoV3), whose first 12 hex digits
``Lora hashes`` carries. Hashes are kept by path, size and modification time: a request never rehashes a file
that did not change. Headers, YAML and bytes only: no torch here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

# A1111's extra-network syntax (modules/extra_networks.py re_extra_net) for LoRAs: <lora:name> or
# <lora:name:multiplier>, further ":" fields (its text-encoder/UNet split) ignored.
LORA_TAG = re.compile(r"<lora:([^>]*)>")
DIFFUSERS_LORA = "pytorch_lora_weights.safetensors"
SAMPLE_NAME = re.compile(r"__(\d+)_(\d+)\.(?:jpe?g|png|webp)$", re.IGNORECASE)
IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".webp")
MAX_TRIGGER_WORDS = 12
LISTING_TTL_S = 10.0  # a prompt's tags are resolved against a listing this recent; an unknown name rescans once
SHORT_HASH = 12  # hex digits of the hash A1111 and Forge write


@dataclass(frozen=True)
class LoraTag:
    name: str
    multiplier: float
    text: str  # the tag as written


class BadLoraTag(ValueError):
    """A ``<lora:…>`` tag that cannot be read (no name, a multiplier that is not a number)."""


def split_lora_tags(prompt: str) -> tuple[str, list[LoraTag]]:
    """The prompt without its ``<lora:…>`` tags (what is encoded) and the tags in order. Whitespace a tag leaves
    behind is folded, as A1111 leaves the rest of the prompt as written."""
    tags = []
    for match in LORA_TAG.finditer(prompt or ""):
        fields = match.group(1).split(":")
        name = fields[0].strip()
        if not name:
            raise BadLoraTag(f"{match.group(0)!r} names no LoRA: write <lora:name> or <lora:name:0.8>")
        multiplier = 1.0
        if len(fields) > 1 and fields[1].strip():
            try:
                multiplier = float(fields[1])
            except ValueError:
                raise BadLoraTag(f"{match.group(0)!r}: the multiplier {fields[1]!r} is not a number") from None
            if not -10 <= multiplier <= 10:
                raise BadLoraTag(f"{match.group(0)!r}: the multiplier must be between -10 and 10")
        tags.append(LoraTag(name, multiplier, match.group(0)))
    if not tags:
        return prompt, []
    clean = LORA_TAG.sub(" ", prompt)
    clean = re.sub(r"[ \t]{2,}", " ", clean)
    clean = re.sub(r"\s+([,.;])", r"\1", clean).strip()
    return clean, tags


def tag_text(name: str, multiplier: float) -> str:
    return f"<lora:{name}:{multiplier:g}>"


# ------------------------------------------------------------------------------------------------ hashes
class LoraHashes:
    """A1111's LoRA hash per file version, computed once (on a worker thread when asked ahead of need)."""

    def __init__(self):
        self._done: dict = {}
        self._running: dict = {}
        self._lock = threading.Lock()
        self._pool: Optional[ThreadPoolExecutor] = None
        self.computed = 0  # files actually read: the cache's tests count them

    @staticmethod
    def _key(path: str) -> tuple:
        st = os.stat(path)
        return os.path.realpath(path), st.st_size, st.st_mtime_ns

    def known(self, path: str) -> Optional[str]:
        """The hash if already computed for this version of the file (never reads it)."""
        try:
            return self._done.get(self._key(path))
        except OSError:
            return None

    def prefetch(self, path: str) -> None:
        """Start hashing on a worker thread, so the result's text finds it ready."""
        try:
            key = self._key(path)
        except OSError:
            return
        with self._lock:
            if key in self._done or key in self._running:
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="lora-hash")
            self._running[key] = self._pool.submit(self._compute, key)

    def hash(self, path: str) -> Optional[str]:
        """The full hex digest (None when the file cannot be read); waits for a prefetch in progress."""
        try:
            key = self._key(path)
        except OSError:
            return None
        with self._lock:
            if key in self._done:
                return self._done[key]
            future: Optional[Future] = self._running.get(key)
        if future is not None:
            return future.result()
        return self._compute(key)

    def short(self, path: str) -> Optional[str]:
        full = self.hash(path)
        return full[:SHORT_HASH] if full else None

    def _compute(self, key: tuple) -> Optional[str]:
        try:
            digest = addnet_hash(key[0])
        except (OSError, ValueError):
            digest = None
        with self._lock:
            self._running.pop(key, None)
            if digest:
                self._done[key] = digest
                self.computed += 1
        return digest


def addnet_hash(path: str) -> str:
    """sha256 of a safetensors file's bytes after its header (kohya's ``addnet_hash_safetensors``, which A1111
    uses for LoRAs)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        f.seek(8 + length)
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


HASHES = LoraHashes()  # one per process: the library's listing and every request's result share it


# ------------------------------------------------------------------------------------------------ facts
def tag_name(path: str) -> str:
    """What ``<lora:…>`` calls the file: its stem, or its folder's name for diffusers' fixed file name."""
    base = os.path.basename(path)
    if base == DIFFUSERS_LORA:
        return os.path.basename(os.path.dirname(os.path.abspath(path)))
    return os.path.splitext(base)[0]


def title(path: str, meta: dict, job: Optional[str]) -> str:
    """The name a person knows the LoRA by: its training job's, the name it was saved under, else its tag."""
    if os.path.basename(path) == DIFFUSERS_LORA:
        return tag_name(path)
    return job or str(meta.get("ss_output_name") or "") or tag_name(path)


def trigger_words(meta: dict, job_config: Optional[dict]) -> list[str]:
    """The job's ``trigger_word`` first, then ``ss_tag_frequency``'s tags, most frequent first."""
    words: list[str] = []
    try:
        process = (job_config or {})["config"]["process"][0]
        trigger = process.get("trigger_word") if isinstance(process, dict) else None
    except (KeyError, IndexError, TypeError):
        trigger = None
    if trigger:
        words.append(str(trigger).strip())
    counts: dict = {}
    try:
        frequency = json.loads(meta.get("ss_tag_frequency") or "{}")
    except (TypeError, ValueError):
        frequency = {}
    for dataset in frequency.values() if isinstance(frequency, dict) else ():
        for tag, count in dataset.items() if isinstance(dataset, dict) else ():
            if isinstance(count, (int, float)):
                counts[str(tag).strip()] = counts.get(str(tag).strip(), 0) + count
    for tag, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if tag and tag not in words:
            words.append(tag)
    return words[:MAX_TRIGGER_WORDS]


def sample_preview(folder: str, step: Optional[int]) -> Optional[str]:
    """The run's sample image for ``step`` (its first prompt), else its newest; None without samples."""
    samples = os.path.join(folder, "samples")
    try:
        names = [n for n in os.listdir(samples) if n.lower().endswith(IMAGE_EXTS) and not n.startswith(".")]
    except OSError:
        return None
    if not names:
        return None
    if step is not None:
        at_step = []
        for n in names:
            match = SAMPLE_NAME.search(n)
            if match and int(match.group(1)) == step:
                at_step.append((int(match.group(2)), n))
        if at_step:
            return os.path.join(samples, min(at_step)[1])

    def mtime(n: str) -> float:
        try:
            return os.stat(os.path.join(samples, n)).st_mtime
        except OSError:
            return 0.0

    return os.path.join(samples, max(names, key=lambda n: (mtime(n), n)))
