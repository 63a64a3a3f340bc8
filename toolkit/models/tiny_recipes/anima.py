"""Tiny Anima: a one-block Cosmos-Predict2 DiT (16 latent channels, 1x2x2 patches, padding-mask channel), a
one-block LLM-adapter text conditioner (Qwen3 hidden states cross-attended from T5 token embeddings), a two-layer
Qwen3 text encoder, the Qwen and T5 tokenizers, and the real Qwen-Image VAE compression (8x, Wan 2.1 statistics).

Anima ships as a modular pipeline only (AnimaAutoBlocks); saved, it is a folder of component subfolders with a
``modular_model_index.json``, which is how the release is laid out too."""

from toolkit.models.tiny_recipes import _parts as tiny_parts
from toolkit.models.tiny_recipes.krea2 import qwen_image_vae

SAMPLE = dict(width=64, height=64, output_ext="png")
TE_HIDDEN = 16
TEXT_EMBED_DIM = 32  # the conditioner's output width = the DiT's text_embed_dim (1024 in the release)


def build_tiny(variant=None):
    from diffusers import (
        AnimaAutoBlocks,
        AnimaTextConditioner,
        CosmosTransformer3DModel,
        FlowMatchEulerDiscreteScheduler,
    )

    tok = tiny_parts.qwen2_tokenizer()
    te = tiny_parts.qwen3_text_encoder(tok, hidden=TE_HIDDEN)
    t5_tok = tiny_parts.t5_tokenizer()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    conditioner = AnimaTextConditioner(
        source_dim=TE_HIDDEN,
        target_dim=TEXT_EMBED_DIM,
        model_dim=TEXT_EMBED_DIM,
        num_layers=1,
        num_attention_heads=2,
        target_vocab_size=len(t5_tok),
        min_sequence_length=512,  # as released: the conditioned text is padded to 512 tokens
    ).eval()
    transformer = CosmosTransformer3DModel(
        in_channels=16,
        out_channels=16,
        num_attention_heads=2,
        attention_head_dim=16,
        num_layers=1,
        mlp_ratio=2.0,
        text_embed_dim=TEXT_EMBED_DIM,
        adaln_lora_dim=8,
        max_size=(128, 240, 240),
        patch_size=(1, 2, 2),
        rope_scale=(1.0, 4.0, 4.0),
        concat_padding_mask=True,
        extra_pos_embed_type=None,
    ).eval()
    pipe = AnimaAutoBlocks().init_pipeline()
    pipe.update_components(
        text_encoder=te,
        tokenizer=tok,
        t5_tokenizer=t5_tok,
        text_conditioner=conditioner,
        transformer=transformer,
        vae=qwen_image_vae(),
        # diffusers' scripts/convert_anima_to_diffusers.py writes this scheduler (ComfyUI samples Anima at shift 3)
        scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0),
    )
    return pipe
