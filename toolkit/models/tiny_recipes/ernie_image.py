"""Tiny ERNIE-Image: the real 32-channel Flux.2 VAE compression (8x, then 2x2 patches into 128 channels) with
BatchNorm statistics that are not the identity, a one-layer ERNIE DiT and a two-layer Mistral3 text encoder
(the pipeline reads its ``hidden_states[-2]``)."""

from toolkit.models.tiny_recipes import _parts as tiny_parts
from toolkit.models.tiny_recipes._flux2 import flux2_vae

SAMPLE = dict(width=64, height=64, output_ext="png")
TE_HIDDEN = 16


def mistral3_model(tok, hidden: int = TE_HIDDEN, layers: int = 2):
    """``Mistral3Model`` (the class ERNIE-Image's text_encoder/config.json names): text stack plus a Pixtral vision
    tower that text prompts never run."""
    from transformers import Mistral3Config, Mistral3Model

    cfg = Mistral3Config(
        text_config=dict(
            model_type="ministral3",  # as the release's text_config names it
            vocab_size=len(tok),
            hidden_size=hidden,
            intermediate_size=hidden * 2,
            num_hidden_layers=layers,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=hidden // 2,
            # Ministral-3's YaRN rope and llama-4 attention scaling, as the class defaults (the release's values)
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        ),
        vision_config=dict(
            model_type="pixtral",
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            head_dim=8,
            image_size=32,
            patch_size=16,
        ),
        image_token_index=tok.convert_tokens_to_ids("[IMG]"),
        spatial_merge_size=2,
    )
    tiny_parts.seeded()
    return Mistral3Model(cfg).eval()


def build_tiny(variant=None):
    from diffusers import ErnieImagePipeline, ErnieImageTransformer2DModel, FlowMatchEulerDiscreteScheduler

    tok = tiny_parts.mistral_text_processor().tokenizer
    te = mistral3_model(tok)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = ErnieImageTransformer2DModel(
        hidden_size=32,
        num_attention_heads=2,
        num_layers=1,
        ffn_hidden_size=64,
        in_channels=128,  # 32 VAE channels x 2x2 patches, as released
        out_channels=128,
        patch_size=1,
        text_in_dim=TE_HIDDEN,
        rope_theta=256,
        rope_axes_dim=(4, 6, 6),  # sums to the head width (32 / 2)
    ).eval()
    tiny_parts.drawn_where_zero(tr)  # adaLN and the final projection start at zero: the tiny DiT would output zero
    # AI Toolkit's ErnieImageModel scheduler config: a static shift of 3 (ComfyUI's ErnieImage samples with 3.0).
    sched = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=3.0, use_dynamic_shifting=False)
    return ErnieImagePipeline(transformer=tr, vae=flux2_vae(), text_encoder=te, tokenizer=tok, scheduler=sched)
