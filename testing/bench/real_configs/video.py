"""Video families at real size. Values are from each model's published config.json (source in the comment)."""

from testing.bench.real_configs.image import T5_XXL

# --------------------------------------------------------------------------------------------- Wan (2.1 / 2.2)
# UMT5-XXL encoder (google/umt5-xxl config.json), which every Wan-AI/*-Diffusers repo ships as text_encoder
# (diffusers scripts/convert_wan_to_diffusers.py: UMT5EncoderModel.from_pretrained("google/umt5-xxl")).
UMT5_XXL = dict(
    vocab_size=256384,
    d_model=4096,
    d_kv=64,
    d_ff=10240,
    num_layers=24,
    num_decoder_layers=24,
    num_heads=64,
    feed_forward_proj="gated-gelu",
    relative_attention_num_buckets=32,
    relative_attention_max_distance=128,
    dropout_rate=0.1,
    tie_word_embeddings=False,
)
# Wan 2.1 VAE, also the A14B models' (Wan-AI/Wan2.1-T2V-1.3B-Diffusers vae/config.json; convert_wan_to_diffusers.py
# builds it as AutoencoderKLWan() with the class defaults: latents_mean/std are those defaults, as in the tiny one).
WAN21_VAE = dict(
    base_dim=96,
    z_dim=16,
    dim_mult=[1, 2, 4, 4],
    num_res_blocks=2,
    attn_scales=[],
    temperal_downsample=[False, True, True],
)
# Wan 2.2 VAE (Wan-AI/Wan2.2-TI2V-5B-Diffusers vae/config.json; convert_wan_to_diffusers.py vae22_diffusers_config,
# dim_mult / num_res_blocks / temperal_downsample at the class defaults it leaves unset).
WAN22_VAE = dict(
    base_dim=160,
    decoder_base_dim=256,
    z_dim=48,
    dim_mult=[1, 2, 4, 4],
    num_res_blocks=2,
    attn_scales=[],
    temperal_downsample=[False, True, True],
    is_residual=True,
    in_channels=12,
    out_channels=12,
    patch_size=2,
    scale_factor_temporal=4,
    scale_factor_spatial=16,
    latents_mean=[
        -0.2289,
        -0.0052,
        -0.1323,
        -0.2339,
        -0.2799,
        0.0174,
        0.1838,
        0.1557,
        -0.1382,
        0.0542,
        0.2813,
        0.0891,
        0.1570,
        -0.0098,
        0.0375,
        -0.1825,
        -0.2246,
        -0.1207,
        -0.0698,
        0.5109,
        0.2665,
        -0.2108,
        -0.2158,
        0.2502,
        -0.2055,
        -0.0322,
        0.1109,
        0.1567,
        -0.0729,
        0.0899,
        -0.2799,
        -0.1230,
        -0.0313,
        -0.1649,
        0.0117,
        0.0723,
        -0.2839,
        -0.2083,
        -0.0520,
        0.3748,
        0.0152,
        0.1957,
        0.1433,
        -0.2944,
        0.3573,
        -0.0548,
        -0.1681,
        -0.0667,
    ],
    latents_std=[
        0.4765,
        1.0364,
        0.4514,
        1.1677,
        0.5313,
        0.4990,
        0.4818,
        0.5013,
        0.8158,
        1.0344,
        0.5894,
        1.0901,
        0.6885,
        0.6165,
        0.8454,
        0.4978,
        0.5759,
        0.3523,
        0.7135,
        0.6804,
        0.5833,
        1.4146,
        0.8986,
        0.5659,
        0.7069,
        0.5338,
        0.4889,
        0.4917,
        0.4069,
        0.4999,
        0.6866,
        0.4093,
        0.5709,
        0.6065,
        0.6415,
        0.4944,
        0.5726,
        1.2042,
        0.5458,
        1.6887,
        0.3971,
        1.0600,
        0.3943,
        0.5537,
        0.5444,
        0.4089,
        0.7468,
        0.7744,
    ],
)
# CLIP ViT-H/14 vision tower (laion/CLIP-ViT-H-14-laion2B-s32B-b79K config.json, vision_config), which
# convert_wan_to_diffusers.py puts in Wan 2.1 I2V/FLF2V's image_encoder. The pipeline reads hidden_states[-2].
CLIP_VIT_H = dict(
    hidden_size=1280,
    intermediate_size=5120,
    num_hidden_layers=32,
    num_attention_heads=16,
    image_size=224,
    patch_size=14,
    projection_dim=1024,
    hidden_act="gelu",
    layer_norm_eps=1e-5,
)
# Wan transformers (transformer/config.json of each repo; the same dicts are in convert_wan_to_diffusers.py).
# rope_max_seq_len is not set there, so it is the class default 1024 (the tiny recipe shrinks it to 32).
WAN_1_3B = dict(
    patch_size=[1, 2, 2],
    num_attention_heads=12,
    attention_head_dim=128,
    in_channels=16,
    out_channels=16,
    text_dim=4096,
    freq_dim=256,
    ffn_dim=8960,
    num_layers=30,
    cross_attn_norm=True,
    qk_norm="rms_norm_across_heads",
    eps=1e-6,
    image_dim=None,
    added_kv_proj_dim=None,
    rope_max_seq_len=1024,
)
WAN_14B = dict(WAN_1_3B, num_attention_heads=40, ffn_dim=13824, num_layers=40)
WAN_5B = dict(WAN_1_3B, num_attention_heads=24, ffn_dim=14336, num_layers=30, in_channels=48, out_channels=48)
# 36 input channels: 16 noise + 4 first-frame mask + 16 encoded control image.
WAN_14B_I2V = dict(WAN_14B, in_channels=36)

# --------------------------------------------------------------------------------------------- LTX-Video 0.9.0
# T5 v1.1 XXL (google/t5-v1_1-xxl config.json), which convert_ltx_to_diffusers.py ships as text_encoder: the
# image module's T5_XXL plus the keys the tiny recipe also changes (relative_attention_max_distance is not in that
# config.json, so it is T5Config's default 128; the tiny one sets 16).
T5_XXL_FULL = dict(
    T5_XXL, relative_attention_max_distance=128, num_decoder_layers=24, dropout_rate=0.1, tie_word_embeddings=False
)
# Lightricks/LTX-Video transformer/config.json (the 0.9.0 2B model; class defaults of LTXVideoTransformer3DModel).
LTXV_TRANSFORMER = dict(
    in_channels=128,
    out_channels=128,
    patch_size=1,
    patch_size_t=1,
    num_attention_heads=32,
    attention_head_dim=64,
    cross_attention_dim=2048,
    num_layers=28,
    caption_channels=4096,
    qk_norm="rms_norm_across_heads",
    activation_fn="gelu-approximate",
)
# Lightricks/LTX-Video vae/config.json (0.9.0: 4 down / 4 up blocks, no timestep conditioning). The file states the
# encoder keys below; the decoder keys it leaves out load as the class defaults, which are written here
# (= convert_ltx_to_diffusers.py get_vae_config("0.9.0"), save decoder_inject_noise, 5 entries for mid + 4 ups).
LTXV_VAE = dict(
    in_channels=3,
    out_channels=3,
    latent_channels=128,
    block_out_channels=[128, 256, 512, 512],
    layers_per_block=[4, 3, 3, 3, 4],
    spatio_temporal_scaling=[True, True, True, False],
    decoder_block_out_channels=[128, 256, 512, 512],
    decoder_layers_per_block=[4, 3, 3, 3, 4],
    decoder_spatio_temporal_scaling=[True, True, True, False],
    decoder_inject_noise=[False] * 5,
    upsample_residual=[False] * 4,
    upsample_factor=[1] * 4,
    timestep_conditioning=False,
    patch_size=4,
    patch_size_t=1,
    resnet_norm_eps=1e-6,
    scaling_factor=1.0,
    encoder_causal=True,
    decoder_causal=False,
)

REAL = {
    # Wan-AI/Wan2.1-T2V-1.3B-Diffusers: transformer, text_encoder (UMT5-XXL), vae (Wan 2.1).
    "wan21": {"transformer": WAN_1_3B, "text_encoder": UMT5_XXL, "vae": WAN21_VAE},
    # Wan-AI/Wan2.1-I2V-14B-480P-Diffusers (the arch's 832x480 default): 14B transformer with the CLIP image
    # branch (image_dim = CLIP width, added_kv_proj_dim = inner dim), image_encoder (CLIP ViT-H/14).
    "wan21_i2v": {
        "transformer": dict(WAN_14B, in_channels=36, image_dim=1280, added_kv_proj_dim=5120),
        "text_encoder": UMT5_XXL,
        "image_encoder": CLIP_VIT_H,
        "vae": WAN21_VAE,
        # Not weighted, so real_build leaves the tiny 32 px processor in place (and the CPU test fails on it):
        # laion/CLIP-ViT-H-14-laion2B-s32B-b79K preprocessor_config.json, for a builder that applies it.
        "image_processor": dict(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224}),
    },
    # Wan-AI/Wan2.2-TI2V-5B-Diffusers: 5B transformer on the 48-channel Wan 2.2 VAE.
    "wan22_5b": {"transformer": WAN_5B, "text_encoder": UMT5_XXL, "vae": WAN22_VAE},
    # Wan-AI/Wan2.2-T2V-A14B-Diffusers: transformer (high noise) and transformer_2 (low noise), both 14B.
    "wan22_14b": {"transformer": WAN_14B, "transformer_2": WAN_14B, "text_encoder": UMT5_XXL, "vae": WAN21_VAE},
    # Wan-AI/Wan2.2-I2V-A14B-Diffusers: the two experts with 36 input channels, no image encoder.
    "wan22_14b_i2v": {
        "transformer": WAN_14B_I2V,
        "transformer_2": WAN_14B_I2V,
        "text_encoder": UMT5_XXL,
        "vae": WAN21_VAE,
    },
    # Lightricks/LTX-Video (diffusers folders = 0.9.0 2B): transformer, text_encoder (T5 v1.1 XXL), vae.
    "ltx": {"transformer": LTXV_TRANSFORMER, "text_encoder": T5_XXL_FULL, "vae": LTXV_VAE},
}

# Published parameter counts, billions. "files": counted from the released weights (safetensors index total_size
# or a load of the released checkpoint), which the configs above reproduce to the parameter; "config": no published
# figure was found, so the count is that of the published config (the test then only guards against drift).
UMT5_XXL_B = 5.681  # files: Wan2.1-T2V-1.3B-Diffusers text_encoder index total_size 22,723,641,344 B fp32
WAN21_VAE_B = 0.127  # card: Wan tech report (arXiv 2503.20314), "Wan-VAE ... 127M"; files: 126,892,531
WAN_14B_B = 14.29  # card "14B" per expert (A14B: "27B total, 14B active"); files: 14,288,491,584 (T2V expert)
PARAMS = {
    # files: transformer index total_size 5,675,987,200 B fp32 = 1,418,996,800 (card says "1.3B").
    "wan21": {"transformer": 1.419, "text_encoder": UMT5_XXL_B, "vae": WAN21_VAE_B},
    # transformer, config: 14B trunk + the per-block image k/v projections (2.1B); the card says "14B" for the
    # trunk, no released-file count found. image_encoder: open_clip's model_profile.csv, ViT-H-14 image
    # tower 632.08M (incl. a 1.3M projection CLIPVisionModel does not have).
    "wan21_i2v": {"transformer": 16.39, "text_encoder": UMT5_XXL_B, "image_encoder": 0.632, "vae": WAN21_VAE_B},
    # transformer: card "5B" (files: 4,999,787,712). vae, files: Wan2.2_VAE.pth loaded, 704,688,668.
    "wan22_5b": {"transformer": 5.0, "text_encoder": UMT5_XXL_B, "vae": 0.705},
    "wan22_14b": {"transformer": WAN_14B_B, "transformer_2": WAN_14B_B, "text_encoder": UMT5_XXL_B, "vae": WAN21_VAE_B},
    # files: 14,288,901,184 per expert (6 fp32 shards, 1095 tensors).
    "wan22_14b_i2v": {
        "transformer": WAN_14B_B,
        "transformer_2": WAN_14B_B,
        "text_encoder": UMT5_XXL_B,
        "vae": WAN21_VAE_B,
    },
    # transformer, files: 1,923,385,472 (the card says "2B"). text_encoder as FLUX.1's T5-XXL. vae, files:
    # vae/diffusion_pytorch_model.safetensors 1,676,798,532 B fp32 = 0.419B.
    "ltx": {"transformer": 1.923, "text_encoder": 4.76, "vae": 0.419},
}
