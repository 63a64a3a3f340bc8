"""One generate request as the engine holds it, from the queue to its last frame."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field

from extensions_built_in.inference_engine.latent_preview import checkpoint_preview_factors, preview_shape
from extensions_built_in.inference_engine.request_checks import StreamOptions
from extensions_built_in.inference_engine.stream import FrameStream
from toolkit.config_modules import GenerateImageConfig, ModelConfig


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

    @property
    def output_kind(self) -> str:
        return self.model_class.modality

    def resolved_config(self) -> dict:
        """The request as the engine runs it (defaults filled in): the start frame and the sidecar carry it."""
        sample = {k: v for k, v in asdict(self.sample).items() if k not in ("output_path", "output_folder", "gen_time")}
        return {
            "model": self.model.identity() | {"arch": self.model_class.arch},
            "sample": sample,
            "stream": asdict(self.options),
        }

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
            "stage": self.stage,
            "position": position,
            "created": self.created,
        }
