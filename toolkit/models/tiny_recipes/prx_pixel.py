"""Tiny PRXPixel (toolkit/models/archs/prx_pixel.py): the released transformer's pixel-space shape (RGB, 16x16
patches, a bottleneck patch projection, resolution embeddings) at small widths, a two-layer Qwen3-VL text tower,
and the flow-matching scheduler with the released shift of 3."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler, PRXPixelPipeline, PRXTransformer2DModel
    from transformers import Qwen3VLTextConfig, Qwen3VLTextModel

    tok = tiny_parts.qwen2_tokenizer()
    config = Qwen3VLTextConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=1024,
        # Qwen3-VL's interleaved multimodal rotary sections (summing to head_dim / 2); text positions only here
        rope_scaling={"rope_type": "default", "mrope_section": [2, 3, 3], "mrope_interleaved": True},
        pad_token_id=tok.pad_token_id,
    )
    tiny_parts.seeded()
    text_encoder = Qwen3VLTextModel(config).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    transformer = PRXTransformer2DModel(
        in_channels=3,
        patch_size=16,
        context_in_dim=32,  # == the text tower's hidden size
        hidden_size=32,
        mlp_ratio=2.0,
        num_heads=2,
        depth=1,
        axes_dim=[8, 8],  # sums to the head dim, 32 / 2
        bottleneck_size=16,
        resolution_embeds=True,
    ).eval()
    scheduler = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=3.0, use_dynamic_shifting=False)
    return PRXPixelPipeline(transformer=transformer, scheduler=scheduler, text_encoder=text_encoder, tokenizer=tok)
