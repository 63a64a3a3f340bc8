"""Tiny Stable Audio Open 1.0: the fixture of toolkit/models/archs/stable_audio.py, random weights in the real
model's shapes."""

from toolkit.models.archs.stable_audio import SAMPLE_RATE
from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(duration_s=2.0, output_ext="wav")


def build_tiny(variant=None):
    from diffusers import (
        AutoencoderOobleck,
        CosineDPMSolverMultistepScheduler,
        StableAudioDiTModel,
        StableAudioPipeline,
        StableAudioProjectionModel,
    )

    tok = tiny_parts.t5_tokenizer(model_max_length=128)
    te = tiny_parts.t5_text_encoder(tok, d_model=32)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    # Production latent width (64) and hop; a 48-frame window (2.2 s) instead of 1024 keeps it fast.
    # global_states_input_dim = 2 x conditioning_dim (seconds start + end); cross_attention_input_dim =
    # conditioning_dim.
    tr = StableAudioDiTModel(
        sample_size=48,
        in_channels=64,
        out_channels=64,
        num_layers=2,
        attention_head_dim=8,
        num_attention_heads=2,
        num_key_value_attention_heads=1,
        cross_attention_dim=16,
        time_proj_dim=16,
        global_states_input_dim=32,
        cross_attention_input_dim=16,
    ).eval()
    tiny_parts.seeded()
    vae = AutoencoderOobleck(
        encoder_hidden_size=8,
        downsampling_ratios=[2, 4, 4, 8, 8],
        decoder_channels=8,
        decoder_input_channels=64,
        audio_channels=2,
        channel_multiples=[1] * 5,
        sampling_rate=SAMPLE_RATE,
    ).eval()
    tiny_parts.seeded()
    proj = StableAudioProjectionModel(text_encoder_dim=32, conditioning_dim=16, min_value=0, max_value=512).eval()
    # The real checkpoint's scheduler_config.json.
    sched = CosineDPMSolverMultistepScheduler(
        sigma_min=0.3,
        sigma_max=500,
        sigma_data=1.0,
        sigma_schedule="exponential",
        solver_order=2,
        prediction_type="v_prediction",
        rho=7.0,
        final_sigmas_type="zero",
    )
    return StableAudioPipeline(
        vae=vae, text_encoder=te, projection_model=proj, tokenizer=tok, transformer=tr, scheduler=sched
    )
