"""Tiny Wan 2.1 image-to-video (14B, 480p / 720p): the fixture of toolkit/models/archs/wan21_i2v.py, random weights
in the real model's shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="webp")


def build_tiny(variant=None):
    from diffusers import AutoencoderKLWan, UniPCMultistepScheduler, WanImageToVideoPipeline, WanTransformer3DModel

    # Text encoder and VAE: the wan21 recipe, byte for byte (the real models share them).
    tok = tiny_parts.t5_tokenizer()
    te = tiny_parts.t5_text_encoder(tok, d_model=32, umt5=True)
    tiny_parts.seeded()
    vae = AutoencoderKLWan(
        base_dim=8, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True]
    ).eval()
    image_encoder, image_processor = tiny_parts.clip_vision_encoder(hidden=32)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    # in = 16 noise + 4 mask (4 frames folded per latent frame) + 16 image-condition channels, as in 14B I2V;
    # image_dim == CLIP hidden, added_kv_proj_dim == transformer inner dim (2 x 12).
    tr = WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=36,
        out_channels=16,
        text_dim=32,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        image_dim=32,
        added_kv_proj_dim=24,
        rope_max_seq_len=32,
    ).eval()
    sched = UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=3.0)
    return WanImageToVideoPipeline(
        tokenizer=tok,
        text_encoder=te,
        vae=vae,
        scheduler=sched,
        image_processor=image_processor,
        image_encoder=image_encoder,
        transformer=tr,
    )
