"""ACE-Step 1.5 text-to-music: 64-channel latents at 25 per second, channels last (B, L, C)."""

import math

from toolkit.media import GeneratedMedia
from toolkit.models import tiny
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class AceStep15Model(BaseModel):
    arch = "ace_step_15"
    modality = "audio"
    description = "ACE-Step 1.5 (music with lyrics)"
    takes_lyrics = True
    pipeline_class = "AceStepPipeline"
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
    tiny_sample = dict(duration_s=2.0, output_ext="wav")
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

    @staticmethod
    def build_tiny(variant=None):
        from diffusers import (
            AceStepAudioTokenDetokenizer,
            AceStepAudioTokenizer,
            AceStepConditionEncoder,
            AceStepPipeline,
            AceStepTransformer1DModel,
            AutoencoderOobleck,
            FlowMatchEulerDiscreteScheduler,
        )
        from transformers import Qwen3Config, Qwen3Model

        tok = tiny.qwen2_tokenizer(model_max_length=256)
        common = dict(
            intermediate_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=8,
            rope_theta=10000.0,
            sliding_window=16,
        )
        acoustic = 64  # production latent width, so streamed shapes match the real model
        tiny.seeded(tiny.variant_seed(variant))
        tr = AceStepTransformer1DModel(
            hidden_size=32,
            num_hidden_layers=2,
            in_channels=3 * acoustic,
            audio_acoustic_hidden_dim=acoustic,
            patch_size=2,
            **common,
        ).eval()
        tiny.seeded()
        te = Qwen3Model(
            Qwen3Config(
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                head_dim=8,
                vocab_size=len(tok),
                max_position_embeddings=512,
            )
        ).eval()
        tiny.seeded()
        ce = AceStepConditionEncoder(
            hidden_size=32,
            text_hidden_dim=32,
            timbre_hidden_dim=acoustic,
            num_lyric_encoder_hidden_layers=2,
            num_timbre_encoder_hidden_layers=2,
            **common,
        ).eval()
        tiny.seeded()
        at = AceStepAudioTokenizer(
            hidden_size=32,
            audio_acoustic_hidden_dim=acoustic,
            pool_window_size=2,
            fsq_dim=32,
            fsq_input_levels=[4, 4, 4],
            fsq_input_num_quantizers=1,
            num_attention_pooler_hidden_layers=1,
            **common,
        ).eval()
        tiny.seeded()
        ad = AceStepAudioTokenDetokenizer(
            hidden_size=32,
            audio_acoustic_hidden_dim=acoustic,
            pool_window_size=2,
            num_attention_pooler_hidden_layers=1,
            **common,
        ).eval()
        tiny.seeded()
        # Production hop 2*4*4*6*10 = 1920 samples at 48 kHz: 25 latent frames per second.
        vae = AutoencoderOobleck(
            encoder_hidden_size=8,
            downsampling_ratios=[2, 4, 4, 6, 10],
            decoder_channels=8,
            decoder_input_channels=acoustic,
            audio_channels=2,
            channel_multiples=[1] * 5,
            sampling_rate=48000,
        ).eval()
        sched = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1, shift=1.0)
        return AceStepPipeline(
            vae=vae,
            text_encoder=te,
            tokenizer=tok,
            transformer=tr,
            condition_encoder=ce,
            scheduler=sched,
            audio_tokenizer=at,
            audio_token_detokenizer=ad,
        )
