"""Tiny ACE-Step 1.5 (music with lyrics): the fixture of toolkit/models/archs/ace_step_15.py, random weights in the
real model's shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(duration_s=2.0, output_ext="wav")


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

    tok = tiny_parts.qwen2_tokenizer(model_max_length=256)
    common = dict(
        intermediate_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        rope_theta=10000.0,
        sliding_window=16,
    )
    acoustic = 64  # production latent width, so streamed shapes match the real model
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = AceStepTransformer1DModel(
        hidden_size=32,
        num_hidden_layers=2,
        in_channels=3 * acoustic,
        audio_acoustic_hidden_dim=acoustic,
        patch_size=2,
        **common,
    ).eval()
    tiny_parts.seeded()
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
    tiny_parts.seeded()
    ce = AceStepConditionEncoder(
        hidden_size=32,
        text_hidden_dim=32,
        timbre_hidden_dim=acoustic,
        num_lyric_encoder_hidden_layers=2,
        num_timbre_encoder_hidden_layers=2,
        **common,
    ).eval()
    tiny_parts.seeded()
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
    tiny_parts.seeded()
    ad = AceStepAudioTokenDetokenizer(
        hidden_size=32,
        audio_acoustic_hidden_dim=acoustic,
        pool_window_size=2,
        num_attention_pooler_hidden_layers=1,
        **common,
    ).eval()
    tiny_parts.seeded()
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
