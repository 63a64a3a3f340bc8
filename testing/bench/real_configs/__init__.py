"""Real architecture configs per family: the values of each model's published ``config.json`` that differ from
its tiny checkpoint. Every entry names its source (the model card repository and file).

``PARAMS`` holds each component's published parameter count (billions), which ``testing/test_real_configs.py``
checks the configs against on meta tensors, so a wrong width or depth fails on a CPU, not after GPU time.
"""

from testing.bench.real_configs import audio_hunyuan, image, image_aitk_new, image_large, video, video_av

REAL = {**image.REAL, **image_large.REAL, **video.REAL, **video_av.REAL, **audio_hunyuan.REAL, **image_aitk_new.REAL}
PARAMS = {
    **image.PARAMS,
    **image_large.PARAMS,
    **video.PARAMS,
    **video_av.PARAMS,
    **audio_hunyuan.PARAMS,
    **image_aitk_new.PARAMS,
}

# What a one-layer CPU build (``build_real(..., depth=1)``) needs beyond capping layer counts and feed-forward
# widths: values that count layers under another name, and widths inside one component narrowed where the real
# ones made the CPU check take minutes without checking anything the GPU run does not (a VAE's block channels, a
# transformer's head count behind its real input and output widths; latent channels and the widths one component
# hands another stay real).
NARROW = {"num_attention_heads": 8}  # for a denoiser whose inner width is heads x head_dim
SHALLOW = {
    "ltx2": {
        "connectors": {
            "text_proj_in_factor": 2,  # Gemma's layers + 1, stacked
            "video_connector_num_layers": 1,
            "audio_connector_num_layers": 1,
        },
        "transformer": {
            **NARROW,
            "cross_attention_dim": 1024,
            "audio_num_attention_heads": 8,
            "audio_cross_attention_dim": 512,
        },
        "vae": {"block_out_channels": [32, 64, 128, 256], "decoder_block_out_channels": [32, 64, 128]},
    },
    # LTX-2.3's transformer takes text at its attention widths (no caption projection), so the narrowed heads
    # narrow what the connectors hand it: video 8 x 128, audio 8 x 64.
    "ltx2.3": {
        "connectors": {
            "text_proj_in_factor": 2,
            "video_connector_num_attention_heads": 8,
            "video_connector_num_layers": 1,
            "video_hidden_dim": 1024,
            "audio_connector_num_attention_heads": 8,
            "audio_connector_num_layers": 1,
            "audio_hidden_dim": 512,
        },
        "transformer": {
            **NARROW,
            "cross_attention_dim": 1024,
            "audio_num_attention_heads": 8,
            "audio_cross_attention_dim": 512,
        },
        "vae": {"block_out_channels": [32, 64, 128, 128], "decoder_block_out_channels": [32, 64, 64, 128]},
    },
    "hunyuan_video": {
        "text_encoder": {"num_hidden_layers": 3},  # the pipeline reads hidden_states[-3]
        "transformer": NARROW,
    },
    "hunyuan_video15": {
        "text_encoder": {"num_hidden_layers": 3},
        "vae": {"block_out_channels": [32, 64, 128, 256, 256]},
    },
    "flux2": {"transformer": NARROW},
    "flux2_klein_9b": {"transformer": NARROW},
    "flux": {"transformer": NARROW},
    "flux_kontext": {"transformer": NARROW},
    "flex2": {"transformer": NARROW},
    "wan21_i2v": {"transformer": {**NARROW, "added_kv_proj_dim": 8 * 128}},  # the image branch's width is the inner one
    "wan22_5b": {"vae": {"base_dim": 32, "decoder_base_dim": 64}},
    "wan22_14b": {"transformer": NARROW, "transformer_2": NARROW},
    "wan22_14b_i2v": {"transformer": NARROW, "transformer_2": NARROW},
    "hidream": {"transformer": {"llama_layers": [0, 0], **NARROW}},  # one Llama hidden state per (capped) block
    "stable_audio": {"transformer": {"sample_size": 64}},  # the window it decodes whatever the duration asked
    "qwen_image_edit": {"vae": {"base_dim": 16}},  # encodes the control image at ~1024^2 whatever the output size
    "qwen_image_edit_plus": {"vae": {"base_dim": 16}},
    # text-fusion blocks count layers under their own names; the fused text is 12 taps x 512 tokens at 2560 wide
    "krea2": {
        "transformer": {
            **NARROW,
            "num_key_value_heads": 2,
            "num_layerwise_text_blocks": 1,
            "num_refiner_text_blocks": 1,
        }
    },
    # one MoE block (the release's first three are dense) of 8 experts; two encoder layers for hidden state -1
    "nucleus_image": {
        "transformer": {"dense_moe_strategy": "all_moe", "num_experts": 8, "capacity_factors": [4.0]},
        "text_encoder": {"text_config": {"num_hidden_layers": 2}},
    },
    # the pipeline taps encoder layers 0, 3, ..., 35 by index: all 36 stay, narrowed behind their real 4096 width
    "ideogram4": {
        "transformer": NARROW,
        "unconditional_transformer": NARROW,
        "text_encoder": {
            "text_config": {
                "num_hidden_layers": 36,
                "num_attention_heads": 8,
                "num_key_value_heads": 2,
                "intermediate_size": 256,
            }
        },
    },
}
SHALLOW["ltx2.5"] = SHALLOW["ltx2.3"]  # LTX-2.5: the same connector and transformer widths
# MiniMax-H3 reads the conditioner's hidden_states[50], so its Qwen3-VL keeps 51 layers, as narrow as a layer gets
# at the real 5120 width; the VAE's transformer decoder counts its layers under its own name.
SHALLOW["minimax_h3"] = {
    "text_encoder": {
        "text_config": {
            "num_hidden_layers": 51,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "intermediate_size": 256,
        }
    },
    "transformer": NARROW,
    "vae": {
        "block_out_channels": [32, 64, 64, 128, 128, 256],
        "decoder_num_layers": 1,
        "decoder_num_attention_heads": 8,
    },
}
# Sample settings a one-layer build needs: the FLUX.2 pipelines stack text-encoder hidden states by index.
SHALLOW_SAMPLE = {
    "flux2": {"text_encoder_out_layers": (1, 1, 1)},
    "flux2_klein_4b": {"text_encoder_out_layers": (1, 1, 1)},
    "flux2_klein_9b": {"text_encoder_out_layers": (1, 1, 1)},
    "krea2": {"max_sequence_length": 64},  # its prompts are padded to 512 tokens, each through 12 taps
    "nucleus_image": {"return_index": -1},  # the release reads hidden state -8 of 36
    "ideogram4": {"max_sequence_length": 128},  # prompts are left-padded to it: 2048 text tokens by default
}
