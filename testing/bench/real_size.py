"""Random-init checkpoints at real size, built from the real architectures' configs (no downloads).

Denoisers and VAEs are full size, so step time, memory and load/swap costs are the real ones. Text encoders
keep their real width (the denoiser sees real-shaped embeddings) but only ``TE_LAYERS`` layers: their cost is
outside every per-step number measured here, and full T5-XXL/UMT5/Qwen3 copies would not fit the GPU box's disk
next to the denoisers. Tokenizers are the tiny offline ones. Saved as ordinary diffusers folders, one
component per subfolder, so the engine loads them through its normal funnel.

``--tiny`` builds the same folders with small widths: the suite's own CPU smoke test.
"""

from __future__ import annotations

import os

import torch

from toolkit.models.tiny_recipes import _parts as tiny_parts

TE_LAYERS = 2


def _save(module, folder: str, name: str) -> None:
    module.save_pretrained(os.path.join(folder, name), safe_serialization=True)


def _build(fn, device: str, dtype):
    """Construct directly on the target device in the target dtype (random init on the GPU is fast)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            return fn().eval()
    finally:
        torch.set_default_dtype(previous)


def clip_te(tok, hidden, projection=None, heads=12):
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    cfg = CLIPTextConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=hidden * 4,
        num_hidden_layers=TE_LAYERS,
        num_attention_heads=heads,
        max_position_embeddings=77,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        projection_dim=projection or hidden,
        hidden_act="quick_gelu",
    )
    return lambda: (CLIPTextModelWithProjection if projection else CLIPTextModel)(cfg)


def t5_te(tok, d_model=4096, d_ff=10240, heads=64, umt5=False):
    from transformers import T5Config, T5EncoderModel, UMT5Config, UMT5EncoderModel

    kw = dict(
        vocab_size=len(tok),
        d_model=d_model,
        d_kv=64,
        d_ff=d_ff,
        num_layers=TE_LAYERS,
        num_heads=heads,
        feed_forward_proj="gated-gelu",
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=0,
        dropout_rate=0.0,
    )
    return lambda: UMT5EncoderModel(UMT5Config(**kw)) if umt5 else T5EncoderModel(T5Config(**kw))


def kl_vae(blocks, latent_channels, **kw):
    from diffusers import AutoencoderKL

    return lambda: AutoencoderKL(
        down_block_types=["DownEncoderBlock2D"] * 4,
        up_block_types=["UpDecoderBlock2D"] * 4,
        block_out_channels=blocks,
        layers_per_block=2,
        latent_channels=latent_channels,
        sample_size=1024,
        **kw,
    )


def build_sdxl(folder, device, dtype, small=False, seed=0):
    from diffusers import EulerDiscreteScheduler, UNet2DConditionModel

    w = (32, 64, 64) if small else (320, 640, 1280)
    heads = (2, 4, 4) if small else (5, 10, 20)
    te_w, te2_w = (32, 32) if small else (768, 1280)
    tok = tiny_parts.clip_tokenizer()
    torch.manual_seed(seed)
    _save(
        _build(
            lambda: UNet2DConditionModel(
                sample_size=128,
                in_channels=4,
                out_channels=4,
                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
                up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
                block_out_channels=w,
                layers_per_block=2,
                transformer_layers_per_block=(1, 1, 1) if small else (1, 2, 10),
                attention_head_dim=heads,
                cross_attention_dim=te_w + te2_w,
                use_linear_projection=True,
                addition_embed_type="text_time",
                addition_time_embed_dim=8 if small else 256,
                norm_num_groups=32,
                projection_class_embeddings_input_dim=(6 * 8 if small else 6 * 256) + te2_w,
            ),
            device,
            dtype,
        ),
        folder,
        "unet",
    )
    if seed:  # a fine-tune: only its UNet is new
        return
    torch.manual_seed(0)
    _save(_build(clip_te(tok, te_w, heads=2 if small else 12), device, dtype), folder, "text_encoder")
    _save(
        _build(clip_te(tok, te2_w, projection=te2_w, heads=2 if small else 20), device, dtype), folder, "text_encoder_2"
    )
    tok.save_pretrained(os.path.join(folder, "tokenizer"))
    tok.save_pretrained(os.path.join(folder, "tokenizer_2"))
    _save(
        _build(kl_vae((32,) * 4 if small else (128, 256, 512, 512), 4, scaling_factor=0.13025), device, dtype),
        folder,
        "vae",
    )
    EulerDiscreteScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", steps_offset=1, timestep_spacing="leading"
    ).save_pretrained(os.path.join(folder, "scheduler"))


def build_flux(folder, device, dtype, small=False, seed=0):
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxTransformer2DModel

    tok, tok2 = tiny_parts.clip_tokenizer(), tiny_parts.t5_tokenizer()
    t5_w = 32 if small else 4096
    clip_w = 32 if small else 768
    torch.manual_seed(seed)
    _save(
        _build(
            lambda: FluxTransformer2DModel(
                **(
                    dict(
                        num_layers=1,
                        num_single_layers=1,
                        attention_head_dim=16,
                        num_attention_heads=2,
                        axes_dims_rope=(4, 6, 6),
                    )
                    if small
                    else {}
                ),
                joint_attention_dim=t5_w,
                pooled_projection_dim=clip_w,
                guidance_embeds=True,
            ),
            device,
            dtype,
        ),
        folder,
        "transformer",
    )
    _save(_build(clip_te(tok, clip_w, heads=2 if small else 12), device, dtype), folder, "text_encoder")
    _save(
        _build(t5_te(tok2, t5_w, 64 if small else 10240, 4 if small else 64), device, dtype), folder, "text_encoder_2"
    )
    tok.save_pretrained(os.path.join(folder, "tokenizer"))
    tok2.save_pretrained(os.path.join(folder, "tokenizer_2"))
    _save(
        _build(
            kl_vae(
                (32,) * 4 if small else (128, 256, 512, 512),
                16,
                use_quant_conv=False,
                use_post_quant_conv=False,
                scaling_factor=0.3611,
                shift_factor=0.1159,
            ),
            device,
            dtype,
        ),
        folder,
        "vae",
    )
    FlowMatchEulerDiscreteScheduler(
        shift=3.0,
        use_dynamic_shifting=True,
        base_shift=0.5,
        max_shift=1.15,
        base_image_seq_len=256,
        max_image_seq_len=4096,
    ).save_pretrained(os.path.join(folder, "scheduler"))


def build_zimage(folder, device, dtype, small=False, seed=0):
    from diffusers import FlowMatchEulerDiscreteScheduler, ZImageTransformer2DModel
    from transformers import Qwen3Config, Qwen3Model

    tok = tiny_parts.qwen2_tokenizer()
    hidden = 32 if small else 2560
    torch.manual_seed(seed)

    def transformer():
        kw = (
            dict(
                dim=32,
                n_layers=2,
                n_refiner_layers=1,
                n_heads=2,
                n_kv_heads=2,
                axes_dims=[8, 4, 4],
                axes_lens=[256, 32, 32],
            )
            if small
            else {}
        )
        tr = ZImageTransformer2DModel(cap_feat_dim=hidden, **kw)
        with torch.no_grad():  # created with torch.empty upstream
            tr.x_pad_token.fill_(1.0)
            tr.cap_pad_token.fill_(1.0)
        return tr

    _save(_build(transformer, device, dtype), folder, "transformer")
    _save(
        _build(
            lambda: Qwen3Model(
                Qwen3Config(
                    vocab_size=len(tok),
                    hidden_size=hidden,
                    intermediate_size=hidden * 3,
                    num_hidden_layers=TE_LAYERS,
                    num_attention_heads=2 if small else 32,
                    num_key_value_heads=2 if small else 8,
                    head_dim=16 if small else 128,
                    max_position_embeddings=1024,
                )
            ),
            device,
            dtype,
        ),
        folder,
        "text_encoder",
    )
    tok.save_pretrained(os.path.join(folder, "tokenizer"))
    _save(
        _build(
            kl_vae(
                (32,) * 4 if small else (128, 256, 512, 512),
                16,
                use_quant_conv=False,
                use_post_quant_conv=False,
                scaling_factor=0.3611,
                shift_factor=0.1159,
            ),
            device,
            dtype,
        ),
        folder,
        "vae",
    )
    FlowMatchEulerDiscreteScheduler(shift=3.0).save_pretrained(os.path.join(folder, "scheduler"))


def build_wan21(folder, device, dtype, small=False, seed=0):
    """Wan 2.1 T2V 1.3B."""
    from diffusers import AutoencoderKLWan, UniPCMultistepScheduler, WanTransformer3DModel

    tok = tiny_parts.t5_tokenizer()
    t5_w = 32 if small else 4096
    torch.manual_seed(seed)
    _save(
        _build(
            lambda: WanTransformer3DModel(
                patch_size=(1, 2, 2),
                num_attention_heads=2 if small else 12,
                attention_head_dim=12 if small else 128,
                in_channels=16,
                out_channels=16,
                text_dim=t5_w,
                freq_dim=256,
                ffn_dim=32 if small else 8960,
                num_layers=2 if small else 30,
                cross_attn_norm=True,
                qk_norm="rms_norm_across_heads",
                eps=1e-6,
                rope_max_seq_len=1024,
            ),
            device,
            dtype,
        ),
        folder,
        "transformer",
    )
    _save(
        _build(t5_te(tok, t5_w, 64 if small else 10240, 4 if small else 64, umt5=True), device, dtype),
        folder,
        "text_encoder",
    )
    tok.save_pretrained(os.path.join(folder, "tokenizer"))
    _save(
        _build(
            lambda: AutoencoderKLWan(**(dict(base_dim=8, dim_mult=[1, 1, 1, 1], num_res_blocks=1) if small else {})),
            device,
            dtype,
        ),
        folder,
        "vae",
    )
    UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=3.0).save_pretrained(
        os.path.join(folder, "scheduler")
    )


def make_sdxl_lora(unet_folder: str, out_folder: str, seed: int, device: str, dtype, rank: int = 16) -> str:
    from diffusers import StableDiffusionXLPipeline, UNet2DConditionModel
    from peft import LoraConfig, get_peft_model_state_dict

    from testing.lora_files import randomize_adapters

    unet = UNet2DConditionModel.from_pretrained(unet_folder, torch_dtype=dtype).to(device)
    unet.add_adapter(
        LoraConfig(
            r=rank, lora_alpha=rank, init_lora_weights=False, target_modules=["to_q", "to_k", "to_v", "to_out.0"]
        )
    )
    randomize_adapters(unet, seed, scale=0.01)
    StableDiffusionXLPipeline.save_lora_weights(
        out_folder, unet_lora_layers=get_peft_model_state_dict(unet), safe_serialization=True
    )
    del unet
    return os.path.join(out_folder, "pytorch_lora_weights.safetensors")


BUILDERS = {"sdxl": build_sdxl, "flux": build_flux, "zimage": build_zimage, "wan21": build_wan21}
