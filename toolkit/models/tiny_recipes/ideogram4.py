"""Tiny Ideogram 4: the real FLUX.2-style VAE compression (8x, 32 channels, 2x2 patches into 128) with BatchNorm
statistics that are not the identity, two one-block DiTs (the conditional one and the asymmetric-CFG unconditional
one, as released), and a 36-layer Qwen3-VL text encoder (the pipeline taps its layers 0, 3, ..., 33, 35)."""

from toolkit.models.tiny_recipes import _parts as tiny_parts
from toolkit.models.tiny_recipes._flux2 import flux2_vae
from toolkit.models.tiny_recipes.nucleus_image import QWEN3_VL_TEXT_TEMPLATE

SAMPLE = dict(width=64, height=64, output_ext="png")
TE_HIDDEN = 16
TAPS = 13  # len(QWEN3_VL_ACTIVATION_LAYERS): the text features are 13 hidden states side by side


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler, Ideogram4Pipeline, Ideogram4Transformer2DModel

    tok = tiny_parts.qwen2_tokenizer(model_max_length=4096)
    tok.chat_template = QWEN3_VL_TEXT_TEMPLATE  # the pipeline sends structured content, as Qwen3-VL's template reads
    te = tiny_parts.qwen3_vl(tok, TE_HIDDEN, layers=36, kv_heads=1)
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
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = Ideogram4Transformer2DModel(**transformer_config).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant) + 1)  # the unconditional branch is another network, not a copy
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
