"""Tiny HunyuanVideo 1.5 (8.3B text-to-video, 480p/720p): the fixture of toolkit/models/archs/hunyuan_video15.py,
random weights in the real model's shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="webp")


def build_tiny(variant=None):
    from diffusers import (
        AutoencoderKLHunyuanVideo15,
        ClassifierFreeGuidance,
        FlowMatchEulerDiscreteScheduler,
        HunyuanVideo15Pipeline,
        HunyuanVideo15Transformer3DModel,
    )
    from transformers import ByT5Tokenizer, Qwen2_5_VLTextConfig, Qwen2_5_VLTextModel

    tok = tiny_parts.qwen2_tokenizer(model_max_length=2048)
    tiny_parts.seeded()
    # The pipeline reads the third-last hidden state: 3 layers at least.
    te = Qwen2_5_VLTextModel(
        Qwen2_5_VLTextConfig(
            hidden_size=16,
            intermediate_size=16,
            num_hidden_layers=3,
            num_attention_heads=2,
            num_key_value_heads=2,
            vocab_size=len(tok),
            rope_theta=1e6,
            max_position_embeddings=2048,
            pad_token_id=tok.pad_token_id,
            rope_scaling={"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"},
        )
    ).eval()
    tok2 = ByT5Tokenizer()
    te2 = tiny_parts.t5_text_encoder(tok2, d_model=32)
    tiny_parts.seeded()
    vae = AutoencoderKLHunyuanVideo15(
        latent_channels=32,
        block_out_channels=(16, 16, 32, 64, 64),
        layers_per_block=1,
        spatial_compression_ratio=16,
        temporal_compression_ratio=4,
    ).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = HunyuanVideo15Transformer3DModel(
        in_channels=65,
        out_channels=32,
        num_attention_heads=2,
        attention_head_dim=8,
        num_layers=1,
        num_refiner_layers=1,
        mlp_ratio=2.0,
        text_embed_dim=16,
        text_embed_2_dim=32,
        image_embed_dim=12,
        rope_axes_dim=(2, 2, 4),
        target_size=16,
        task_type="t2v",
    ).eval()
    return HunyuanVideo15Pipeline(
        text_encoder=te,
        tokenizer=tok,
        transformer=tr,
        vae=vae,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=5.0),
        text_encoder_2=te2,
        tokenizer_2=tok2,
        guider=ClassifierFreeGuidance(guidance_scale=6.0),
    )
