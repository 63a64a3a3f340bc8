"""Families at real size. Values are from each model's published config.json (source in the comment).

Token ids (bos/eos/pad, image/vision token ids) are left as the tiny checkpoint has them: they belong to the tiny
tokenizer, which the real-size build keeps. ``rope_parameters`` is transformers 5's spelling of the published
``rope_theta`` + ``rope_scaling`` pair.
"""

from testing.bench.real_configs.image import CLIP_L, FLUX_VAE, T5_XXL

# --------------------------------------------------------------------------------------------- shared encoders
# Qwen3-4B (Qwen/Qwen3-4B config.json): Z-Image's text encoder and FLUX.2 [klein] 4B's. Tied embeddings.
QWEN3_4B = dict(
    vocab_size=151936,
    hidden_size=2560,
    intermediate_size=9728,
    num_hidden_layers=36,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    max_position_embeddings=40960,
    max_window_layers=36,
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
    rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
)
# Qwen3-8B (Qwen/Qwen3-8B config.json): FLUX.2 [klein] 9B's text encoder. Untied lm_head.
QWEN3_8B = dict(QWEN3_4B, hidden_size=4096, intermediate_size=12288, tie_word_embeddings=False)
# Qwen2.5-VL-7B-Instruct (Qwen/Qwen2.5-VL-7B-Instruct config.json), which Qwen-Image ships as text_encoder,
# vision tower included (the edit pipelines run it on the control image). rope_scaling {"type": "mrope",
# "mrope_section": [16, 24, 24]} + rope_theta 1e6 in the file.
QWEN25_VL_7B = dict(
    vocab_size=152064,
    text_config=dict(
        vocab_size=152064,
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        max_position_embeddings=128000,
        max_window_layers=28,
        sliding_window=32768,
        rms_norm_eps=1e-6,
        rope_parameters=dict(rope_type="default", mrope_section=[16, 24, 24], rope_theta=1000000.0),
    ),
    vision_config=dict(
        depth=32,
        hidden_size=1280,
        intermediate_size=3420,
        num_heads=16,
        out_hidden_size=3584,
        patch_size=14,
        spatial_merge_size=2,
        temporal_patch_size=2,
        window_size=112,
        fullatt_block_indexes=[7, 15, 23, 31],
        tokens_per_second=2,
        hidden_act="silu",
    ),
)
# Mistral-Small-3.2-24B-Instruct-2506 (mistralai/... config.json), FLUX.2 [dev]'s text_encoder (diffusers
# scripts/convert_flux2_to_diffusers.py loads it from that repo). Pixtral vision tower included. The file sets
# tie_word_embeddings only in the text config (false: the checkpoint ships lm_head); written at the top level too,
# where the tiny config has true.
MISTRAL_SMALL_3_24B = dict(
    tie_word_embeddings=False,
    text_config=dict(
        vocab_size=131072,
        hidden_size=5120,
        intermediate_size=32768,
        num_hidden_layers=40,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=131072,
        rms_norm_eps=1e-5,
        sliding_window=None,
        tie_word_embeddings=False,
        rope_parameters=dict(rope_type="default", rope_theta=1000000000.0),
    ),
    vision_config=dict(
        hidden_size=1024,
        intermediate_size=4096,
        num_hidden_layers=24,
        num_attention_heads=16,
        head_dim=64,
        image_size=1540,
        patch_size=14,
        hidden_act="silu",
    ),
)
# CLIP ViT-bigG/14 text tower with projection (stabilityai/stable-diffusion-xl-base-1.0 text_encoder_2/config.json).
CLIP_G = dict(
    vocab_size=49408,
    hidden_size=1280,
    intermediate_size=5120,
    num_hidden_layers=32,
    num_attention_heads=20,
    max_position_embeddings=77,
    hidden_act="gelu",
    projection_dim=1280,
)
# Llama-3.1-8B-Instruct (meta-llama/Llama-3.1-8B-Instruct config.json), HiDream's text_encoder_4.
LLAMA31_8B = dict(
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    max_position_embeddings=131072,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
    rope_parameters=dict(
        rope_type="llama3",
        rope_theta=500000.0,
        factor=8.0,
        low_freq_factor=1.0,
        high_freq_factor=4.0,
        original_max_position_embeddings=8192,
    ),
)

# --------------------------------------------------------------------------------------------- VAEs
# Qwen-Image's VAE = Wan 2.1's (Qwen/Qwen-Image vae/config.json; the class defaults of AutoencoderKLQwenImage,
# latents_mean/std as the tiny one already has them).
QWEN_IMAGE_VAE = dict(
    base_dim=96,
    z_dim=16,
    dim_mult=[1, 2, 4, 4],
    num_res_blocks=2,
    attn_scales=[],
    temperal_downsample=[False, True, True],
    dropout=0.0,
)
# FLUX.2's VAE (black-forest-labs/FLUX.2-dev vae/config.json; convert_flux2_to_diffusers.py builds it as
# AutoencoderKLFlux2() with the class defaults, written out here). Klein ships the same VAE.
FLUX2_VAE = dict(
    block_out_channels=[128, 256, 512, 512],
    decoder_block_out_channels=None,
    layers_per_block=2,
    latent_channels=32,
    norm_num_groups=32,
    sample_size=1024,
    use_quant_conv=True,
    use_post_quant_conv=True,
    mid_block_add_attention=True,
    batch_norm_eps=1e-4,
    batch_norm_momentum=0.1,
    patch_size=[2, 2],
)

# --------------------------------------------------------------------------------------------- denoisers
# Qwen/Qwen-Image transformer/config.json (Qwen-Image-Edit and Edit-2509 ship the same; Edit-2511 only adds
# zero_cond_t=true, which has no weights).
QWEN_IMAGE_TRANSFORMER = dict(
    patch_size=2,
    in_channels=64,
    out_channels=16,
    num_layers=60,
    attention_head_dim=128,
    num_attention_heads=24,
    joint_attention_dim=3584,
    guidance_embeds=False,
    axes_dims_rope=[16, 56, 56],
)
# FLUX.2 transformers: diffusers scripts/convert_flux2_to_diffusers.py get_flux2_transformer_config (the configs
# the repos' transformer/config.json were written from). joint_attention_dim = 3 stacked text-encoder layers.
FLUX2_DEV_TRANSFORMER = dict(
    patch_size=1,
    in_channels=128,
    num_layers=8,
    num_single_layers=48,
    attention_head_dim=128,
    num_attention_heads=48,
    joint_attention_dim=15360,
    timestep_guidance_channels=256,
    mlp_ratio=3.0,
    axes_dims_rope=[32, 32, 32, 32],
    rope_theta=2000,
    eps=1e-6,
    guidance_embeds=True,
)
FLUX2_KLEIN_4B_TRANSFORMER = dict(
    FLUX2_DEV_TRANSFORMER,
    num_layers=5,
    num_single_layers=20,
    num_attention_heads=24,
    joint_attention_dim=7680,
    guidance_embeds=False,
)
FLUX2_KLEIN_9B_TRANSFORMER = dict(
    FLUX2_DEV_TRANSFORMER,
    num_layers=8,
    num_single_layers=24,
    num_attention_heads=32,
    joint_attention_dim=12288,
    guidance_embeds=False,
)

QWEN_IMAGE = {
    "transformer": QWEN_IMAGE_TRANSFORMER,
    "text_encoder": QWEN25_VL_7B,
    "vae": QWEN_IMAGE_VAE,
}

REAL = {
    # Tongyi-MAI/Z-Image-Turbo: transformer/config.json, text_encoder (Qwen3-4B, loaded as Qwen3Model), vae
    # (AutoencoderKL, FLUX.1's: latent_channels 16, scaling 0.3611, shift 0.1159, ~168 MB bf16).
    "zimage": {
        "transformer": dict(
            all_patch_size=[2],
            all_f_patch_size=[1],
            in_channels=16,
            dim=3840,
            n_layers=30,
            n_refiner_layers=2,
            n_heads=30,
            n_kv_heads=30,
            norm_eps=1e-5,
            qk_norm=True,
            cap_feat_dim=2560,
            rope_theta=256.0,
            t_scale=1000.0,
            axes_dims=[32, 48, 48],
            axes_lens=[1536, 512, 512],
        ),
        "text_encoder": QWEN3_4B,
        "vae": FLUX_VAE,
    },
    # Qwen/Qwen-Image: transformer/config.json, text_encoder (Qwen2.5-VL-7B-Instruct), vae.
    "qwen_image": QWEN_IMAGE,
    # Qwen/Qwen-Image-Edit: the same three components as Qwen-Image (plus a processor, no weights).
    "qwen_image_edit": QWEN_IMAGE,
    # Qwen/Qwen-Image-Edit-2509: the same three components as Qwen-Image.
    "qwen_image_edit_plus": QWEN_IMAGE,
    # black-forest-labs/FLUX.2-klein-4B: transformer/config.json, text_encoder (Qwen3-4B, Qwen3ForCausalLM), vae.
    "flux2_klein_4b": {
        "transformer": FLUX2_KLEIN_4B_TRANSFORMER,
        "text_encoder": QWEN3_4B,
        "vae": FLUX2_VAE,
    },
    # black-forest-labs/FLUX.2-klein-9B: transformer/config.json, text_encoder (Qwen3-8B, Qwen3ForCausalLM), vae.
    "flux2_klein_9b": {
        "transformer": FLUX2_KLEIN_9B_TRANSFORMER,
        "text_encoder": QWEN3_8B,
        "vae": FLUX2_VAE,
    },
    # black-forest-labs/FLUX.2-dev: transformer/config.json, text_encoder (Mistral-Small-3.2-24B), vae.
    "flux2": {
        "transformer": FLUX2_DEV_TRANSFORMER,
        "text_encoder": MISTRAL_SMALL_3_24B,
        "vae": FLUX2_VAE,
    },
    # HiDream-ai/HiDream-I1-Full: transformer/config.json (the same dict as ComfyUI's model_detection for HiDream),
    # text_encoder (CLIP-L), text_encoder_2 (CLIP-G), text_encoder_3 (T5-XXL), vae (FLUX.1's); text_encoder_4 is
    # meta-llama/Llama-3.1-8B-Instruct. The two CLIPs are Long-CLIPs with 248 positions (as the tiny recipe, which
    # keeps that number; the pipeline pads them to 218 tokens): not confirmed against the repo's config.json.
    # llama_layers: the Llama hidden state (after the embeddings) each of the 16 + 32 blocks reads.
    "hidream": {
        "transformer": dict(
            patch_size=2,
            in_channels=16,
            out_channels=16,
            num_layers=16,
            num_single_layers=32,
            attention_head_dim=128,
            num_attention_heads=20,
            caption_channels=[4096, 4096],
            text_emb_dim=2048,
            num_routed_experts=4,
            num_activated_experts=2,
            axes_dims_rope=[64, 32, 32],
            max_resolution=[128, 128],
            llama_layers=list(range(32)) + [31] * 16,
        ),
        "text_encoder": dict(CLIP_L, max_position_embeddings=248),
        "text_encoder_2": dict(CLIP_G, max_position_embeddings=248),
        "text_encoder_3": dict(T5_XXL, relative_attention_max_distance=128, num_decoder_layers=24),
        "text_encoder_4": LLAMA31_8B,
        "vae": FLUX_VAE,
    },
}

# Published parameter counts, billions (model cards; counted from the released safetensors where the card is silent).
# Shared: Qwen3-4B card 4.0B (4.02B: 8.04 GB of bf16 safetensors), Qwen3-8B card 8.2B, Qwen2.5-VL-7B 8.29B (16.58 GB
# bf16 in Qwen-Image's text_encoder), Mistral-Small-3.2 card 24B (24.01B: 48.02 GB bf16 in FLUX.2-dev's
# text_encoder), Llama-3.1-8B card 8B (8.03B), FLUX.1 VAE 84M (Z-Image's vae ~168 MB bf16), FLUX.2 VAE 84M
# (same AutoencoderKL layout as FLUX.1's, counted), Wan 2.1 VAE 127M (Wan 2.1 report).
QWEN_IMAGE_PARAMS = {"transformer": 20.43, "text_encoder": 8.29, "vae": 0.127}  # card "20B" = 40.86 GB bf16
PARAMS = {
    "zimage": {
        "transformer": 6.15,  # card "6B"; 6.15B = 24.6 GB of fp32 safetensors
        "text_encoder": 4.02,
        "vae": 0.084,
    },
    "qwen_image": QWEN_IMAGE_PARAMS,
    "qwen_image_edit": QWEN_IMAGE_PARAMS,
    "qwen_image_edit_plus": QWEN_IMAGE_PARAMS,
    # Card "4B"; the DiT alone is 3.88B counted from its published config (the safetensors size not confirmed).
    "flux2_klein_4b": {"transformer": 3.88, "text_encoder": 4.02, "vae": 0.084},
    "flux2_klein_9b": {"transformer": 9.0, "text_encoder": 8.2, "vae": 0.084},  # card "9B"
    "flux2": {"transformer": 32.0, "text_encoder": 24.0, "vae": 0.084},  # card "32B"
    # Card "17B". CLIP-L 123M (+ the 248-position table and projection: 124M counted), CLIP-G 695M (SDXL's
    # text_encoder_2, 1.39 GB fp16), T5-XXL encoder 4.76B (as FLUX.1's).
    "hidream": {
        "transformer": 17.0,
        "text_encoder": 0.124,
        "text_encoder_2": 0.695,
        "text_encoder_3": 4.76,
        "text_encoder_4": 8.03,
        "vae": 0.084,
    },
}

# Z-Image L2P (zhen-nan/L2P model-1k-merge.safetensors): the Z-Image(-Turbo) transformer config it loads with (no
# config of its own is published) moved to pixels as AI Toolkit's ZImageL2PModel builds it: RGB in 16x16 patches,
# the final layer replaced by the U-Net pixel head (its fixed 64/128/256/512 widths, toolkit/models/l2p.py); the
# text encoder is Z-Image-Turbo's Qwen3-4B.
REAL["zimage_l2p"] = {
    "transformer": dict(
        REAL["zimage"]["transformer"], in_channels=3, all_patch_size=[16], decoder_widths=[64, 128, 256, 512]
    ),
    "text_encoder": QWEN3_4B,
}
# Z-Image's 6.15B less its final layer (1.2M), plus the 768-wide patch embedding (2.7M more) and the head (10.1M):
# 6.167B counted. The release says 6B.
PARAMS["zimage_l2p"] = {"transformer": 6.167, "text_encoder": 4.02}
# Photoroom calls it PRX-7B (7.0B counted on the config below); the Qwen3-VL-2B text tower is 1.72B counted (Qwen3
# 1.7B's shape, tied embeddings).
PARAMS["prx_pixel"] = {"transformer": 7.0, "text_encoder": 1.72}
# Photoroom/prxpixel-t2i: transformer/config.json as AI Toolkit's prx_pixel_t2i README lists it (depth 24 of 3584,
# 28 heads, mlp_ratio 3.5, RGB in 16x16 patches through a 768 bottleneck, resolution embeddings, axes [64, 64],
# text width 2048); the text encoder is the Qwen3-VL text tower of that width, Qwen/Qwen3-VL-2B-Instruct's
# text_config (Qwen3-1.7B's shape with interleaved multimodal rotary sections).
REAL["prx_pixel"] = {
    "transformer": dict(
        in_channels=3,
        patch_size=16,
        context_in_dim=2048,
        hidden_size=3584,
        mlp_ratio=3.5,
        num_heads=28,
        depth=24,
        axes_dim=[64, 64],
        bottleneck_size=768,
        resolution_embeds=True,
    ),
    "text_encoder": dict(
        vocab_size=151936,
        hidden_size=2048,
        intermediate_size=6144,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=262144,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        rope_parameters=dict(
            rope_type="default", rope_theta=5000000.0, mrope_section=[24, 20, 20], mrope_interleaved=True
        ),
    ),
}
