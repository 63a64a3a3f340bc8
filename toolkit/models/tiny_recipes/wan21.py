"""Tiny Wan 2.1 text-to-video (1.3B / 14B): the fixture of toolkit/models/archs/wan21.py, random weights in the real
model's shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="webp")


def build_tiny(variant=None):
    from diffusers import AutoencoderKLWan, UniPCMultistepScheduler, WanPipeline, WanTransformer3DModel

    tok = tiny_parts.t5_tokenizer()
    te = tiny_parts.t5_text_encoder(tok, d_model=32, umt5=True)
    tiny_parts.seeded()
    vae = AutoencoderKLWan(
        base_dim=8, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True]
    ).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=16,
        out_channels=16,
        text_dim=32,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32,
    ).eval()  # text_dim == UMT5 d_model
    # What the real Wan repos ship, rather than the pipeline's annotated FlowMatchEuler.
    sched = UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=3.0)
    return WanPipeline(tokenizer=tok, text_encoder=te, vae=vae, scheduler=sched, transformer=tr)
