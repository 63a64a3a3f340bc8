"""Image families AI Toolkit added after the first set (ERNIE-Image, Krea 2, Nucleus-Image, Ideogram 4, Anima) at
real size. Each value names where it comes from: the published config.json where a public copy of it could be
read, else the diffusers class defaults its docstring calls the release's, else AI Toolkit's own model file.

Token ids stay as the tiny checkpoint has them (they belong to the tiny tokenizer, which the real build keeps);
``rope_parameters`` is transformers 5's spelling of a published ``rope_theta`` + ``rope_scaling`` pair.
"""

from testing.bench.real_configs.image_large import FLUX2_VAE, QWEN_IMAGE_VAE

# --------------------------------------------------------------------------------------------- ERNIE-Image
# baidu/ERNIE-Image transformer/config.json, as quoted verbatim by ports of the release (e.g. the ernie-image-mlx
# port's notes; the same numbers as musubi-style ports' class defaults and diffusers' ErnieImage tests): 36 layers
# of 4096 (32 heads x 128), GeGLU 12288, text_in_dim 3072 = Ministral-3 3B's hidden size. ~8.0B: the card's "8B".
ERNIE_IMAGE_TRANSFORMER = dict(
    hidden_size=4096,
    num_attention_heads=32,
    num_layers=36,
    ffn_hidden_size=12288,
    in_channels=128,
    out_channels=128,
    patch_size=1,
    text_in_dim=3072,
    rope_theta=256,
    rope_axes_dim=[32, 48, 48],
    eps=1e-6,
    qk_layernorm=True,
)
# baidu/ERNIE-Image text_encoder/config.json: Mistral3Model ("architectures": ["Mistral3Model"]) around
# Ministral-3 3B (text: 3072 wide, 26 layers, 32 heads / 8 KV of 128, FFN 9216, vocab 131072: the numbers ComfyUI's
# comfy/text_encoders/llama.py Ministral3_3BConfig loads for ERNIE-Image too; YaRN x16 over 16384 positions) and its
# Pixtral tower (1024 wide, 24 layers: Mistral3Config's defaults, which the release keeps). 3.4B + 0.4B + projector.
MINISTRAL3_3B_VL = dict(
    text_config=dict(
        model_type="ministral3",
        vocab_size=131072,
        hidden_size=3072,
        intermediate_size=9216,
        num_hidden_layers=26,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=262144,
        rms_norm_eps=1e-5,
        rope_parameters=dict(
            rope_type="yarn",
            rope_theta=1000000.0,
            factor=16.0,
            original_max_position_embeddings=16384,
            max_position_embeddings=262144,
            beta_fast=32.0,
            beta_slow=1.0,
            mscale=1.0,
            mscale_all_dim=1.0,
            llama_4_scaling_beta=0.1,
        ),
    ),
    vision_config=dict(
        hidden_size=1024,
        intermediate_size=4096,
        num_hidden_layers=24,
        num_attention_heads=16,
        head_dim=64,
        image_size=1540,
        patch_size=14,
    ),
)

# --------------------------------------------------------------------------------------------- Krea 2
# krea/Krea-2-Raw and krea/Krea-2-Turbo transformer/config.json: Krea2Transformer2DModel's defaults, which are the
# release's "single_mmdit_large_wide" (AI Toolkit's extensions_built_in/diffusion_models/krea2/krea2.py
# KREA2_MMDIT_CONFIG: 6144 wide = 48 heads x 128, 12 KV heads, 28 layers, SwiGLU 2/3 x 4 x 6144 = 16384, text 2560
# wide from 12 taps, text fusion with 20 heads). diffusers' docs: "a 12B DiT (dense)".
KREA2_TRANSFORMER = dict(
    in_channels=64,
    num_layers=28,
    attention_head_dim=128,
    num_attention_heads=48,
    num_key_value_heads=12,
    intermediate_size=16384,
    timestep_embed_dim=256,
    text_hidden_dim=2560,
    num_text_layers=12,
    text_num_attention_heads=20,
    text_num_key_value_heads=20,
    text_intermediate_size=6912,
    num_layerwise_text_blocks=2,
    num_refiner_text_blocks=2,
    axes_dims_rope=[32, 48, 48],
    rope_theta=1000.0,
    norm_eps=1e-5,
)
# Qwen/Qwen3-VL-4B-Instruct config.json (AI Toolkit's QWEN3_VL_PATH), which Krea 2 ships as text_encoder
# (Qwen3VLModel): text 2560 wide, 36 layers, 32 heads / 8 KV of 128, FFN 9728, interleaved M-RoPE [24, 20, 20] at
# theta 5e6 (ComfyUI's comfy/text_encoders/llama.py Qwen3VL_4BConfig has the same), tied embeddings; the vision
# tower 24 layers of 1024 with three DeepStack mergers into 2560.
QWEN3_VL_4B = dict(
    text_config=dict(
        vocab_size=151936,
        hidden_size=2560,
        intermediate_size=9728,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=262144,
        rms_norm_eps=1e-6,
        rope_parameters=dict(
            rope_type="default", rope_theta=5000000.0, mrope_section=[24, 20, 20], mrope_interleaved=True
        ),
    ),
    vision_config=dict(
        depth=24,
        hidden_size=1024,
        intermediate_size=4096,
        num_heads=16,
        out_hidden_size=2560,
        patch_size=16,
        spatial_merge_size=2,
        temporal_patch_size=2,
        num_position_embeddings=2304,
        deepstack_visual_indexes=[5, 11, 17],
        hidden_act="gelu_pytorch_tanh",
    ),
    tie_word_embeddings=True,
)

# --------------------------------------------------------------------------------------------- Nucleus-Image
# NucleusAI/Nucleus-Image transformer/config.json (as an FP8 repackaging of the release copies it, diffusers
# 0.38 keys): 32 blocks of 2048 (16 heads x 128, 4 KV heads), the first three dense, then 64 routed SwiGLU experts
# of 1344 plus a shared one, capacity factors 4, 4 then 2; text 4096 wide (Qwen3-VL-8B). The card: "17B total
# parameters across 64 routed experts per layer", "~2B active".
NUCLEUS_TRANSFORMER = dict(
    patch_size=2,
    in_channels=64,
    out_channels=16,
    num_layers=32,
    attention_head_dim=128,
    num_attention_heads=16,
    num_key_value_heads=4,
    joint_attention_dim=4096,
    axes_dims_rope=[16, 56, 56],
    mlp_ratio=4.0,
    moe_enabled=True,
    dense_moe_strategy="leave_first_three_blocks_dense",
    num_experts=64,
    moe_intermediate_dim=1344,
    capacity_factors=[0.0, 0.0, 0.0, 4.0, 4.0] + [2.0] * 27,
    use_sigmoid=False,
    route_scale=2.5,
    use_grouped_mm=True,
)
# Qwen/Qwen3-VL-8B-Instruct config.json (Nucleus-Image ships it as text_encoder, Qwen3VLForConditionalGeneration;
# ComfyUI's Qwen3VL_8BConfig has the same text numbers): text 4096 wide, 36 layers, 32 heads / 8 KV of 128, FFN
# 12288, M-RoPE [24, 20, 20] at theta 5e6, an untied LM head; the vision tower 27 layers of 1152 with DeepStack
# mergers at layers 8, 16 and 24.
QWEN3_VL_8B = dict(
    QWEN3_VL_4B,
    text_config=dict(QWEN3_VL_4B["text_config"], hidden_size=4096, intermediate_size=12288),
    vision_config=dict(
        QWEN3_VL_4B["vision_config"],
        depth=27,
        hidden_size=1152,
        intermediate_size=4304,
        out_hidden_size=4096,
        deepstack_visual_indexes=[8, 16, 24],
    ),
    tie_word_embeddings=False,
)

# --------------------------------------------------------------------------------------------- Ideogram 4
# ideogram-ai/ideogram-4-fp8 transformer/ and unconditional_transformer/: Ideogram4Transformer2DModel's defaults,
# the release's spec as the model_architecture.md page of ideogram-oss/ideogram4 states it (4608 wide = 18 heads x 256,
# 34 layers, SwiGLU 12288, AdaLN 512, rope theta 5e6, M-RoPE (24, 20, 20), 128 latent channels, text features of
# 13 Qwen3-VL-8B layers x 4096). The two networks have one shape ("9.3B" each).
IDEOGRAM4_TRANSFORMER = dict(
    in_channels=128,
    num_layers=34,
    attention_head_dim=256,
    num_attention_heads=18,
    intermediate_size=12288,
    adaln_dim=512,
    llm_features_dim=53248,
    rope_theta=5_000_000,
    mrope_section=[24, 20, 20],
    norm_eps=1e-5,
)

# --------------------------------------------------------------------------------------------- Anima
# circlestone-labs/Anima-Base-v1.0-Diffusers: diffusers' scripts/convert_anima_to_diffusers.py builds the DiT as
# Cosmos-Predict2-2B-Text2Image (convert_cosmos_to_diffusers.py TRANSFORMER_CONFIGS), the LLM adapter from the
# checkpoint's shapes (AnimaTextConditioner's defaults: 6 blocks of 1024, 16 heads, T5's 32128-token vocabulary,
# padded to 512 tokens) and Qwen3-0.6B-Base as text_encoder (Qwen3Model: 1024 wide, 28 layers, 16 heads / 8 KV of
# 128, FFN 3072; max positions 32768 and rope theta 1e6 as the script writes them).
ANIMA_TRANSFORMER = dict(
    in_channels=16,
    out_channels=16,
    num_attention_heads=16,
    attention_head_dim=128,
    num_layers=28,
    mlp_ratio=4.0,
    text_embed_dim=1024,
    adaln_lora_dim=256,
    max_size=[128, 240, 240],
    patch_size=[1, 2, 2],
    rope_scale=[1.0, 4.0, 4.0],
    concat_padding_mask=True,
    extra_pos_embed_type=None,
)
ANIMA_TEXT_CONDITIONER = dict(
    source_dim=1024,
    target_dim=1024,
    model_dim=1024,
    num_layers=6,
    num_attention_heads=16,
    mlp_ratio=4.0,
    target_vocab_size=32128,
    min_sequence_length=512,
)
QWEN3_06B = dict(
    vocab_size=151936,
    hidden_size=1024,
    intermediate_size=3072,
    num_hidden_layers=28,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    max_position_embeddings=32768,
    rms_norm_eps=1e-6,
    tie_word_embeddings=False,
    rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
)

REAL = {
    # baidu/ERNIE-Image: transformer, text_encoder (Mistral3Model), vae (AutoencoderKLFlux2 as FLUX.2's: the
    # release's vae/config.json lists FLUX.2's block channels, 32 latent channels and 2x2 patches).
    "ernie_image": {
        "transformer": ERNIE_IMAGE_TRANSFORMER,
        "text_encoder": MINISTRAL3_3B_VL,
        "vae": FLUX2_VAE,
    },
    # krea/Krea-2-Raw (Turbo has the same shapes): transformer, text_encoder (Qwen3-VL-4B), vae (Qwen-Image's).
    # The text taps are a pipeline setting (model_index.json), which the real build copies from the tiny one.
    "krea2": {"transformer": KREA2_TRANSFORMER, "text_encoder": QWEN3_VL_4B, "vae": QWEN_IMAGE_VAE},
    # NucleusAI/Nucleus-Image: transformer, text_encoder (Qwen3-VL-8B-Instruct), vae (Qwen-Image's).
    "nucleus_image": {"transformer": NUCLEUS_TRANSFORMER, "text_encoder": QWEN3_VL_8B, "vae": QWEN_IMAGE_VAE},
    # ideogram-ai/ideogram-4-fp8: both DiTs, text_encoder (Qwen3-VL-8B-Instruct, loaded as Qwen3VLModel: no LM
    # head), vae (FLUX.2's autoencoder sizes: AI Toolkit's ideogram4/src/vae.py AutoEncoderParams).
    "ideogram4": {
        "transformer": IDEOGRAM4_TRANSFORMER,
        "unconditional_transformer": IDEOGRAM4_TRANSFORMER,
        "text_encoder": QWEN3_VL_8B,
        "vae": FLUX2_VAE,
    },
    # circlestone-labs/Anima-Base-v1.0-Diffusers: transformer, text_conditioner, text_encoder, vae (Qwen-Image's).
    "anima": {
        "transformer": ANIMA_TRANSFORMER,
        "text_conditioner": ANIMA_TEXT_CONDITIONER,
        "text_encoder": QWEN3_06B,
        "vae": QWEN_IMAGE_VAE,
    },
}

# Published sizes, billions (model cards), checked against the configs above on meta tensors within 3 %.
PARAMS = {
    # Card: "8B" DiT; Ministral 3 3B: 3.4B language model + 0.4B vision encoder (counted: 3.85B with the projector
    # and the 131072-token embedding); FLUX.2's VAE as in image_large.py.
    "ernie_image": {"transformer": 8.0, "text_encoder": 3.85, "vae": 0.084},
    # diffusers' Krea 2 docs say "a 12B DiT (dense)": 12.82B counted from the config above (28 blocks of 434M, the
    # 226M shared modulation, the 0.35B text fusion); the safetensors size not confirmed. Qwen3-VL-4B-Instruct:
    # 4.44B on its model card. Qwen-Image's VAE as in image_large.py.
    "krea2": {"transformer": 12.82, "text_encoder": 4.44, "vae": 0.127},
    # Card: "17B total parameters" (16.92B counted); Qwen3-VL-8B-Instruct's card: 8.77B.
    "nucleus_image": {"transformer": 17.0, "text_encoder": 8.77, "vae": 0.127},
    # Ideogram 4: "9.3B" per DiT (9.28B counted); Qwen3-VL-8B-Instruct without its LM head: 8.77B - 0.62B.
    "ideogram4": {"transformer": 9.3, "unconditional_transformer": 9.3, "text_encoder": 8.15, "vae": 0.084},
    # Anima: the card's "2B" DiT (Cosmos-Predict2-2B: 1.956B counted) and its LLM adapter (0.135B counted from the
    # 6-block shape the conversion reads; no published figure), Qwen3-0.6B (0.596B without an LM head).
    "anima": {"transformer": 1.956, "text_conditioner": 0.135, "text_encoder": 0.596, "vae": 0.127},
}
