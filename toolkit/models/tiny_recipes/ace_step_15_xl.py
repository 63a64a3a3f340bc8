"""Tiny ACE-Step 1.5 XL: ace_step_15's tiny pipeline with its DiT rebuilt the XL way, wider than the condition
encoder that feeds it (``encoder_hidden_size`` 32 into ``hidden_size`` 48, as 2048 into 2560 in the real model),
and with more attention width than hidden width (8 heads x 8 = 64, as 32 x 128 = 4096 over 2560)."""

from toolkit.models import tiny
from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(duration_s=2.0, output_ext="wav")


def build_tiny(variant=None):
    from diffusers import AceStepPipeline, AceStepTransformer1DModel

    base = tiny.recipe_builder("ace_step_15")(None)
    encoder_width = base.condition_encoder.config.hidden_size
    acoustic = base.transformer.config.audio_acoustic_hidden_dim  # 64: the real latent width
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    transformer = AceStepTransformer1DModel(
        hidden_size=encoder_width + 16,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=8,
        in_channels=3 * acoustic,
        audio_acoustic_hidden_dim=acoustic,
        patch_size=2,
        rope_theta=10000.0,
        sliding_window=16,
        encoder_hidden_size=encoder_width,
        is_turbo=False,
    ).eval()
    return AceStepPipeline(**dict(base.components, transformer=transformer))
