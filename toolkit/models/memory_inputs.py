"""What the memory plan reads from a family before anything loads: each component's size from its files' headers,
the working sets a request allocates, and the user's explicit memory options as placements. A base class of
``BaseModel`` (toolkit/models/base_model.py), kept apart because the planner is its only reader."""

from __future__ import annotations

from typing import Optional

from toolkit.config_modules import GenerateImageConfig
from toolkit.memory_plan import GIB, Part, Plan, Workload
from toolkit.models.components.loading import weight_bytes
from toolkit.models.vae_tiling import tile_px, vae_tiles


class MemoryInputs:
    def memory_parts(self) -> list[Part]:
        """Each weighted component's size once loaded, read from its files' headers (nothing is loaded)."""
        cfg = self.model_config
        parts = []
        for role, comp in self.components.items():
            if comp.has_weights:
                source = cfg.name_or_path if comp.source == "main" else cfg.extras_name_or_path
                size, largest = weight_bytes(
                    source, comp.subfolder, self.dtype, cfg.extras_name_or_path, cfg.variant, self._report_download
                )
                parts.append(Part(role, component_kind(role, comp), size, largest))
        return parts

    def workload(self, gen: GenerateImageConfig, tile: Optional[int] = None) -> Workload:
        """Working sets beside the weights for this request: the family's ``working_set`` rates times its latent
        positions (sampling), output pixels or audio seconds (decoding); a tiled VAE holds one ``tile`` (``tile_px``,
        toolkit/models/vae_tiling.py). Estimates: the engine re-plans with a larger reserve if one proves short."""
        ws = self.working_set
        pixels = gen.width * gen.height
        frames = gen.num_frames if self.modality == "video" else 1
        positions = pixels * frames / (self.latent.spatial_factor**2 * max(1, self.latent.temporal_factor))
        held = frames if ws.frames_at_once == 0 else min(frames, ws.frames_at_once)
        area = (tile or tile_px(self)) ** 2
        denoise = GIB // 4 + int(positions * ws.per_position)
        decode = int(0.4 * GIB + pixels * held * ws.per_pixel)
        if self.modality == "audio":  # the VAE decodes a waveform: its seconds, not pixels
            decode = int(0.4 * GIB + self.decoded_seconds(gen) * ws.per_second)
        tiled = int(0.4 * GIB + min(pixels, area) * held * ws.per_pixel) if vae_tiles(self) else decode
        encode, encode_tiled = ws.encoding(pixels, area if vae_tiles(self) else pixels)
        return Workload(denoise, decode, tiled, encode, int(positions) // ws.patch**2, tile or 0, encode_tiled)

    def decoded_seconds(self, gen: GenerateImageConfig) -> float:
        """Audio the VAE decodes for this request (Stable Audio's whole window, whatever the duration asked)."""
        return float(gen.duration_s or self.defaults.get("duration_s") or 0)

    def options_plan(self) -> Plan:
        """The user's explicit options as placements: ``low_vram`` visits, ``layer_offloading`` streams,
        ``quantize``/``quantize_te`` quantize (and a quantized component never visits)."""
        cfg = self.model_config
        placements = {}
        for role, comp in self.components.items():
            if not comp.has_weights:
                continue
            main = comp.source == "main"
            percent = cfg.layer_offloading_transformer_percent if main else cfg.layer_offloading_text_encoder_percent
            kind = component_kind(role, comp)
            if cfg.quantize if main else (cfg.quantize_te and kind == "encoder"):
                placements[role] = "quantized"
            elif cfg.layer_offloading and percent > 0 and kind != "decoder" and self._on_gpu():
                placements[role] = "stream"
            elif cfg.low_vram and self._on_gpu():
                placements[role] = "visit"
            else:
                placements[role] = "gpu"
        return Plan(placements, False, 0, 0, source="options" if cfg.explicit_memory_options() else "default")


def component_kind(role: str, comp) -> str:
    """What the memory plan needs to know of a role: the denoiser runs every step, encoders once before
    sampling, decoders (VAEs, vocoders) once after."""
    if comp.source == "main":
        return "denoiser"
    if "vae" in role or "vocoder" in role or "detokenizer" in role:
        return "decoder"
    return "encoder"
