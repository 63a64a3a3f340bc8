"""Tiny Wan 2.2 TI2V-5B (text or image to video, 720p): the fixture of toolkit/models/archs/wan22_5b.py, random
weights in the real model's shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="webp")


def build_tiny(variant=None):
    from diffusers import AutoencoderKLWan, UniPCMultistepScheduler, WanPipeline, WanTransformer3DModel

    # Same UMT5 recipe as wan21: the real models share the text encoder, so the tiny ones do too.
    tok = tiny_parts.t5_tokenizer()
    te = tiny_parts.t5_text_encoder(tok, d_model=32, umt5=True)
    tiny_parts.seeded()
    # Production layout: residual VAE, 48 latent channels, patch 2 on 12 = 3 x 2 x 2 pixel channels -> 16x.
    vae = AutoencoderKLWan(
        base_dim=8,
        z_dim=48,
        in_channels=12,
        out_channels=12,
        is_residual=True,
        patch_size=2,
        latents_mean=[0.0] * 48,
        latents_std=[1.0] * 48,
        dim_mult=[1, 1, 1, 1],
        num_res_blocks=1,
        scale_factor_spatial=16,
        scale_factor_temporal=4,
        temperal_downsample=[False, True, True],
    ).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=48,
        out_channels=48,
        text_dim=32,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32,
    ).eval()
    sched = UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=5.0)
    return WanPipeline(
        tokenizer=tok,
        text_encoder=te,
        vae=vae,
        scheduler=sched,
        transformer=tr,
        transformer_2=None,
        boundary_ratio=None,
        expand_timesteps=True,
    )
