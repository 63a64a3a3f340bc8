"""Tiny FLUX.2 [dev]: the fixture of toolkit/models/archs/flux2.py, random weights in the real model's shapes, on
the 32-channel VAE the Klein recipes build too (_flux2.py)."""

from toolkit.models.tiny_recipes import _parts as tiny_parts
from toolkit.models.tiny_recipes._flux2 import flux2_vae

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler, Flux2Pipeline, Flux2Transformer2DModel

    processor = tiny_parts.mistral_text_processor()
    te = tiny_parts.mistral3_text_encoder(processor.tokenizer, hidden=16)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = Flux2Transformer2DModel(
        patch_size=1,
        in_channels=128,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=48,  # three stacked Mistral layers x hidden 16
        timestep_guidance_channels=256,
        axes_dims_rope=(4, 4, 4, 4),
        guidance_embeds=True,
    ).eval()
    sched = FlowMatchEulerDiscreteScheduler(
        shift=3.0,
        use_dynamic_shifting=True,
        base_shift=0.5,
        max_shift=1.15,
        base_image_seq_len=256,
        max_image_seq_len=4096,
    )
    return Flux2Pipeline(scheduler=sched, vae=flux2_vae(), text_encoder=te, tokenizer=processor, transformer=tr)
