"""Tiny HunyuanVideo 1.0: the fixture of toolkit/models/archs/hunyuan_video.py, random weights in the real
model's shapes, and a tokenizer built so that the pipeline's prompt template crops where it does for the real one."""

import re

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="webp")

# The pipeline's default prompt template drops its first 95 tokens (crop_start, counted with the real Llama 3
# tokenizer). The tiny tokenizer is built so that the same template prefix is exactly 95 tokens too.
TEMPLATE_PREFIX_TOKENS = 95


def tokenizer():
    """Byte-level Llama 3 style tokenizer whose words make the default template prefix 95 tokens long."""
    from diffusers.pipelines.hunyuan_video.pipeline_hunyuan_video import DEFAULT_PROMPT_TEMPLATE

    prefix = DEFAULT_PROMPT_TEMPLATE["template"].split("{}")[0]
    text = re.sub(r"<\|[a-z_]+\|>", "|", prefix)
    pieces = re.findall(r" ?[A-Za-z]+|\n\n", text)
    words = sorted(set(pieces), key=lambda w: (-len(w), w))
    once = [w for w in words if pieces.count(w) == 1]  # shortening these adds exactly one token each
    while True:
        tok = tiny_parts.llama3_tokenizer(words)
        count = len(tok(prefix).input_ids)
        if count >= TEMPLATE_PREFIX_TOKENS or not once:
            break
        word = once.pop(0)
        words[words.index(word)] = word[:-1]  # leave its last letter unmerged
    if count != TEMPLATE_PREFIX_TOKENS:
        raise RuntimeError(f"tiny HunyuanVideo tokenizer: template prefix is {count} tokens, not 95")
    return tok


def build_tiny(variant=None):
    from diffusers import (
        AutoencoderKLHunyuanVideo,
        FlowMatchEulerDiscreteScheduler,
        HunyuanVideoPipeline,
        HunyuanVideoTransformer3DModel,
    )
    from transformers import LlamaConfig, LlamaModel

    tok = tokenizer()
    tiny_parts.seeded()
    # The pipeline reads hidden_states[-3]: two layers give the embeddings, which is enough for plumbing.
    te = LlamaModel(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=8,
            max_position_embeddings=1024,
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
        )
    ).eval()
    tok2 = tiny_parts.clip_tokenizer()
    te2 = tiny_parts.clip_text_encoder(tok2, hidden=32)  # the same tiny CLIP-L as sd1/flux
    tiny_parts.seeded()
    # Four blocks: 8x spatial, 4x temporal, 16 latent channels as in production.
    vae = AutoencoderKLHunyuanVideo(
        latent_channels=16,
        block_out_channels=(8, 8, 8, 8),
        layers_per_block=1,
        norm_num_groups=4,
        mid_block_add_attention=False,
        scaling_factor=0.476986,
    ).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    # text_embed_dim == Llama hidden, pooled_projection_dim == CLIP hidden, sum(rope_axes_dim) == head dim.
    tr = HunyuanVideoTransformer3DModel(
        in_channels=16,
        out_channels=16,
        num_attention_heads=2,
        attention_head_dim=8,
        num_layers=1,
        num_single_layers=1,
        num_refiner_layers=1,
        patch_size=2,
        patch_size_t=1,
        text_embed_dim=16,
        pooled_projection_dim=32,
        rope_axes_dim=(2, 2, 4),
        guidance_embeds=True,
    ).eval()
    sched = FlowMatchEulerDiscreteScheduler(shift=7.0)  # what the community diffusers repo ships
    return HunyuanVideoPipeline(
        text_encoder=te,
        tokenizer=tok,
        transformer=tr,
        vae=vae,
        scheduler=sched,
        text_encoder_2=te2,
        tokenizer_2=tok2,
    )
