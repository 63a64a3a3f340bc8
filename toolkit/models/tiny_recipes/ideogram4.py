"""Tiny Ideogram 4: the real FLUX.2-style VAE compression (8x, 32 channels, 2x2 patches into 128) with BatchNorm
statistics that are not the identity, two one-block DiTs (the conditional one and the asymmetric-CFG unconditional
one, as released), and a 36-layer Qwen3-VL text encoder (the pipeline taps its layers 0, 3, ..., 33, 35)."""

from toolkit.models import tiny
from toolkit.models.tiny_recipes._flux2 import flux2_vae
from toolkit.models.tiny_recipes.nucleus_image import QWEN3_VL_TEXT_TEMPLATE

SAMPLE = dict(width=64, height=64, output_ext="png")
TE_HIDDEN = 16
TAPS = 13  # len(QWEN3_VL_ACTIVATION_LAYERS): the text features are 13 hidden states side by side


def qwen3_vl_model(tok, hidden: int = TE_HIDDEN, layers: int = 36):
    """``Qwen3VLModel`` as Ideogram 4 loads Qwen3-VL-8B-Instruct (the pipeline runs its language model's layers)."""
    from transformers import Qwen3VLConfig, Qwen3VLModel

    ids = {t: tok.convert_tokens_to_ids(t) for t in ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>")}
    cfg = Qwen3VLConfig(
        text_config=dict(
            vocab_size=len(tok),
            hidden_size=hidden,
            intermediate_size=hidden * 2,
            num_hidden_layers=layers,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=hidden // 2,
            rope_parameters=dict(
                rope_type="default", rope_theta=5000000.0, mrope_section=[2, 1, 1], mrope_interleaved=True
            ),
            pad_token_id=tok.pad_token_id,
        ),
        vision_config=dict(
            depth=1,
            hidden_size=16,
            intermediate_size=16,
            num_heads=2,
            out_hidden_size=hidden,
            deepstack_visual_indexes=[0],
        ),
        image_token_id=ids["<|image_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    tiny.seeded()
    return Qwen3VLModel(cfg).eval()


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler, Ideogram4Pipeline, Ideogram4Transformer2DModel

    tok = tiny.qwen2_tokenizer(model_max_length=4096)
    tok.chat_template = QWEN3_VL_TEXT_TEMPLATE  # the pipeline sends structured content, as Qwen3-VL's template reads
    te = qwen3_vl_model(tok)
    transformer_config = dict(
        in_channels=128,  # 32 VAE channels x 2x2 patches, as released
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        intermediate_size=64,
        adaln_dim=16,
        llm_features_dim=TAPS * TE_HIDDEN,
        rope_theta=5_000_000,
        mrope_section=(4, 2, 2),  # half the head width; interleaved, so 3 x each of h and w fits in it
    )
    tiny.seeded(tiny.variant_seed(variant))
    tr = Ideogram4Transformer2DModel(**transformer_config).eval()
    tiny.seeded(tiny.variant_seed(variant) + 1)  # the unconditional branch is another network, not a copy
    uncond = Ideogram4Transformer2DModel(**transformer_config).eval()
    # The pipeline sets its own logit-normal sigmas; shift 1 leaves them as they are.
    sched = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=1.0, use_dynamic_shifting=False)
    return Ideogram4Pipeline(
        scheduler=sched,
        vae=flux2_vae(),
        text_encoder=te,
        tokenizer=tok,
        transformer=tr,
        unconditional_transformer=uncond,
    )
