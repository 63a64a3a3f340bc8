"""Tiny Krea 2: the real Qwen-Image VAE compression (8x, 16 channels, Wan 2.1 statistics) and 2x2 packing, a
one-block Krea 2 MMDiT with the release's twelve tapped text layers, and a two-layer Qwen3-VL text encoder.

The pipeline's taps (``text_encoder_select_layers``) are a pipeline setting saved in ``model_index.json``; the
tiny ones index a two-layer encoder (and a one-layer one, as the real-width CPU check builds it)."""

from toolkit.models.tiny_recipes import _parts as tiny_parts
from toolkit.models.tiny_recipes.qwen_image import WAN21_LATENTS_MEAN, WAN21_LATENTS_STD

SAMPLE = dict(width=64, height=64, output_ext="png")
TE_HIDDEN = 16
TAPS = (0, 1) * 6  # twelve taps, as many as the real transformer's num_text_layers


def qwen_image_vae():
    """8x spatial (three downsamples), 16 channels and the real Wan 2.1 statistics, narrow and shallow."""
    from diffusers import AutoencoderKLQwenImage

    tiny_parts.seeded()
    return AutoencoderKLQwenImage(
        base_dim=4,
        z_dim=16,
        dim_mult=[1, 1, 1, 1],
        num_res_blocks=0,
        temperal_downsample=[False, True, True],
        latents_mean=WAN21_LATENTS_MEAN,
        latents_std=WAN21_LATENTS_STD,
    ).eval()


def build_tiny(variant=None):
    """``variant="turbo"``: the same with ``is_distilled`` set in its model_index.json, as Krea-2-Turbo's."""
    from diffusers import FlowMatchEulerDiscreteScheduler, Krea2Pipeline, Krea2Transformer2DModel

    tok = tiny_parts.qwen2_tokenizer()
    te = tiny_parts.qwen3_vl(tok, TE_HIDDEN, layers=2)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = Krea2Transformer2DModel(
        in_channels=64,  # 16 VAE channels x 2x2 patches, as released
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=32,
        timestep_embed_dim=16,
        text_hidden_dim=TE_HIDDEN,
        num_text_layers=len(TAPS),
        text_num_attention_heads=2,
        text_num_key_value_heads=2,
        text_intermediate_size=16,
        num_layerwise_text_blocks=1,
        num_refiner_text_blocks=1,
        axes_dims_rope=(4, 6, 6),  # sums to the head width
    ).eval()
    # Krea2Pipeline's documented schedule: resolution-aware exponential shift between 256 and 6400 image tokens.
    sched = FlowMatchEulerDiscreteScheduler(
        use_dynamic_shifting=True, base_shift=0.5, max_shift=1.15, base_image_seq_len=256, max_image_seq_len=6400
    )
    return Krea2Pipeline(
        scheduler=sched,
        vae=qwen_image_vae(),
        text_encoder=te,
        tokenizer=tok,
        transformer=tr,
        text_encoder_select_layers=TAPS,
        is_distilled=variant == "turbo",
    )
