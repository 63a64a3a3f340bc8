"""Tiny Z-Image (Turbo / base): the fixture of toolkit/models/archs/zimage.py, random weights in the real model's
shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler, ZImagePipeline, ZImageTransformer2DModel

    tok = tiny_parts.qwen2_tokenizer()
    te = tiny_parts.qwen3_text_encoder(tok, hidden=32)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = ZImageTransformer2DModel(
        all_patch_size=(2,),
        all_f_patch_size=(1,),
        in_channels=16,
        dim=32,
        n_layers=2,
        n_refiner_layers=1,
        n_heads=2,
        n_kv_heads=2,
        norm_eps=1e-5,
        qk_norm=True,
        rope_theta=256.0,
        t_scale=1000.0,
        cap_feat_dim=32,  # == Qwen3 hidden size (the pipeline feeds hidden_states[-2])
        axes_dims=[8, 4, 4],
        axes_lens=[256, 32, 32],  # sum(axes_dims) == dim / n_heads
    ).eval()
    vae = tiny_parts.vae_kl(
        latent_channels=16,
        use_quant_conv=False,
        use_post_quant_conv=False,
        scaling_factor=0.3611,
        shift_factor=0.1159,
    )
    sched = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=3.0, use_dynamic_shifting=False)
    return ZImagePipeline(scheduler=sched, vae=vae, text_encoder=te, tokenizer=tok, transformer=tr)
