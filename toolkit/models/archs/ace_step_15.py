"""ACE-Step 1.5 text-to-music: 64-channel latents at 25 per second, channels last (B, L, C)."""

import math

from toolkit.media import GeneratedMedia
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class AceStep15Model(BaseModel):
    arch = "ace_step_15"
    modality = "audio"
    description = "ACE-Step 1.5 (music with lyrics)"
    # No hub id: AI Toolkit's UI offers a ComfyUI single file inside a repo
    # (ostris/ace_step_1.5_ComfyUI_files/ace_step_1.5_base_aio.safetensors), no org/name checkpoint the engine loads,
    # and ACE-Step publishes diffusers folders of the XL models only. The picker leaves the Model field to the user.
    hub_id = ""
    takes_lyrics = True
    pipeline_class = "AceStepPipeline"
    # Its loop steps its own sigma table once per step and indexes it itself: only flow Euler keeps in step.
    sampler_names = ("Euler",)
    components = {
        "transformer": Component("diffusers.AceStepTransformer1DModel", "transformer", source="main"),
        "condition_encoder": Component("diffusers.AceStepConditionEncoder", "condition_encoder"),
        "text_encoder": Component("transformers.Qwen3Model", "text_encoder"),
        "tokenizer": Component("transformers.Qwen2Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderOobleck", "vae"),
        "audio_tokenizer": Component("diffusers.AceStepAudioTokenizer", "audio_tokenizer"),
        "audio_token_detokenizer": Component("diffusers.AceStepAudioTokenDetokenizer", "audio_token_detokenizer"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # ComfyUI's ACEAudio15 format has no RGB factors: clients draw a per-channel heatmap.
    latent = LatentSpec("BLC", 64, spatial_factor=1, temporal_factor=1920, factors_source=None)
    divisibility = 1
    native_resolution = 0
    output_exts = ("mp3", "wav", "flac")
    defaults = dict(num_inference_steps=8, guidance_scale=7.0, duration_s=30.0, output_ext="mp3")
    latents_per_second = 25.0  # 48 kHz / 1920-sample hop

    def prepare_gen_config(self, gen):
        gen.duration_s = float(gen.duration_s or self.defaults["duration_s"])

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            lyrics=gen.lyrics or "",
            audio_duration=gen.duration_s,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            **gen.extra_kwargs,
        )

    def latent_shape(self, gen):
        return (1, math.ceil(gen.duration_s * self.latents_per_second), self.latent.channels)

    def to_media(self, output, gen):
        audio = output.audios[0]
        audio = audio.float().cpu().numpy() if hasattr(audio, "cpu") else audio
        return GeneratedMedia("audio", audio=audio, sample_rate=self.pipeline.sample_rate)
