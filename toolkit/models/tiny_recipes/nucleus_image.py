"""Tiny Nucleus-Image: the real Qwen-Image VAE compression (8x, 16 channels) and 2x2 packing; a four-block MoE
DiT laid out as the release is (dense first blocks, then expert-choice MoE blocks of routed experts plus a shared
one, per-layer capacity factors); an eight-layer Qwen3-VL text encoder (the pipeline reads hidden state -8) and
a text-only processor with a Qwen3-VL-style chat template."""

from toolkit.models.tiny_recipes import _parts as tiny_parts
from toolkit.models.tiny_recipes.krea2 import qwen_image_vae

SAMPLE = dict(width=64, height=64, output_ext="png")
TE_HIDDEN = 16

# Qwen3-VL's chat template, text parts only: content is a string or a list of {"type": "text", "text": ...}.
QWEN3_VL_TEXT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def init_experts(transformer) -> None:
    """The expert stacks are ``torch.empty`` parameters that only a checkpoint fills (garbage memory otherwise: the
    first tiny build sampled inf); give them the scale of a linear layer's default init, from the seeded RNG."""
    import torch

    with torch.no_grad():
        for name, param in transformer.named_parameters():
            if ".experts." in name:
                param.normal_(0.0, param.shape[-2] ** -0.5)  # fan-in: the middle axis of (experts, in, out)


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler, NucleusMoEImagePipeline, NucleusMoEImageTransformer2DModel

    from toolkit.models.processors import QwenVLTextProcessor

    tok = tiny_parts.qwen2_tokenizer()
    te = tiny_parts.qwen3_vl(tok, TE_HIDDEN, layers=8, causal_lm=True)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    tr = NucleusMoEImageTransformer2DModel(
        patch_size=2,
        in_channels=64,  # 16 VAE channels x 2x2 patches, as released
        out_channels=16,
        num_layers=4,
        attention_head_dim=16,
        num_attention_heads=2,
        num_key_value_heads=1,
        joint_attention_dim=TE_HIDDEN,
        axes_dims_rope=(4, 6, 6),
        mlp_ratio=6.0,  # the dense blocks' SwiGLU width is int(dim x ratio x 2/3) rounded down to 128s: 128 here
        moe_enabled=True,
        dense_moe_strategy="leave_first_three_blocks_dense",  # the release's: blocks 0-2 dense, then MoE
        num_experts=4,
        moe_intermediate_dim=16,
        capacity_factors=[0.0, 0.0, 0.0, 2.0],
        use_grouped_mm=True,  # as released: torch's grouped GEMM (CPU too, for these 16-byte-aligned widths)
    ).eval()
    init_experts(tr)
    # AI Toolkit's NucleusImageModel scheduler: exponential time shift, static (shift 1).
    sched = FlowMatchEulerDiscreteScheduler(
        num_train_timesteps=1000,
        shift=1.0,
        use_dynamic_shifting=False,
        base_shift=0.5,
        max_shift=1.15,
        base_image_seq_len=256,
        max_image_seq_len=4096,
        time_shift_type="exponential",
    )
    processor = QwenVLTextProcessor(tokenizer=tok, chat_template=QWEN3_VL_TEXT_TEMPLATE)
    return NucleusMoEImagePipeline(
        transformer=tr, scheduler=sched, vae=qwen_image_vae(), text_encoder=te, processor=processor
    )
