"""Image families at real size. Values are from each model's published config.json (source in the comment)."""

# CLIP ViT-L/14 text tower (openai/clip-vit-large-patch14 config.json, text_config), as FLUX.1/SD3 ship it.
CLIP_L = dict(
    vocab_size=49408,
    hidden_size=768,
    intermediate_size=3072,
    num_hidden_layers=12,
    num_attention_heads=12,
    max_position_embeddings=77,
    hidden_act="quick_gelu",
    projection_dim=768,
)
# OpenCLIP ViT-bigG/14 text tower (stabilityai/stable-diffusion-xl-base-1.0 text_encoder_2/config.json; SD3.5 ships the
# same in its text_encoder_2). Note "gelu", not CLIP-L's "quick_gelu".
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
# OpenCLIP ViT-H/14 text tower as SD 2.x ships it (stabilityai/stable-diffusion-2-1 text_encoder/config.json): 23 of
# its 24 layers, since SD 2 conditions on the penultimate layer's states; "gelu" like bigG's.
OPENCLIP_H = dict(
    vocab_size=49408,
    hidden_size=1024,
    intermediate_size=4096,
    num_hidden_layers=23,
    num_attention_heads=16,
    max_position_embeddings=77,
    hidden_act="gelu",
    projection_dim=512,
)
# T5 v1.1 XXL encoder (google/t5-v1_1-xxl config.json), as FLUX.1 ships it in text_encoder_2 (max distance 128 is the
# T5Config default the published file relies on; the tiny recipe shrinks it to 16).
T5_XXL = dict(
    vocab_size=32128,
    d_model=4096,
    d_kv=64,
    d_ff=10240,
    num_layers=24,
    num_heads=64,
    feed_forward_proj="gated-gelu",
    relative_attention_num_buckets=32,
    relative_attention_max_distance=128,
)
# FLUX.1's VAE (black-forest-labs/FLUX.1-dev vae/config.json).
FLUX_VAE = dict(
    block_out_channels=[128, 256, 512, 512],
    layers_per_block=2,
    latent_channels=16,
    down_block_types=["DownEncoderBlock2D"] * 4,
    up_block_types=["UpDecoderBlock2D"] * 4,
    norm_num_groups=32,
    use_quant_conv=False,
    use_post_quant_conv=False,
    scaling_factor=0.3611,
    shift_factor=0.1159,
    sample_size=1024,
)
# The SD/SDXL KL-f8 VAE, 4 latent channels (stabilityai/stable-diffusion-xl-base-1.0 vae/config.json; SD 1.5's
# vae/config.json is the same architecture with sample_size 512 and scaling 0.18215). AuraFlow v0.3 and
# PixArt-Sigma ship the SDXL one.
SDXL_VAE = dict(
    block_out_channels=[128, 256, 512, 512],
    layers_per_block=2,
    latent_channels=4,
    down_block_types=["DownEncoderBlock2D"] * 4,
    up_block_types=["UpDecoderBlock2D"] * 4,
    norm_num_groups=32,
    use_quant_conv=True,
    use_post_quant_conv=True,
    scaling_factor=0.13025,
    shift_factor=None,
    sample_size=1024,
)

FLUX1 = {
    "transformer": dict(
        patch_size=1,
        in_channels=64,
        num_layers=19,
        num_single_layers=38,
        attention_head_dim=128,
        num_attention_heads=24,
        joint_attention_dim=4096,
        pooled_projection_dim=768,
        guidance_embeds=True,
        axes_dims_rope=[16, 56, 56],
    ),
    "text_encoder": CLIP_L,
    "text_encoder_2": T5_XXL,
    "vae": FLUX_VAE,
}

# ostris/Flex.2-preview's transformer: FLUX.1's with 8 double-stream blocks (38 single), 196 input channels (64 of
# packed latents, 68 of inpaint latents and mask, 64 of control latents) and 64 output ones. Sources: DiffSynth-Studio's
# model config for Flex.2-preview.safetensors (FluxDiT input_dim 196, num_blocks 8; its single blocks stay 38 and its
# output 64) and AI Toolkit's extensions_built_in/flex2/pipeline.py (the 64 + 68 + 64 inputs). CLIP-L, T5-XXL and the
# VAE load with FLUX.1's classes from the same repo (extensions_built_in/flex2/flex2.py).
FLEX2 = {**FLUX1, "transformer": {**FLUX1["transformer"], "in_channels": 196, "out_channels": 64, "num_layers": 8}}

REAL = {
    # black-forest-labs/FLUX.1-dev: transformer/config.json, text_encoder (CLIP-L), text_encoder_2 (T5-XXL), vae.
    "flux": FLUX1,
    # black-forest-labs/FLUX.1-Kontext-dev: transformer/config.json has FLUX.1-dev's shape (19 + 38 blocks, 24 x 128,
    # guidance embedding); text_encoder (CLIP-L), text_encoder_2 (T5-XXL) and vae as in FLUX.1-dev.
    "flux_kontext": FLUX1,
    "flex2": FLEX2,
    # stable-diffusion-v1-5/stable-diffusion-v1-5: unet/config.json, text_encoder (CLIP-L), vae/config.json.
    "sd1": {
        "unet": dict(
            sample_size=64,
            in_channels=4,
            out_channels=4,
            layers_per_block=2,
            block_out_channels=[320, 640, 1280, 1280],
            down_block_types=["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
            up_block_types=["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
            cross_attention_dim=768,
            attention_head_dim=8,
            norm_num_groups=32,
        ),
        "text_encoder": CLIP_L,
        "vae": dict(SDXL_VAE, scaling_factor=0.18215, sample_size=512),
    },
    # stabilityai/stable-diffusion-2-1: unet/config.json (SD 1's block layout at 768 px: sample_size 96, linear
    # projections, a head count per block, 1024-wide cross-attention), text_encoder (OpenCLIP-H), vae/config.json.
    "sd2": {
        "unet": dict(
            sample_size=96,
            in_channels=4,
            out_channels=4,
            layers_per_block=2,
            block_out_channels=[320, 640, 1280, 1280],
            down_block_types=["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
            up_block_types=["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
            cross_attention_dim=1024,
            attention_head_dim=[5, 10, 20, 20],
            use_linear_projection=True,
            norm_num_groups=32,
        ),
        "text_encoder": OPENCLIP_H,
        "vae": dict(SDXL_VAE, scaling_factor=0.18215, sample_size=768),
    },
    # stabilityai/stable-diffusion-xl-base-1.0: unet/config.json, text_encoder (CLIP-L), text_encoder_2 (OpenCLIP
    # bigG with projection), vae/config.json.
    "sdxl": {
        "unet": dict(
            sample_size=128,
            in_channels=4,
            out_channels=4,
            layers_per_block=2,
            block_out_channels=[320, 640, 1280],
            down_block_types=["DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"],
            up_block_types=["CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"],
            attention_head_dim=[5, 10, 20],
            transformer_layers_per_block=[1, 2, 10],
            use_linear_projection=True,
            addition_embed_type="text_time",
            addition_time_embed_dim=256,
            projection_class_embeddings_input_dim=2816,
            cross_attention_dim=2048,
            norm_num_groups=32,
        ),
        "text_encoder": CLIP_L,
        "text_encoder_2": CLIP_G,
        "vae": SDXL_VAE,
    },
    # The family's largest published checkpoint, stabilityai/stable-diffusion-3.5-large: transformer/config.json (MMDiT,
    # 38 layers of 38 x 64, qk rms_norm, no MMDiT-X dual attention: that is 3.5 Medium only), text_encoder (CLIP-L with
    # projection), text_encoder_2 (bigG with projection), text_encoder_3 (T5-XXL), vae/config.json.
    "sd3": {
        "transformer": dict(
            sample_size=128,
            patch_size=2,
            in_channels=16,
            out_channels=16,
            num_layers=38,
            attention_head_dim=64,
            num_attention_heads=38,
            joint_attention_dim=4096,
            caption_projection_dim=2432,
            pooled_projection_dim=2048,
            pos_embed_max_size=192,
            qk_norm="rms_norm",
            dual_attention_layers=[],
        ),
        "text_encoder": CLIP_L,
        "text_encoder_2": CLIP_G,
        "text_encoder_3": T5_XXL,
        "vae": dict(FLUX_VAE, scaling_factor=1.5305, shift_factor=0.0609),
    },
    # PixArt-alpha/PixArt-Sigma-XL-2-1024-MS transformer/config.json (diffusers' convert_pixart_sigma_to_diffusers.py:
    # XL/2, interpolation_scale 2 at 1024 px, no micro-conditions); text encoder and VAE from
    # PixArt-alpha/pixart_sigma_sdxlvae_T5_diffusers (T5 v1.1 XXL, the SDXL VAE).
    "pixart_sigma": {
        "transformer": dict(
            sample_size=128,
            num_layers=28,
            patch_size=2,
            attention_head_dim=72,
            num_attention_heads=16,
            caption_channels=4096,
            in_channels=4,
            cross_attention_dim=1152,
            out_channels=8,
            interpolation_scale=2,
            use_additional_conditions=False,
        ),
        "text_encoder": T5_XXL,
        "vae": SDXL_VAE,
    },
    # fal/AuraFlow-v0.3: transformer/config.json (4 MMDiT + 32 single DiT blocks, 12 x 256; pos_embed_max_size 9216 =
    # the 96 x 96 learned grid v0.3 added for variable sizes, diffusers PR #9182), text_encoder/config.json
    # (EleutherAI/pile-t5-xl encoder, UMT5; also ComfyUI's t5_pile_config_xl.json), vae (SDXL's).
    "auraflow": {
        "transformer": dict(
            sample_size=64,
            patch_size=2,
            in_channels=4,
            out_channels=4,
            num_mmdit_layers=4,
            num_single_dit_layers=32,
            attention_head_dim=256,
            num_attention_heads=12,
            joint_attention_dim=2048,
            caption_projection_dim=3072,
            pos_embed_max_size=9216,
        ),
        "text_encoder": dict(
            vocab_size=32128,
            d_model=2048,
            d_kv=64,
            d_ff=5120,
            num_layers=24,
            num_heads=32,
            feed_forward_proj="gated-gelu",
            relative_attention_num_buckets=32,
            relative_attention_max_distance=128,
        ),
        "vae": SDXL_VAE,
    },
    # Alpha-VLLM/Lumina-Image-2.0: transformer/config.json (Next-DiT 2304 wide, 26 + 2 refiner layers, GQA 24/8),
    # text_encoder/config.json (google/gemma-2-2b: Gemma2Model), vae (FLUX.1's).
    "lumina2": {
        "transformer": dict(
            sample_size=128,
            patch_size=2,
            in_channels=16,
            hidden_size=2304,
            num_layers=26,
            num_refiner_layers=2,
            num_attention_heads=24,
            num_kv_heads=8,
            multiple_of=256,
            ffn_dim_multiplier=None,
            norm_eps=1e-5,
            axes_dim_rope=[32, 32, 32],
            axes_lens=[300, 512, 512],
            cap_feat_dim=2304,
        ),
        "text_encoder": dict(
            vocab_size=256000,
            hidden_size=2304,
            intermediate_size=9216,
            num_hidden_layers=26,
            num_attention_heads=8,
            num_key_value_heads=4,
            head_dim=256,
            max_position_embeddings=8192,
            sliding_window=4096,
            query_pre_attn_scalar=256,
            attn_logit_softcapping=50.0,
            final_logit_softcapping=30.0,
            hidden_activation="gelu_pytorch_tanh",
        ),
        "vae": FLUX_VAE,
    },
    # THUDM/CogView4-6B: transformer and vae as diffusers' scripts/convert_cogview4_to_diffusers.py builds them
    # (28 layers of 32 x 128; rope_axes_dim and sample_size are the class defaults it relies on; the VAE is CogView's
    # own 16-channel KL: 128/512/1024/1024, 3 layers per block, no mid-block attention), text_encoder THUDM/glm-4-9b-hf
    # config.json (loaded as GlmModel).
    "cogview4": {
        "transformer": dict(
            patch_size=2,
            in_channels=16,
            out_channels=16,
            num_layers=28,
            attention_head_dim=128,
            num_attention_heads=32,
            text_embed_dim=4096,
            time_embed_dim=512,
            condition_dim=256,
            pos_embed_max_size=128,
            sample_size=128,
            rope_axes_dim=[256, 256],
        ),
        # max_position_embeddings: GLM-4-9B base's 8192 context (not confirmed in the -hf config; no weight depends
        # on it).
        "text_encoder": dict(
            vocab_size=151552,
            hidden_size=4096,
            intermediate_size=13696,
            num_hidden_layers=40,
            num_attention_heads=32,
            num_key_value_heads=2,
            head_dim=128,
            attention_bias=True,
            max_position_embeddings=8192,
            rms_norm_eps=1.5625e-07,
        ),
        "vae": dict(
            block_out_channels=[128, 512, 1024, 1024],
            layers_per_block=3,
            latent_channels=16,
            down_block_types=["DownEncoderBlock2D"] * 4,
            up_block_types=["UpDecoderBlock2D"] * 4,
            norm_num_groups=32,
            use_quant_conv=False,
            use_post_quant_conv=False,
            mid_block_add_attention=False,
            scaling_factor=1.0,
            shift_factor=0.0,
            sample_size=1024,
        ),
    },
    # lodestones/Chroma1-HD: transformer/config.json (FLUX.1-schnell-shaped, 19 + 38 blocks, the 5-layer 5120-wide
    # modulation approximator replacing per-block AdaLN), text_encoder (T5-XXL), vae (FLUX.1's).
    "chroma": {
        "transformer": dict(
            patch_size=1,
            in_channels=64,
            out_channels=None,
            num_layers=19,
            num_single_layers=38,
            attention_head_dim=128,
            num_attention_heads=24,
            joint_attention_dim=4096,
            axes_dims_rope=[16, 56, 56],
            approximator_num_channels=64,
            approximator_hidden_dim=5120,
            approximator_layers=5,
        ),
        "text_encoder": T5_XXL,
        "vae": FLUX_VAE,
    },
}

# Published parameter counts, billions (model cards; counted from the released safetensors where the card is silent).
PARAMS = {
    "flux": {"transformer": 11.90, "text_encoder": 0.123, "text_encoder_2": 4.76, "vae": 0.084},
    # Card: 12B rectified-flow transformer; same count as FLUX.1-dev.
    "flux_kontext": {"transformer": 11.90, "text_encoder": 0.123, "text_encoder_2": 4.76, "vae": 0.084},
    # Released as an 8B model: 8.16B counted on the config above (FLUX.1's blocks, 8 of its 19 double ones).
    "flex2": {"transformer": 8.16, "text_encoder": 0.123, "text_encoder_2": 4.76, "vae": 0.084},
    # Model card: "860M UNet and 123M text encoder"; VAE as FLUX's row (same KL-f8 body).
    "sd1": {"unet": 0.86, "text_encoder": 0.123, "vae": 0.084},
    # Card: 865M UNet (SD 1's count less its 768-wide cross-attention inputs plus 1024-wide ones). The card gives no
    # size for the text tower: 0.340B counted on its published config (23 layers of 1024, the 49408-token table).
    "sd2": {"unet": 0.865, "text_encoder": 0.340, "vae": 0.084},
    # SDXL report/card: 2.567B UNet; CLIP-L 0.123B; OpenCLIP bigG text tower with projection 0.695B.
    "sdxl": {"unet": 2.567, "text_encoder": 0.123, "text_encoder_2": 0.695, "vae": 0.084},
    # Card: 8.1B MMDiT. The CLIP towers here carry their projection (CLIP-L 0.124B with it).
    "sd3": {"transformer": 8.1, "text_encoder": 0.124, "text_encoder_2": 0.695, "text_encoder_3": 4.76, "vae": 0.084},
    # Card: 0.6B (PixArt-Sigma paper/card); T5 v1.1 XXL encoder as FLUX's row.
    "pixart_sigma": {"transformer": 0.6, "text_encoder": 4.76, "vae": 0.084},
    # fal blog/card: 6.8B. The card gives no size for the Pile-T5-XL encoder half: 1.22B counted on its published
    # config (embeddings 32128 x 2048 + 24 UMT5 layers).
    "auraflow": {"transformer": 6.8, "text_encoder": 1.22, "vae": 0.084},
    # Card: 2.6B Next-DiT; google/gemma-2-2b card 2.6B (2,614,341,888 without an LM head, which Gemma-2 ties anyway).
    "lumina2": {"transformer": 2.6, "text_encoder": 2.61, "vae": 0.084},
    # The card says "6B" (rounded): 6.37B is the count of the architecture diffusers' converter loads the released
    # weights into with strict=True, as is the VAE's 0.406B (not checked against the safetensors byte size).
    # GLM-4-9B card: 9.4B, less its untied 151552 x 4096 LM head (0.62B) that GlmModel does not have.
    "cogview4": {"transformer": 6.37, "text_encoder": 8.78, "vae": 0.406},
    # Card: 8.9B.
    "chroma": {"transformer": 8.9, "text_encoder": 4.76, "vae": 0.084},
}

# Segmind's distilled SDXLs keep SDXL's text encoders, VAE and UNet widths and drop blocks: the keys their unet
# config.json sets beside SDXL's (segmind/SSD-1B, segmind/Segmind-Vega; the blocks each file holds are also listed
# in ostris/ai-toolkit's toolkit/keymaps/stable_diffusion_ssd.json and _vega.json, and ComfyUI's SSD1B and
# Segmind_Vega configs in comfy/supported_models.py give the same transformer depths). The mid-block is one ResNet.
REAL["ssd"] = dict(
    REAL["sdxl"],
    unet=dict(
        REAL["sdxl"]["unet"],
        transformer_layers_per_block=[1, 2, 4],
        reverse_transformer_layers_per_block=[[4, 4, 10], [2, 1, 1], [1, 1, 1]],
        mid_block_type="UNetMidBlock2D",
    ),
)
# SSD-1B and Segmind-Vega paper (arXiv 2401.02677): a 1.3B UNet; encoders and VAE as SDXL's row.
PARAMS["ssd"] = dict(PARAMS["sdxl"], unet=1.3)
REAL["vega"] = dict(
    REAL["sdxl"],
    unet=dict(REAL["sdxl"]["unet"], transformer_layers_per_block=[1, 1, 2], mid_block_type="UNetMidBlock2D"),
)
# The same paper: a 0.74B UNet.
PARAMS["vega"] = dict(PARAMS["sdxl"], unet=0.74)
# PixArt-alpha/PixArt-XL-2-1024-MS: transformer/config.json (XL/2 as PixArt-Sigma's: 28 layers of 16 x 72; sample_size
# 128, which turns on the resolution and aspect-ratio embedders, and position interpolation 2), text_encoder (T5 v1.1
# XXL, 120 tokens), vae (stabilityai/sd-vae-ft-ema: SD's KL-f8, scaling 0.18215).
REAL["pixart"] = {
    "transformer": dict(REAL["pixart_sigma"]["transformer"], use_additional_conditions=True),
    "text_encoder": T5_XXL,
    "vae": dict(SDXL_VAE, scaling_factor=0.18215, sample_size=256),
}
# Card: 0.6B (PixArt-alpha paper: 0.6B, the size embedders included); T5 and VAE as PixArt-Sigma's rows.
PARAMS["pixart"] = dict(PARAMS["pixart_sigma"])
# Chroma1-Radiance (lodestones/Chroma1-Radiance.safetensors, no config of its own): Chroma1-HD's trunk config, which
# the engine reads from the extras, with the radiance input and head as AI Toolkit's chroma_params give them
# (extensions_built_in/diffusion_models/chroma/src/radiance.py: 16 px patches, NeRF width 64, mlp ratio 4, 4 blocks,
# 8 frequencies); T5-XXL as Chroma's; no VAE.
REAL["chroma_radiance"] = {
    "transformer": dict(
        {
            k: v
            for k, v in REAL["chroma"]["transformer"].items()
            if k not in ("patch_size", "in_channels", "out_channels")
        },
        in_channels=768,
        nerf_hidden_size=64,
        nerf_mlp_ratio=4,
        nerf_depth=4,
        nerf_max_freqs=8,
    ),
    "text_encoder": T5_XXL,
}
# 9.51B counted: Chroma's 8.9B less its input and output projections, plus the 16 px patch convolution (7.1M) and the
# NeRF head (four 151M weight generators from a token, 0.60B). T5 as Chroma's.
PARAMS["chroma_radiance"] = {"transformer": 9.51, "text_encoder": 4.76}
