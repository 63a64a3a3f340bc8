"""Tiny Wan 2.2 A14B text-to-video: the fixture of toolkit/models/archs/wan22_14b.py, two tiny experts on the wan21
recipe's text encoder and VAE. ``wan_expert`` and ``wan21_shared`` serve the image-to-video recipe too."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="webp")


def wan_expert(variant, expert: int, in_channels: int = 16):
    """A tiny Wan transformer; the two experts of one checkpoint differ by seed, and so do variants."""
    from diffusers import WanTransformer3DModel

    tiny_parts.seeded(tiny_parts.variant_seed(variant) + expert)
    return WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=in_channels,
        out_channels=16,
        text_dim=32,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32,
    ).eval()


def wan21_shared():
    """UMT5 tokenizer + encoder and the 16-channel VAE, built exactly as wan21's recipe builds them."""
    from diffusers import AutoencoderKLWan

    tok = tiny_parts.t5_tokenizer()
    te = tiny_parts.t5_text_encoder(tok, d_model=32, umt5=True)
    tiny_parts.seeded()
    vae = AutoencoderKLWan(
        base_dim=8, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True]
    ).eval()
    return tok, te, vae


def build_tiny(variant=None):
    from diffusers import UniPCMultistepScheduler, WanPipeline

    tok, te, vae = wan21_shared()
    sched = UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=12.0)
    return WanPipeline(
        tokenizer=tok,
        text_encoder=te,
        vae=vae,
        scheduler=sched,
        transformer=wan_expert(variant, 0),
        transformer_2=wan_expert(variant, 1),
        boundary_ratio=0.875,
        expand_timesteps=False,
    )
