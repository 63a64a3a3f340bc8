"""Tiny Lumina-Image 2.0: the fixture of toolkit/models/archs/lumina2.py, random weights in the real model's
shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler, Lumina2Pipeline, Lumina2Transformer2DModel
    from transformers import Gemma2Config, Gemma2Model

    tok = tiny_parts.gemma_tokenizer(model_max_length=256)
    tiny_parts.seeded()
    te = Gemma2Model(
        Gemma2Config(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            max_position_embeddings=512,
            sliding_window=64,
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
        )
    ).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = Lumina2Transformer2DModel(
        sample_size=8,
        patch_size=2,
        in_channels=16,
        hidden_size=32,
        num_layers=1,
        num_refiner_layers=1,
        num_attention_heads=2,
        num_kv_heads=2,
        multiple_of=16,
        axes_dim_rope=(4, 6, 6),  # sum == head dim 16
        axes_lens=(300, 64, 64),
        cap_feat_dim=32,  # == Gemma-2 hidden size (hidden_states[-2] is used)
    ).eval()
    vae = tiny_parts.vae_kl(
        latent_channels=16,
        use_quant_conv=False,
        use_post_quant_conv=False,
        scaling_factor=0.3611,
        shift_factor=0.1159,
    )
    sched = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=6.0, use_dynamic_shifting=False)
    return Lumina2Pipeline(transformer=tr, scheduler=sched, vae=vae, text_encoder=te, tokenizer=tok)
