"""Tiny Qwen-Image: the fixture of toolkit/models/archs/qwen_image.py, random weights in the real model's shapes.
``parts`` are the components the edit families' recipes (qwen_image_edit.py, qwen_image_edit_plus.py) share."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")

# Wan 2.1 VAE statistics (comfy/latent_formats.py, Wan21): AutoencoderKLQwenImage's defaults, and what the
# tiny VAE declares so its normalisation is the production one.
WAN21_LATENTS_MEAN = [
    -0.7571,
    -0.7089,
    -0.9113,
    0.1075,
    -0.1745,
    0.9653,
    -0.1517,
    1.5508,
    0.4134,
    -0.0715,
    0.5517,
    -0.3632,
    -0.1922,
    -0.9497,
    0.2503,
    -0.2921,
]
WAN21_LATENTS_STD = [
    2.8184,
    1.4541,
    2.3275,
    2.6558,
    1.2196,
    1.7708,
    2.6052,
    2.0743,
    3.2687,
    2.1526,
    2.8652,
    1.5579,
    1.6382,
    1.1253,
    2.8251,
    1.9160,
]


def parts(variant=None):
    """The tiny components every Qwen-Image pipeline shares (the edit families add a processor)."""
    from diffusers import AutoencoderKLQwenImage, FlowMatchEulerDiscreteScheduler, QwenImageTransformer2DModel

    tok = tiny_parts.qwen2_tokenizer(model_max_length=2048)
    te = tiny_parts.qwen25_vl_text_encoder(tok, hidden=16)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=64,
        out_channels=16,
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=16,  # == Qwen2.5-VL hidden size
        guidance_embeds=False,
        axes_dims_rope=(8, 4, 4),
    ).eval()
    tiny_parts.seeded()
    # 8x spatial like production (three downsamples), 16 channels, the real Wan 2.1 statistics. Narrow and
    # without res blocks because the edit pipelines VAE-encode every control image at ~1024^2 whatever the
    # output size: on a CPU that encode (mid-block attention over 128 x 128 positions) is most of a run.
    vae = AutoencoderKLQwenImage(
        base_dim=4,
        z_dim=16,
        dim_mult=[1, 1, 1, 1],
        num_res_blocks=0,
        temperal_downsample=[False, True, True],
        latents_mean=WAN21_LATENTS_MEAN,
        latents_std=WAN21_LATENTS_STD,
    ).eval()
    sched = FlowMatchEulerDiscreteScheduler(
        shift=1.0,
        use_dynamic_shifting=True,
        base_shift=0.5,
        max_shift=0.9,
        base_image_seq_len=256,
        max_image_seq_len=8192,
        shift_terminal=0.02,
        time_shift_type="exponential",
    )
    return dict(scheduler=sched, vae=vae, text_encoder=te, tokenizer=tok, transformer=tr)


def build_tiny(variant=None):
    from diffusers import QwenImagePipeline

    return QwenImagePipeline(**parts(variant))
