"""What the FLUX.2 tiny recipes share (flux2, flux2_klein_4b, flux2_klein_9b): the 32-channel VAE, and the Klein
pipeline, whose two sizes differ only in the Qwen3 width (3 x hidden = the transformer's joint_attention_dim)."""

from toolkit.models.tiny_recipes import _parts as tiny_parts


def flux2_vae():
    """Production compression (4 blocks: 8x, then 2x2 patches) and 32 channels; BatchNorm statistics that are
    not the identity, so the denormalisation in ``unpack_flux2_latents`` (toolkit/models/archs/flux2_klein.py)
    is exercised."""
    import torch
    from diffusers import AutoencoderKLFlux2

    tiny_parts.seeded()
    vae = AutoencoderKLFlux2(
        block_out_channels=(32, 32, 32, 32), layers_per_block=1, latent_channels=32, norm_num_groups=32, sample_size=64
    ).eval()
    with torch.no_grad():
        vae.bn.running_mean.copy_(torch.linspace(-0.5, 0.5, vae.bn.running_mean.numel()))
        vae.bn.running_var.copy_(torch.linspace(0.5, 2.0, vae.bn.running_var.numel()))
    return vae


def build_klein(variant, te_hidden: int):
    """A tiny Flux2KleinPipeline whose Qwen3 text encoder is ``te_hidden`` wide."""
    from diffusers import FlowMatchEulerDiscreteScheduler, Flux2KleinPipeline, Flux2Transformer2DModel

    tok = tiny_parts.qwen2_tokenizer()
    # 28 layers: the pipeline stacks hidden states 9, 18 and 27 (text_encoder_out_layers' default).
    te = tiny_parts.qwen3_text_encoder(tok, hidden=te_hidden, layers=28, kv_heads=1, causal_lm=True)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = Flux2Transformer2DModel(
        patch_size=1,
        in_channels=128,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=3 * te_hidden,  # three stacked Qwen3 layers
        timestep_guidance_channels=256,
        axes_dims_rope=(4, 4, 4, 4),
        guidance_embeds=False,
    ).eval()
    sched = FlowMatchEulerDiscreteScheduler(
        shift=3.0,
        use_dynamic_shifting=True,
        base_shift=0.5,
        max_shift=1.15,
        base_image_seq_len=256,
        max_image_seq_len=4096,
    )
    return Flux2KleinPipeline(
        scheduler=sched, vae=flux2_vae(), text_encoder=te, tokenizer=tok, transformer=tr, is_distilled=False
    )
