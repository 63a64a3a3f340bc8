"""One generate request as the engine holds it, from the queue to its last frame."""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Iterator, Optional

from extensions_built_in.inference_engine.latent_preview import checkpoint_preview_factors, preview_shape
from extensions_built_in.inference_engine.lora_library import HASHES, SHORT_HASH, tag_name
from extensions_built_in.inference_engine.request_checks import StreamOptions
from extensions_built_in.inference_engine.stream import FrameStream
from toolkit.config_modules import MAX_SEED, GenerateImageConfig, ModelConfig
from toolkit.memory_quality import file_note

# Sample fields that are where the engine put things for one run, not settings: never written into a file.
SCRATCH_FIELDS = ("output_path", "output_folder", "gen_time", "upscaled_input")

if TYPE_CHECKING:
    from toolkit.memory_plan import Plan
    from toolkit.step_clock import StepClock


@dataclass
class Request:
    id: str
    model_class: type
    model: ModelConfig
    sample: GenerateImageConfig
    options: StreamOptions
    stream: FrameStream
    body: dict
    cancelled: threading.Event = field(default_factory=threading.Event)
    stage: str = "queued"
    message: str = "Waiting in queue"
    created: float = field(default_factory=time.time)
    timings: dict = field(default_factory=dict)
    clock: Optional[StepClock] = None  # the image being made's steps and stages (engine ``_generate``)
    plan: Optional[Plan] = None  # the memory plan it runs under, once planned
    batch_count: int = 1
    batch_seeds: str = "consecutive"

    @property
    def output_kind(self) -> str:
        return self.model_class.modality

    def resolved_config(self, sample: Optional[GenerateImageConfig] = None) -> dict:
        """The request as the engine runs it (defaults filled in): the start frame carries it, and each result's
        sidecar with that result's own ``sample`` (its seed)."""
        fields = asdict(sample or self.sample)
        config = {
            "model": self.model.identity() | {"arch": self.model_class.arch},
            "sample": {k: v for k, v in fields.items() if k not in SCRATCH_FIELDS},
            "stream": asdict(self.options),
        }
        if self.batch_count > 1:
            config["batch"] = {"count": self.batch_count, "seeds": self.batch_seeds}
        if loras := self.lora_facts(wait=sample is not None):  # a result's file names them with their hashes
            config["loras"] = loras
        if note := file_note(self.plan):  # 8-bit or streamed weights: the result file says so
            config["memory"] = note
        return config

    def lora_facts(self, wait: bool = True) -> list[dict]:
        """Every LoRA applied, in order: the name ``<lora:…>`` finds it by, its path, multiplier and A1111's short
        hash (lora_library.py). ``wait=False`` (the start frame) takes a hash only if already computed: hashing
        a large file runs on a worker thread meanwhile."""
        facts = []
        for path, multiplier in self.model.lora_list():
            short = HASHES.short(path) if wait else (HASHES.known(path) or "")[:SHORT_HASH] or None
            facts.append({"name": tag_name(path), "path": path, "multiplier": multiplier, "hash": short})
        return facts

    def images(self) -> Iterator["BatchImage"]:
        """Each result of a batch: the first is the request's own sample; the rest take the next seeds (or
        random ones) and files named after the request id with ``_2``, ``_3``…"""
        first = self.sample
        stem, ext = os.path.splitext(first.output_path or "")
        for index in range(self.batch_count):
            if index == 0:
                sample = first
            else:
                seed = (
                    random.randint(0, MAX_SEED)
                    if self.batch_seeds == "random"
                    else (first.seed + index) % (MAX_SEED + 1)
                )
                sample = replace(first, seed=seed, output_path=f"{stem}_{index + 1}{ext}")
            yield BatchImage(index, self.batch_count, sample)

    def log_line(self, outcome: str) -> str:
        """One line per finished request in the engine's log (the job page shows it): what ran and how it ended."""
        s = self.sample
        size = f"{s.duration_s:g} s" if self.output_kind == "audio" else f"{s.width}x{s.height}"
        images = f", {self.batch_count} images" if self.batch_count > 1 else ""
        loras = "".join(
            f", LoRA {e['name']}:{e['multiplier']:g}" + (f" ({e['hash']})" if e["hash"] else "")
            for e in self.lora_facts()
        )
        return (
            f"[engine] request {self.id[:8]}: {self.model_class.arch} {self.model.name_or_path}{loras}, {size}, "
            f"{s.num_inference_steps} steps, seed {s.seed}{images}: {outcome}"
        )

    def latent_spec(self) -> dict:
        """The start frame's ``latent``: layout, RGB factors (the checkpoint's own where it ships them) and the
        shape the previews will have."""
        spec = self.model_class.latent.to_dict()
        spec.update(checkpoint_preview_factors(self.model.name_or_path, spec["channels"]))
        shape = self.model_class("cpu", self.model).latent_shape(self.sample)
        spec["shape"] = list(preview_shape(shape, spec["layout"], self.options.max_frames, self.options.downsample))
        spec["kind"] = self.options.latents
        spec["every_n_steps"] = self.options.every_n_steps
        return spec

    def queue_row(self, position: int) -> dict:
        """``GET /queue``'s row for this request (position 0: running)."""
        return {
            "request_id": self.id,
            "arch": self.model_class.arch,
            "name_or_path": self.model.name_or_path,
            "prompt": self.sample.prompt,
            "seed": self.sample.seed,
            "batch_count": self.batch_count,
            "detached": self.stream.detached,
            "stage": self.stage,
            "position": position,
            "created": self.created,
        }


@dataclass(frozen=True)
class BatchImage:
    index: int
    count: int
    sample: GenerateImageConfig

    @property
    def last(self) -> bool:
        return self.index == self.count - 1
