"""Stable Audio Open 1.0: a DiT over 64-channel Oobleck latents (2048 samples per latent frame at 44.1 kHz).

The pipeline always samples a full window of ``transformer.config.sample_size`` latent frames (1024 = 47.55 s)
and tells the model the requested length through its seconds-start/seconds-end conditioning; the decoded
waveform is then cut to ``audio_end_in_s``. So the streamed latents are the whole window whatever the duration,
and the saved file has exactly the requested duration. Latents are (B, C, L) in the loop; streamed as B, L, C.
"""

import math

from toolkit.media import GeneratedMedia
from toolkit.models.base_model import BaseModel, Component, LatentSpec

SAMPLE_RATE = 44100
HOP = 2048  # Oobleck downsampling 2 * 4 * 4 * 8 * 8
WINDOW = 1024  # transformer.config.sample_size of the real checkpoint: 1024 * 2048 / 44100 = 47.55 s


_WINDOWS: dict = {}


def checkpoint_window(name_or_path: str, extras_name_or_path: str) -> int:
    """``transformer/config.json``'s sample_size, without loading weights; 1024 when it cannot be read (e.g. a
    hub id while offline). Only successful reads are remembered."""
    key = (name_or_path, extras_name_or_path)
    if key not in _WINDOWS:
        try:
            from diffusers import StableAudioDiTModel

            from toolkit.models.components.loading import resolve_source

            src = resolve_source(name_or_path, "transformer", extras_name_or_path, fetch=False)
            if src.single_file:  # a bare transformer file takes its config from the extras checkpoint
                src = resolve_source(extras_name_or_path, "transformer", fetch=False)
            kwargs = {"subfolder": src.subfolder} if src.subfolder else {}
            _WINDOWS[key] = int(StableAudioDiTModel.load_config(src.path, **kwargs)["sample_size"])
        except Exception:
            return WINDOW
    return _WINDOWS[key]


class StableAudioModel(BaseModel):
    arch = "stable_audio"
    modality = "audio"
    description = "Stable Audio Open 1.0 (sound effects and music up to 47 s, 44.1 kHz stereo)"
    hub_id = "stabilityai/stable-audio-open-1.0"  # not in AI Toolkit's UI: diffusers' StableAudioPipeline example
    pipeline_class = "StableAudioPipeline"
    # EDM-style cosine DPM-Solver++ on v-prediction: no other scheduler class continues its sigma table.
    sampler_kind, default_sampler = "own", "DPM++ 2M"
    components = {
        "transformer": Component("diffusers.StableAudioDiTModel", "transformer", source="main"),
        "projection_model": Component("diffusers.StableAudioProjectionModel", "projection_model"),
        "text_encoder": Component("transformers.T5EncoderModel", "text_encoder"),
        "tokenizer": Component("transformers.T5Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderOobleck", "vae"),
        # The checkpoint ships CosineDPMSolverMultistepScheduler (needs torchsde), not the annotated EDM one.
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # ComfyUI's StableAudio1 format has no RGB factors (and no scaling): clients draw a per-channel heatmap.
    latent = LatentSpec("BLC", 64, spatial_factor=1, temporal_factor=HOP, factors_source=None)
    divisibility = 1
    native_resolution = 0
    output_exts = ("wav", "flac", "mp3")
    defaults = dict(num_inference_steps=100, guidance_scale=7.0, duration_s=10.0, output_ext="wav")

    def window(self) -> int:
        """Latent frames the pipeline samples: the transformer's ``sample_size`` (1024 for Open 1.0, 256 for Open
        Small). The engine asks before loading (to announce the latent shape), so read the checkpoint's config."""
        if self.pipeline is not None:
            return int(self.pipeline.transformer.config.sample_size)
        cfg = self.model_config
        return checkpoint_window(cfg.name_or_path, cfg.extras_name_or_path)

    def sample_rate(self) -> int:
        return int(self.pipeline.vae.config.sampling_rate) if self.pipeline is not None else SAMPLE_RATE

    def max_duration_s(self) -> float:
        return self.window() * HOP / self.sample_rate()

    def decoded_seconds(self, gen) -> float:
        """The whole window, whatever the duration asked. Read without importing diffusers (the start frame's
        prediction runs on the server thread): the loaded config, else a window read before, else Open 1.0's."""
        cfg = self.model_config
        window = _WINDOWS.get((cfg.name_or_path, cfg.extras_name_or_path), WINDOW)
        return (self.window() if self.pipeline is not None else window) * HOP / self.sample_rate()

    def prepare_gen_config(self, gen):
        duration = float(gen.duration_s or self.defaults["duration_s"])
        # Longer than the window is impossible (the pipeline raises); clamp and report the clamped value.
        gen.duration_s = min(duration, math.floor(self.max_duration_s() * 100) / 100)

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or None,
            audio_start_in_s=0.0,
            audio_end_in_s=gen.duration_s,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            **gen.extra_kwargs,
        )

    def sample_media(self, pipeline, gen, generator):
        import warnings

        with warnings.catch_warnings():
            # torchsde's Brownian interval warns on each SDE step that float32 sigmas sit a hair outside
            # [sigma_min, sigma_max]; the real checkpoint does the same and sampling is unaffected.
            warnings.filterwarnings("ignore", message="Should have t", category=UserWarning, module=r"torchsde\.")
            output = pipeline(**self.pipeline_kwargs(gen), generator=generator, output_type="np")
        return self.to_media(output, gen)

    def unpack_latents(self, latents, gen):
        return latents.transpose(1, 2)  # (B, C, L) -> declared BLC

    def latent_shape(self, gen):
        return (1, self.window(), self.latent.channels)

    def to_media(self, output, gen):
        audio = output.audios[0]  # channels x samples, already cut to [start, end) by the pipeline
        audio = audio.float().cpu().numpy() if hasattr(audio, "cpu") else audio
        rate = self.sample_rate()
        return GeneratedMedia("audio", audio=audio[:, : int(round(gen.duration_s * rate))], sample_rate=rate)
