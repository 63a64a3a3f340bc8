"""Image families at real size. Values are from each model's published config.json (source in the comment)."""

# CLIP ViT-L/14 text tower (openai/clip-vit-large-patch14 config.json, text_config), as FLUX.1/SD3 ship it.
CLIP_L = dict(vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
              max_position_embeddings=77, hidden_act="quick_gelu", projection_dim=768)
# T5 v1.1 XXL encoder (google/t5-v1_1-xxl config.json), as FLUX.1 ships it in text_encoder_2.
T5_XXL = dict(vocab_size=32128, d_model=4096, d_kv=64, d_ff=10240, num_layers=24, num_heads=64,
              feed_forward_proj="gated-gelu", relative_attention_num_buckets=32)
# FLUX.1's VAE (black-forest-labs/FLUX.1-dev vae/config.json).
FLUX_VAE = dict(block_out_channels=[128, 256, 512, 512], layers_per_block=2, latent_channels=16,
                down_block_types=["DownEncoderBlock2D"] * 4, up_block_types=["UpDecoderBlock2D"] * 4,
                norm_num_groups=32, use_quant_conv=False, use_post_quant_conv=False, scaling_factor=0.3611,
                shift_factor=0.1159, sample_size=1024)

REAL = {
    # black-forest-labs/FLUX.1-dev: transformer/config.json, text_encoder (CLIP-L), text_encoder_2 (T5-XXL), vae.
    "flux": {
        "transformer": dict(patch_size=1, in_channels=64, num_layers=19, num_single_layers=38, attention_head_dim=128,
                            num_attention_heads=24, joint_attention_dim=4096, pooled_projection_dim=768,
                            guidance_embeds=True, axes_dims_rope=[16, 56, 56]),
        "text_encoder": CLIP_L,
        "text_encoder_2": T5_XXL,
        "vae": FLUX_VAE,
    },
}

# Published parameter counts, billions (model cards; counted from the released safetensors where the card is silent).
PARAMS = {
    "flux": {"transformer": 11.90, "text_encoder": 0.123, "text_encoder_2": 4.76, "vae": 0.084},
}
