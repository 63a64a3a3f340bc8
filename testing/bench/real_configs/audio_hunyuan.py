"""Families at real size. Values are from each model's published config.json (source in the comment)."""

from testing.bench.real_configs.image import CLIP_L

# Llava-Llama-3-8B's language model as HunyuanVideo ships it (hunyuanvideo-community/HunyuanVideo
# text_encoder/config.json, a LlamaModel extracted from xtuner/llava-llama-3-8b-v1_1).
LLAVA_LLAMA3_8B = dict(
    vocab_size=128320,
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    max_position_embeddings=8192,
    rms_norm_eps=1e-5,
    rope_parameters={"rope_theta": 500000.0, "rope_type": "default"},
)
# Qwen2.5-VL-7B-Instruct's language model (Qwen/Qwen2.5-VL-7B-Instruct config.json; HunyuanVideo-1.5's conversion
# script saves `AutoModel.from_pretrained("Qwen/Qwen2.5-VL-7B-Instruct").language_model` as text_encoder).
QWEN25_VL_7B_TEXT = dict(
    vocab_size=152064,
    hidden_size=3584,
    intermediate_size=18944,
    num_hidden_layers=28,
    num_attention_heads=28,
    num_key_value_heads=4,
    max_position_embeddings=128000,
    max_window_layers=28,
    rms_norm_eps=1e-6,
    rope_parameters={"mrope_section": [16, 24, 24], "rope_theta": 1000000.0, "rope_type": "default", "type": "default"},
)
# ByT5-small encoder with Glyph-SDXL-v2's 1251 added color/font tokens (google/byt5-small config.json for the
# widths; vocab 1510 from ComfyUI comfy/text_encoders/byt5_config_small_glyph.json, which matches the
# HunyuanVideo-1.5 text_encoder_2/config.json contract in tenstorrent's port).
BYT5_SMALL_GLYPH = dict(
    vocab_size=1510,
    d_model=1472,
    d_ff=3584,
    d_kv=64,
    num_layers=12,
    num_decoder_layers=4,
    num_heads=6,
    feed_forward_proj="gated-gelu",
    dense_act_fn="gelu_new",
    is_gated_act=True,
    relative_attention_num_buckets=32,
    relative_attention_max_distance=128,
    tie_word_embeddings=False,
)
# T5-base encoder (google-t5/t5-base config.json), as stabilityai/stable-audio-open-1.0 ships it in text_encoder.
T5_BASE = dict(
    vocab_size=32128,
    d_model=768,
    d_ff=3072,
    d_kv=64,
    num_layers=12,
    num_decoder_layers=12,
    num_heads=12,
    feed_forward_proj="relu",
    dense_act_fn="relu",
    is_gated_act=False,
    relative_attention_num_buckets=32,
    relative_attention_max_distance=128,
)
# Qwen3-Embedding-0.6B (Qwen/Qwen3-Embedding-0.6B config.json), ACE-Step 1.5's text encoder (text_encoder/ of
# ACE-Step/Ace-Step1.5 and its diffusers conversions).
QWEN3_EMBEDDING_06B = dict(
    vocab_size=151669,
    hidden_size=1024,
    intermediate_size=3072,
    num_hidden_layers=28,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    max_position_embeddings=32768,
    max_window_layers=28,
    rms_norm_eps=1e-6,
    rope_parameters={"rope_theta": 1000000.0, "rope_type": "default"},
)
# ACE-Step 1.5's shared 2B DiT geometry (transformer, condition encoder, audio tokenizer/detokenizer all use it).
ACE_STEP_15_COMMON = dict(
    hidden_size=2048,
    intermediate_size=6144,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    rope_theta=1000000.0,
    sliding_window=128,
    rms_norm_eps=1e-6,
)

REAL = {
    # hunyuanvideo-community/HunyuanVideo: transformer/config.json, text_encoder (Llava-Llama-3-8B as LlamaModel),
    # text_encoder_2 (CLIP-L text tower, openai/clip-vit-large-patch14), vae/config.json.
    "hunyuan_video": {
        "transformer": dict(
            in_channels=16,
            out_channels=16,
            num_attention_heads=24,
            attention_head_dim=128,
            num_layers=20,
            num_single_layers=40,
            num_refiner_layers=2,
            mlp_ratio=4.0,
            patch_size=2,
            patch_size_t=1,
            qk_norm="rms_norm",
            guidance_embeds=True,
            text_embed_dim=4096,
            pooled_projection_dim=768,
            rope_theta=256.0,
            rope_axes_dim=[16, 56, 56],
        ),
        "text_encoder": LLAVA_LLAMA3_8B,
        "text_encoder_2": CLIP_L,
        "vae": dict(
            block_out_channels=[128, 256, 512, 512],
            layers_per_block=2,
            latent_channels=16,
            mid_block_add_attention=True,
            norm_num_groups=32,
            scaling_factor=0.476986,
            spatial_compression_ratio=8,
            temporal_compression_ratio=4,
        ),
    },
    # hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-480p_t2v, built by diffusers'
    # scripts/convert_hunyuan_video1_5_to_diffusers.py (--transformer_type 480p_t2v): transformer (its
    # TRANSFORMER_CONFIGS), vae (AutoencoderKLHunyuanVideo15() defaults = DiffusersVersionsOfModels/
    # HunyuanVideo-1.5-vae config.json), text_encoder (Qwen2.5-VL-7B language model), text_encoder_2 (ByT5 glyph).
    "hunyuan_video15": {
        # task_type: the final conversion script writes "i2v" for 480p_t2v (the class default); the model never reads
        # it (only the pipelines choose t2v/i2v), so it does not change the build.
        "transformer": dict(
            in_channels=65,
            out_channels=32,
            num_attention_heads=16,
            attention_head_dim=128,
            num_layers=54,
            num_refiner_layers=2,
            mlp_ratio=4.0,
            patch_size=1,
            patch_size_t=1,
            qk_norm="rms_norm",
            text_embed_dim=3584,
            text_embed_2_dim=1472,
            image_embed_dim=1152,
            rope_theta=256.0,
            rope_axes_dim=[16, 56, 56],
            use_meanflow=False,
            target_size=640,
            task_type="i2v",
        ),
        "text_encoder": QWEN25_VL_7B_TEXT,
        "text_encoder_2": BYT5_SMALL_GLYPH,
        "vae": dict(
            in_channels=3,
            out_channels=3,
            latent_channels=32,
            block_out_channels=[128, 256, 512, 1024, 1024],
            layers_per_block=2,
            spatial_compression_ratio=16,
            temporal_compression_ratio=4,
            downsample_match_channel=True,
            upsample_match_channel=True,
            scaling_factor=1.03682,
        ),
    },
    # ACE-Step 1.5 base/SFT (the arch's defaults, 8 steps with CFG 7.0, are the base/SFT variants; turbo shares the
    # architecture): Runware/acestep-v15-sft-diffusers transformer/ and condition_encoder/config.json,
    # Runware/acestep-v15-base-diffusers audio_token_detokenizer/config.json, the audio tokenizer from
    # ACE-Step/Ace-Step1.5 config.json (fsq_* and pooler keys; = diffusers AceStepAudioTokenizer defaults),
    # vae/config.json of ACE-Step/Ace-Step1.5, text_encoder = Qwen3-Embedding-0.6B.
    "ace_step_15": {
        "transformer": dict(
            ACE_STEP_15_COMMON,
            num_hidden_layers=24,
            in_channels=192,
            audio_acoustic_hidden_dim=64,
            patch_size=2,
            encoder_hidden_size=2048,
            is_turbo=False,
            model_version=None,
            layer_types=["sliding_attention", "full_attention"] * 12,
        ),
        "condition_encoder": dict(
            ACE_STEP_15_COMMON,
            text_hidden_dim=1024,
            timbre_hidden_dim=64,
            num_lyric_encoder_hidden_layers=8,
            num_timbre_encoder_hidden_layers=4,
        ),
        "text_encoder": QWEN3_EMBEDDING_06B,
        "vae": dict(
            encoder_hidden_size=128,
            downsampling_ratios=[2, 4, 4, 6, 10],
            channel_multiples=[1, 2, 4, 8, 16],
            decoder_channels=128,
            decoder_input_channels=64,
            audio_channels=2,
            sampling_rate=48000,
        ),
        "audio_tokenizer": dict(
            ACE_STEP_15_COMMON,
            audio_acoustic_hidden_dim=64,
            pool_window_size=5,
            fsq_dim=2048,
            fsq_input_levels=[8, 8, 8, 5, 5, 5],
            fsq_input_num_quantizers=1,
            num_attention_pooler_hidden_layers=2,
        ),
        "audio_token_detokenizer": dict(
            ACE_STEP_15_COMMON,
            audio_acoustic_hidden_dim=64,
            pool_window_size=5,
            num_attention_pooler_hidden_layers=2,
            layer_types=["sliding_attention", "full_attention"],
        ),
    },
    # stabilityai/stable-audio-open-1.0: transformer/config.json, projection_model/config.json, vae/config.json,
    # text_encoder (T5-base).
    "stable_audio": {
        "transformer": dict(
            sample_size=1024,
            in_channels=64,
            out_channels=64,
            num_layers=24,
            attention_head_dim=64,
            num_attention_heads=24,
            num_key_value_attention_heads=12,
            cross_attention_dim=768,
            time_proj_dim=256,
            global_states_input_dim=1536,
            cross_attention_input_dim=768,
        ),
        "projection_model": dict(text_encoder_dim=768, conditioning_dim=768, min_value=0, max_value=512),
        "text_encoder": T5_BASE,
        "vae": dict(
            encoder_hidden_size=128,
            downsampling_ratios=[2, 4, 4, 8, 8],
            channel_multiples=[1, 2, 4, 8, 16],
            decoder_channels=128,
            decoder_input_channels=64,
            audio_channels=2,
            sampling_rate=44100,
        ),
    },
}

# ACE-Step 1.5 XL base (ACE-Step/acestep-v15-xl-base-diffusers, the folder AI Toolkit's XL base weights convert
# to): its model card states hidden_size 2560, 32 layers, 32 heads and encoder_hidden_size 2048; the upstream XL
# config.json's intermediate_size 9728, num_key_value_heads 8 and encoder_* keys (encoder_intermediate_size 6144,
# encoder_num_attention_heads 16, encoder_num_key_value_heads 8) are what diffusers'
# scripts/convert_ace_step_to_diffusers.py writes into the condition encoder, audio tokenizer and detokenizer, so
# those three are ace_step_15's. Text encoder and VAE are the 1.5 ones.
REAL["ace_step_15_xl"] = dict(
    REAL["ace_step_15"],
    transformer=dict(
        REAL["ace_step_15"]["transformer"],
        hidden_size=2560,
        intermediate_size=9728,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        encoder_hidden_size=2048,
        layer_types=["sliding_attention", "full_attention"] * 16,
    ),
)

# Published parameter counts, billions (model cards; counted from the released safetensors where the card is silent:
# bytes / 2 for bf16/fp16 files, bytes / 4 for fp32).
PARAMS = {
    # transformer: card "13B"; 25.6 GB bf16 in hunyuanvideo-community/HunyuanVideo transformer/ = 12.8B.
    # text_encoder: 15.0 GB fp16 (4.98 + 5 + 4.92 + 0.117 GB shards, LlamaModel without lm_head) = 7.5B.
    # text_encoder_2: 246 MB fp16 = 0.123B. vae: 986 MB fp32 = 0.246B.
    "hunyuan_video": {"transformer": 12.82, "text_encoder": 7.50, "text_encoder_2": 0.123, "vae": 0.246},
    # transformer: card "8.3 billion parameters". text_encoder: Qwen2.5-VL-7B-Instruct is 16.6 GB bf16 = 8.29B
    # (Comfy-Org qwen_2.5_vl_7b.safetensors), less its vision tower (0.68B) and lm_head (152064 x 3584 = 0.55B),
    # which the language model text_encoder does not hold. text_encoder_2: byt5_small_glyphxl_fp16.safetensors
    # 439 MB = 0.219B. vae: tencent/HunyuanVideo-1.5 vae/diffusion_pytorch_model.safetensors 5.04 GB fp32 = 1.26B.
    "hunyuan_video15": {"transformer": 8.3, "text_encoder": 7.07, "text_encoder_2": 0.219, "vae": 1.26},
    # transformer: DiT decoder 6.3 GB fp32 in the ONNX export of ACE-Step/Ace-Step1.5 (shreyask/ACE-Step-v1.5-ONNX)
    # = 1.575B. condition_encoder: 1,218,676,312 bytes bf16 (TensorStack AceStepConditionEncoder, same config) =
    # 0.609B. text_encoder: Qwen3-Embedding-0.6B, 595,776,512 params (keras-hub preset; 1,191,586,416 bytes bf16).
    # vae: ACE-Step/Ace-Step1.5 vae 337,431,388 bytes 16-bit = 0.169B. audio_tokenizer / audio_token_detokenizer:
    # no separate count is published (they ship inside the DiT checkpoint); these are counted from the published
    # configs above.
    "ace_step_15": {
        "transformer": 1.575,
        "condition_encoder": 0.609,
        "text_encoder": 0.596,
        "vae": 0.169,
        "audio_tokenizer": 0.105,
        "audio_token_detokenizer": 0.105,
    },
    # stabilityai/stable-audio-open-1.0, all fp32: transformer 4,227,806,200 bytes = 1.057B; projection_model 1.59 MB
    # = 0.0004B; text_encoder 439 MB = 0.110B; vae 624 MB = 0.156B.
    "stable_audio": {"transformer": 1.057, "projection_model": 0.000397, "text_encoder": 0.1096, "vae": 0.156},
}

# ACE-Step 1.5 XL: the whole XL DiT checkpoint (DiT, condition encoder, audio tokenizer and detokenizer) in bf16 is
# listed as 9,516 MB (scragnog/ace-step-1.5-gguf-merge-models, its BF16 file of the XL architecture); read as MiB
# that is 4.989B, the "5B-parameter" of the ACE-Step/acestep-v15-xl-base-diffusers card (the GGUF card's own
# "~4.7B" reads it as 10^6 bytes, which the published widths above do not reach). Less the encoder-side parts,
# which are ace_step_15's (0.609 + 2 x 0.105), the transformer is 4.17B. The other components are the 1.5 ones.
PARAMS["ace_step_15_xl"] = dict(PARAMS["ace_step_15"], transformer=4.17)
