"""Tiny LTX-Video 0.9.x (real-time text-to-video): the fixture of toolkit/models/archs/ltx.py, random weights in the
real model's shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="webp")


def build_tiny(variant=None):
    from diffusers import (
        AutoencoderKLLTXVideo,
        FlowMatchEulerDiscreteScheduler,
        LTXPipeline,
        LTXVideoTransformer3DModel,
    )

    tok = tiny_parts.t5_tokenizer(model_max_length=128)
    te = tiny_parts.t5_text_encoder(tok, d_model=32)
    tiny_parts.seeded()
    # Production compression with tiny widths: patch 4 x 2^3 = 32x spatial, 2^3 = 8x temporal; 128 latent
    # channels as in the real VAE.
    vae = AutoencoderKLLTXVideo(
        in_channels=3,
        out_channels=3,
        latent_channels=128,
        block_out_channels=(8, 8, 8, 8),
        decoder_block_out_channels=(8, 8, 8, 8),
        layers_per_block=(1, 1, 1, 1, 1),
        decoder_layers_per_block=(1, 1, 1, 1, 1),
        spatio_temporal_scaling=(True, True, True, False),
        decoder_spatio_temporal_scaling=(True, True, True, False),
        decoder_inject_noise=(False,) * 5,
        upsample_residual=(False,) * 4,
        upsample_factor=(1,) * 4,
        timestep_conditioning=False,
        patch_size=4,
        patch_size_t=1,
        encoder_causal=True,
        decoder_causal=False,
    ).eval()
    vae.use_framewise_encoding = False
    vae.use_framewise_decoding = False
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = LTXVideoTransformer3DModel(
        in_channels=128,
        out_channels=128,
        patch_size=1,
        patch_size_t=1,
        num_attention_heads=4,
        attention_head_dim=8,
        cross_attention_dim=32,
        num_layers=1,
        caption_channels=32,
    ).eval()  # caption_channels == T5 d_model
    sched = FlowMatchEulerDiscreteScheduler(
        use_dynamic_shifting=True, base_shift=0.95, max_shift=2.05, base_image_seq_len=1024, max_image_seq_len=4096
    )
    return LTXPipeline(scheduler=sched, vae=vae, text_encoder=te, tokenizer=tok, transformer=tr)
