"""Real architecture configs of the video families with a sound track (LTX-2, 2.3, 2.5 and MiniMax-H3), as
video.py holds the others': the values of each published ``config.json`` that differ from the tiny checkpoint,
each with its source, and ``PARAMS`` the published parameter counts ``testing/test_real_configs.py`` checks."""

# --------------------------------------------------------------------------------------------- LTX-2 (19B)
# Lightricks/LTX-2 diffusers folders, as diffusers scripts/convert_ltx2_to_diffusers.py (version "2.0") builds them.
# text_encoder: Gemma3ForConditionalGeneration from google/gemma-3-12b-it-qat-q4_0-unquantized (Gemma 3 12B
# config.json). Token ids (boi/eoi/image_token_index, bos/eos/pad) stay the tiny tokenizer's, which the real-size
# build keeps; rope_parameters is transformers 5's spelling of rope_theta 1e6 + rope_scaling linear 8 (global
# layers) and rope_local_base_freq 10000 (sliding layers).
GEMMA3_12B = dict(
    text_config=dict(
        vocab_size=262208,
        hidden_size=3840,
        intermediate_size=15360,
        num_hidden_layers=48,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=256,
        query_pre_attn_scalar=256,
        max_position_embeddings=131072,
        sliding_window=1024,
        rms_norm_eps=1e-6,
        hidden_activation="gelu_pytorch_tanh",
        rope_parameters=dict(
            full_attention=dict(rope_type="linear", factor=8.0, rope_theta=1000000.0),
            sliding_attention=dict(rope_type="default", rope_theta=10000.0),
        ),
    ),
    vision_config=dict(
        hidden_size=1152,
        intermediate_size=4304,
        num_hidden_layers=27,
        num_attention_heads=16,
        image_size=896,
        patch_size=14,
        hidden_act="gelu_pytorch_tanh",
        layer_norm_eps=1e-6,
        vision_use_head=False,
    ),
    mm_tokens_per_image=256,
)
LTX2_TRANSFORMER = dict(
    in_channels=128,
    out_channels=128,
    patch_size=1,
    patch_size_t=1,
    num_attention_heads=32,
    attention_head_dim=128,
    cross_attention_dim=4096,
    vae_scale_factors=[8, 32, 32],
    pos_embed_max_pos=20,
    base_height=2048,
    base_width=2048,
    audio_in_channels=128,
    audio_out_channels=128,
    audio_patch_size=1,
    audio_patch_size_t=1,
    audio_num_attention_heads=32,
    audio_attention_head_dim=64,
    audio_cross_attention_dim=2048,
    audio_scale_factor=4,
    audio_pos_embed_max_pos=20,
    audio_sampling_rate=16000,
    audio_hop_length=160,
    num_layers=48,
    activation_fn="gelu-approximate",
    qk_norm="rms_norm_across_heads",
    norm_elementwise_affine=False,
    norm_eps=1e-6,
    caption_channels=3840,
    attention_bias=True,
    attention_out_bias=True,
    rope_theta=10000.0,
    rope_double_precision=True,
    causal_offset=1,
    timestep_scale_multiplier=1000,
    cross_attn_timestep_scale_multiplier=1000,
    rope_type="split",
)
# text_proj_in_factor 49 = Gemma's 48 layers + the embeddings, stacked.
LTX2_CONNECTORS = dict(
    caption_channels=3840,
    text_proj_in_factor=49,
    video_connector_num_attention_heads=30,
    video_connector_attention_head_dim=128,
    video_connector_num_layers=2,
    video_connector_num_learnable_registers=128,
    audio_connector_num_attention_heads=30,
    audio_connector_attention_head_dim=128,
    audio_connector_num_layers=2,
    audio_connector_num_learnable_registers=128,
    connector_rope_base_seq_len=4096,
    rope_theta=10000.0,
    rope_double_precision=True,
    causal_temporal_positioning=False,
    rope_type="split",
)
LTX2_VAE = dict(
    in_channels=3,
    out_channels=3,
    latent_channels=128,
    block_out_channels=[256, 512, 1024, 2048],
    down_block_types=["LTX2VideoDownBlock3D"] * 4,
    decoder_block_out_channels=[256, 512, 1024],
    layers_per_block=[4, 6, 6, 2, 2],
    decoder_layers_per_block=[5, 5, 5, 5],
    spatio_temporal_scaling=[True, True, True, True],
    decoder_spatio_temporal_scaling=[True, True, True],
    decoder_inject_noise=[False, False, False, False],
    downsample_type=["spatial", "temporal", "spatiotemporal", "spatiotemporal"],
    upsample_residual=[True, True, True],
    upsample_factor=[2, 2, 2],
    timestep_conditioning=False,
    patch_size=4,
    patch_size_t=1,
    resnet_norm_eps=1e-6,
    encoder_causal=True,
    decoder_causal=False,
    encoder_spatial_padding_mode="zeros",
    decoder_spatial_padding_mode="reflect",
    spatial_compression_ratio=32,
    temporal_compression_ratio=8,
)
LTX2_AUDIO_VAE = dict(
    base_channels=128,
    output_channels=2,
    ch_mult=[1, 2, 4],
    num_res_blocks=2,
    attn_resolutions=None,
    in_channels=2,
    resolution=256,
    latent_channels=8,
    norm_type="pixel",
    causality_axis="height",
    dropout=0.0,
    mid_block_add_attention=False,
    sample_rate=16000,
    mel_hop_length=160,
    is_causal=True,
    mel_bins=64,
    double_z=True,
)
LTX2_VOCODER = dict(
    in_channels=128,
    hidden_channels=1024,
    out_channels=2,
    upsample_kernel_sizes=[16, 15, 8, 4, 4],
    upsample_factors=[6, 5, 2, 2, 2],
    resnet_kernel_sizes=[3, 7, 11],
    resnet_dilations=[[1, 3, 5], [1, 3, 5], [1, 3, 5]],
    leaky_relu_negative_slope=0.1,
    output_sampling_rate=24000,
)

# --------------------------------------------------------------------------------------------- LTX-2.3 (22B)
# diffusers/LTX-2.3-Diffusers, the Lightricks/LTX-2.3 dev checkpoint as diffusers scripts/convert_ltx2_to_diffusers.py
# (version "2.3") builds its folders: the transformer and audio VAE configs are LTX-2's but for the keys below; the
# text encoder is the same Gemma 3 12B.
LTX23_TRANSFORMER = dict(
    LTX2_TRANSFORMER,
    gated_attn=True,
    cross_attn_mod=True,
    audio_gated_attn=True,
    audio_cross_attn_mod=True,
    use_prompt_embeddings=False,  # the connectors hand text over at the attention widths (4096 / 2048)
    perturbed_attn=True,
)
LTX23_CONNECTORS = dict(
    LTX2_CONNECTORS,
    video_connector_num_attention_heads=32,
    video_connector_num_layers=8,
    video_gated_attn=True,
    audio_connector_num_attention_heads=32,
    audio_connector_attention_head_dim=64,
    audio_connector_num_layers=8,
    audio_gated_attn=True,
    per_modality_projections=True,
    video_hidden_dim=4096,
    audio_hidden_dim=2048,
    proj_bias=True,
)
LTX23_VAE = dict(
    LTX2_VAE,
    block_out_channels=[256, 512, 1024, 1024],
    decoder_block_out_channels=[256, 512, 512, 1024],
    layers_per_block=[4, 6, 4, 2, 2],
    decoder_layers_per_block=[4, 6, 4, 2, 2],
    decoder_spatio_temporal_scaling=[True, True, True, True],
    decoder_inject_noise=[False, False, False, False, False],
    upsample_type=["spatiotemporal", "spatiotemporal", "temporal", "spatial"],
    upsample_residual=[False, False, False, False],
    upsample_factor=[2, 2, 1, 2],
    decoder_spatial_padding_mode="zeros",
)
LTX23_VOCODER = dict(  # LTX2VocoderWithBWE: 16 kHz from the mel frames, then bandwidth extension to 48 kHz
    in_channels=128,
    hidden_channels=1536,
    out_channels=2,
    upsample_kernel_sizes=[11, 4, 4, 4, 4, 4],
    upsample_factors=[5, 2, 2, 2, 2, 2],
    resnet_kernel_sizes=[3, 7, 11],
    resnet_dilations=[[1, 3, 5], [1, 3, 5], [1, 3, 5]],
    act_fn="snakebeta",
    antialias=True,
    antialias_ratio=2,
    antialias_kernel_size=12,
    final_act_fn=None,
    final_bias=False,
    bwe_in_channels=128,
    bwe_hidden_channels=512,
    bwe_out_channels=2,
    bwe_upsample_kernel_sizes=[12, 11, 4, 4, 4],
    bwe_upsample_factors=[6, 5, 2, 2, 2],
    bwe_resnet_kernel_sizes=[3, 7, 11],
    bwe_resnet_dilations=[[1, 3, 5], [1, 3, 5], [1, 3, 5]],
    bwe_act_fn="snakebeta",
    bwe_antialias=True,
    bwe_antialias_ratio=2,
    bwe_antialias_kernel_size=12,
    bwe_final_act_fn=None,
    bwe_final_bias=False,
    filter_length=512,
    hop_length=80,
    window_length=512,
    num_mel_channels=64,
    input_sampling_rate=16000,
    output_sampling_rate=48000,
)

# --------------------------------------------------------------------------------------------- LTX-2.5 (22B)
# Lightricks/LTX-2.5-Diffusers as diffusers scripts/convert_ltx2_to_diffusers.py (version "2.5") builds it: LTX-2.3's
# configs but for the transformer's two keys below; the connectors' caption width and stacked-state count follow
# the Gemma 4 text config (3840, 48 layers + 1: LTX-2.3's numbers); the conv VAE, audio VAE and vocoder configs
# are LTX-2.3's. text_encoder: LTX's fine-tune of Gemma 4 12B, whose architecture is google/gemma-4-12B's
# config.json (revision 56820d7d8cbe8e47975a53325439ed272e91cff2; token ids stay the tiny tokenizer's).
LTX25_TRANSFORMER = dict(LTX23_TRANSFORMER, ff_bias=False, use_keyframes_abs_pos_embedding=True)
GEMMA4_12B = dict(
    text_config=dict(
        vocab_size=262144,
        vocab_size_per_layer_input=262144,
        hidden_size=3840,
        intermediate_size=15360,
        num_hidden_layers=48,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=256,
        # global_head_dim 512 and num_global_key_value_heads 1 on the full-attention layers, in the per-layer form
        # transformers saves them in.
        per_layer_config={f"{i:02d}": dict(head_dim=512, num_key_value_heads=1) for i in range(5, 48, 6)},
        attention_k_eq_v=True,
        hidden_size_per_layer_input=0,
        final_logit_softcapping=30.0,
        max_position_embeddings=262144,
        sliding_window=1024,
        rms_norm_eps=1e-6,
        hidden_activation="gelu_pytorch_tanh",
        layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 8,
        rope_parameters=dict(
            full_attention=dict(rope_type="proportional", partial_rotary_factor=0.25, rope_theta=1000000.0),
            sliding_attention=dict(rope_type="default", rope_theta=10000.0),
        ),
        tie_word_embeddings=True,
    ),
    vision_config=dict(
        mm_embed_dim=3840,
        mm_posemb_size=1120,
        model_patch_size=48,
        num_soft_tokens=280,
        output_proj_dims=3840,
        patch_size=16,
        pooling_kernel_size=3,
    ),
    audio_config=dict(hidden_size=640, audio_embed_dim=640, audio_samples_per_token=640, output_proj_dims=640),
)

# --------------------------------------------------------------------------------------------- MiniMax-H3 (33B)
# MiniMaxAI/MiniMax-H3 as diffusers scripts/convert_minimax_h3_to_diffusers.py writes it: its
# MINIMAX_H3_TRANSFORMER_CONFIG and MINIMAX_H3_VIDEO_VAE_CONFIG (the source config's values, named there), the
# audio VAE of its source metadata (the AutoencoderKLMiniMaxH3Audio defaults: 64-wide encoder at rates
# 2-4-4-5-5, 2048-wide latent projection, BigVGAN decoder from 1024 at rates 5-5-2-2-2-2-2, 32 kHz). text_encoder:
# Qwen3-VL 32B (Qwen/Qwen3-VL-32B-Instruct config.json: text 64 x 5120, vision 27 x 1152 into 5120), read at
# hidden_states[50]; token ids stay the tiny tokenizer's.
MINIMAX_H3_TRANSFORMER = dict(
    num_attention_heads=56,
    attention_head_dim=128,
    hidden_size=5376,
    num_layers=50,
    num_refiner_layers=2,
    ffn_dim=14336,
    in_channels=24,
    audio_in_channels=32,
    patch_size=[1, 2, 2],
    text_dim=5120,
    freq_dim=256,
    time_embed_hidden_dim=5376,
    time_embed_dim=2688,
    rope_freq_dim=16,
    rope_theta=10000.0,
)
MINIMAX_H3_VAE = dict(
    latent_channels=24,
    block_out_channels=[128, 256, 256, 512, 512, 1024],
    layers_per_block=2,
    spatial_downsample_factors=[2, 2, 2, 2, 1, 1],
    temporal_downsample_factors=[1, 2, 2, 1, 1, 1],
    norm_num_groups=32,
    decoder_num_layers=36,
    decoder_num_attention_heads=32,
    decoder_attention_head_dim=64,
    decoder_num_register_tokens=4,
    decoder_ffn_mult=4,
    clip_length=17,
    token_drop=3,
)
MINIMAX_H3_AUDIO_VAE = dict(
    encoder_dim=64,
    encoder_rates=[2, 4, 4, 5, 5],
    latent_dim=2048,
    latent_channels=32,
    num_attention_heads=8,
    decoder_dim=1024,
    decoder_rates=[5, 5, 2, 2, 2, 2, 2],
    decoder_kernel_sizes=[9, 9, 4, 4, 4, 4, 4],
    resblock_kernel_sizes=[3, 7, 11],
    resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5], [1, 3, 5]],
    sampling_rate=32000,
)
QWEN3_VL_32B = dict(
    text_config=dict(
        vocab_size=151936,
        hidden_size=5120,
        intermediate_size=25600,
        num_hidden_layers=64,
        num_attention_heads=64,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=262144,
        rope_theta=5000000.0,
        rope_scaling={"rope_type": "default", "mrope_section": [24, 20, 20], "mrope_interleaved": True},
    ),
    vision_config=dict(
        depth=27,
        hidden_size=1152,
        intermediate_size=4304,
        num_heads=16,
        out_hidden_size=5120,
        patch_size=16,
        temporal_patch_size=2,
        spatial_merge_size=2,
        num_position_embeddings=2304,
        deepstack_visual_indexes=[8, 16, 24],
    ),
)

REAL = {
    # Lightricks/LTX-2 (19B dev): transformer, connectors, text_encoder (Gemma 3 12B), vae, audio_vae, vocoder.
    "ltx2": {
        "transformer": LTX2_TRANSFORMER,
        "connectors": LTX2_CONNECTORS,
        "text_encoder": GEMMA3_12B,
        "vae": LTX2_VAE,
        "audio_vae": LTX2_AUDIO_VAE,
        "vocoder": LTX2_VOCODER,
    },
    # diffusers/LTX-2.3-Diffusers (22B dev): the same roles as LTX-2, at LTX-2.3's configs above.
    "ltx2.3": {
        "transformer": LTX23_TRANSFORMER,
        "connectors": LTX23_CONNECTORS,
        "text_encoder": GEMMA3_12B,
        "vae": LTX23_VAE,
        "audio_vae": LTX2_AUDIO_VAE,
        "vocoder": LTX23_VOCODER,
    },
    # Lightricks/LTX-2.5-Diffusers (22B): transformer_full/ (the full DiT the family loads), connectors,
    # text_encoder (Gemma 4 12B), vae (the conv VAE), audio_vae, vocoder.
    "ltx2.5": {
        "transformer": LTX25_TRANSFORMER,
        "connectors": LTX23_CONNECTORS,
        "text_encoder": GEMMA4_12B,
        "vae": LTX23_VAE,
        "audio_vae": LTX2_AUDIO_VAE,
        "vocoder": LTX23_VOCODER,
    },
    # MiniMaxAI/MiniMax-H3 (33B DiT): transformer/ (the t2va / fl2va partition), text_encoder (Qwen3-VL 32B),
    # vae, audio_vae.
    "minimax_h3": {
        "transformer": MINIMAX_H3_TRANSFORMER,
        "text_encoder": QWEN3_VL_32B,
        "vae": MINIMAX_H3_VAE,
        "audio_vae": MINIMAX_H3_AUDIO_VAE,
    },
}

PARAMS = {
    # transformer: card "19B" (files: 18,876,174,592). text_encoder, files: Gemma 3 12B safetensors total
    # 12,187,325,040 (card "12B"). connectors, vae, audio_vae, vocoder: config (no per-component figure published).
    "ltx2": {
        "transformer": 18.88,
        "connectors": 1.431,
        "text_encoder": 12.19,
        "vae": 1.222,
        "audio_vae": 0.0532,
        "vocoder": 0.0556,
    },
    # Card "22B": the transformer with its text connectors (18.99 + 3.17). files: ltx-2.3-22b-dev.safetensors, the
    # one-file release of all five (Lightricks/LTX-2.3; 46,149,344,974 B as its LFS pointer gives it, bf16) =
    # 23.07B, which these configs add up to (23.069B); no per-component figure is published, so each is its
    # config's count. text_encoder as LTX-2's.
    "ltx2.3": {
        "transformer": 18.99,
        "connectors": 3.172,
        "text_encoder": 12.19,
        "vae": 0.726,
        "audio_vae": 0.0532,
        "vocoder": 0.1285,
    },
    # Card "22B" (Lightricks/LTX-2.5): the transformer with its text connectors, as for LTX-2.3 (18.99 + 3.17; 2.5's
    # video feed-forward has no bias, its keyframe position embedding is one vector). text_encoder: google/gemma-4-12B's
    # card, "Total parameters: 11.95B" (with its image and audio embedders, as the class builds them). vae,
    # audio_vae, vocoder: LTX-2.3's. No per-component figure is published: the others are their configs' counts.
    "ltx2.5": {
        "transformer": 18.99,
        "connectors": 3.172,
        "text_encoder": 11.95,
        "vae": 0.726,
        "audio_vae": 0.0532,
        "vocoder": 0.1285,
    },
    # transformer: "the full 33B DiT" (diffusers scripts/convert_minimax_h3_to_diffusers.py; 33.12B by its config).
    # text_encoder: Qwen3-VL 32B with its vision tower and language-model head (the class builds both), by the
    # config above. vae (its 36-layer transformer decoder is most of it), audio_vae: their configs' counts; no
    # per-component figure is published for these three.
    "minimax_h3": {"transformer": 33.12, "text_encoder": 33.36, "vae": 2.604, "audio_vae": 0.1513},
}
