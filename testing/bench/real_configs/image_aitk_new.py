"""Image families AI Toolkit added after the first set (ERNIE-Image, Krea 2, Nucleus-Image, Ideogram 4, Anima) at
real size. Each value names where it comes from: the published config.json where a public copy of it could be
read, else the diffusers class defaults its docstring calls the release's, else AI Toolkit's own model file.

Token ids stay as the tiny checkpoint has them (they belong to the tiny tokenizer, which the real build keeps);
``rope_parameters`` is transformers 5's spelling of a published ``rope_theta`` + ``rope_scaling`` pair.
"""

from testing.bench.real_configs.image_large import FLUX2_VAE

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

REAL = {
    # baidu/ERNIE-Image: transformer, text_encoder (Mistral3Model), vae (AutoencoderKLFlux2 as FLUX.2's: the
    # release's vae/config.json lists FLUX.2's block channels, 32 latent channels and 2x2 patches).
    "ernie_image": {
        "transformer": ERNIE_IMAGE_TRANSFORMER,
        "text_encoder": MINISTRAL3_3B_VL,
        "vae": FLUX2_VAE,
    },
}

# Published sizes, billions (model cards), checked against the configs above on meta tensors within 3 %.
PARAMS = {
    # Card: "8B" DiT; Ministral 3 3B: 3.4B language model + 0.4B vision encoder (counted: 3.85B with the projector
    # and the 131072-token embedding); FLUX.2's VAE as in image_large.py.
    "ernie_image": {"transformer": 8.0, "text_encoder": 3.85, "vae": 0.084},
}
