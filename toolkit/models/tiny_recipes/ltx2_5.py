"""Tiny LTX-2.5: ltx2.3's tiny pipeline prompted through a tiny Gemma 4 (``Gemma4UnifiedForConditionalGeneration``:
sliding and full-attention layers, key = value on the full ones), with the 2.5 transformer (no
video feed-forward bias, a keyframe position embedding), laid out as Lightricks/LTX-2.5-Diffusers is: the full
DiT in ``transformer_full/`` beside a distilled stand-in in ``transformer/`` (another seed), and the scheduler
configured for distilled sigmas (no dynamic shifting, no terminal shift), which the family turns back on."""

import os

from toolkit.models import tiny
from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="mp4")


def gemma4_text_encoder(tok, hidden: int, layers: int):
    from transformers import Gemma4UnifiedConfig, Gemma4UnifiedForConditionalGeneration

    config = Gemma4UnifiedConfig(
        text_config=dict(
            vocab_size=len(tok),
            vocab_size_per_layer_input=len(tok),
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=2,
            num_key_value_heads=1,
            # The full-attention layers' head width too: a per-layer override here would outlive the real config's
            # (testing/bench/real_build.py merges the two key by key).
            head_dim=8,
            global_head_dim=8,
            attention_k_eq_v=True,
            max_position_embeddings=1024,
            sliding_window=64,
            layer_types=["sliding_attention"] * (layers - 1) + ["full_attention"],
        ),
        vision_config=dict(mm_embed_dim=hidden, output_proj_dims=hidden, mm_posemb_size=16, num_soft_tokens=4),
        audio_config=dict(hidden_size=16, audio_embed_dim=16, output_proj_dims=16),
        boi_token_id=tok.convert_tokens_to_ids("<start_of_image>"),
        eoi_token_id=tok.convert_tokens_to_ids("<end_of_image>"),
        image_token_id=tok.convert_tokens_to_ids("<image_soft_token>"),
    )
    tiny_parts.seeded()
    return Gemma4UnifiedForConditionalGeneration(config).eval()


def transformer_25(base, seed: int):
    from diffusers import LTX2VideoTransformer3DModel

    tiny_parts.seeded(seed)
    return LTX2VideoTransformer3DModel.from_config(
        dict(base.transformer.config, ff_bias=False, use_keyframes_abs_pos_embedding=True)
    ).eval()


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler

    base = tiny.recipe_builder("ltx2.3")(None)
    gemma = base.text_encoder.config.text_config  # the connectors' caption width and stacked-state count
    text_encoder = gemma4_text_encoder(base.tokenizer, gemma.hidden_size, gemma.num_hidden_layers)
    full = transformer_25(base, tiny_parts.variant_seed(variant))
    distilled = transformer_25(base, tiny_parts.variant_seed(variant) + 1)
    scheduler = FlowMatchEulerDiscreteScheduler.from_config(
        base.scheduler.config, use_dynamic_shifting=False, shift_terminal=None
    )
    pipe = type(base)(**dict(base.components, text_encoder=text_encoder, transformer=distilled, scheduler=scheduler))
    save_pipeline = pipe.save_pretrained

    def save_pretrained(folder, **kwargs):
        """The pipeline's folders, plus ``transformer_full/``, which (as in the published folder) no
        model_index entry names, so the pipeline's own save leaves it out."""
        save_pipeline(folder, **kwargs)
        full.save_pretrained(os.path.join(folder, "transformer_full"), **kwargs)

    pipe.save_pretrained = save_pretrained
    return pipe
