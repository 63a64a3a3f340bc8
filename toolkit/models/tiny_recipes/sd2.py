"""Tiny Stable Diffusion 2.x (toolkit/models/archs/sd2.py): what makes it SD 2 rather than SD 1 in small, i.e. a
UNet with linear projections and a head count per block (stabilityai/stable-diffusion-2-1's attention_head_dim
[5, 10, 20, 20]), a GELU CLIP text tower (OpenCLIP-H), and a v-prediction DDIM scheduler as the checkpoint ships."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def openclip_text_encoder(tok, hidden: int = 32):
    """tiny_parts.clip_text_encoder's tower with OpenCLIP's GELU, not OpenAI CLIP's quick_gelu (SD 2's
    text_encoder/config.json says hidden_act "gelu")."""
    from transformers import CLIPTextModel

    config = tiny_parts.clip_text_encoder(tok, hidden=hidden).config
    config.hidden_act = "gelu"
    tiny_parts.seeded()
    return CLIPTextModel(config).eval()


def build_tiny(variant=None):
    from diffusers import DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel

    tok = tiny_parts.clip_tokenizer()
    te = openclip_text_encoder(tok)
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    unet = UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        attention_head_dim=(2, 4),  # per block, as SD 2's config lists them
        use_linear_projection=True,
        cross_attention_dim=32,  # == the text encoder's hidden size
        norm_num_groups=32,
    ).eval()
    vae = tiny_parts.vae_kl(latent_channels=4, scaling_factor=0.18215)
    sched = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
        prediction_type="v_prediction",
    )
    return StableDiffusionPipeline(
        vae=vae,
        text_encoder=te,
        tokenizer=tok,
        unet=unet,
        scheduler=sched,
        safety_checker=None,
        feature_extractor=None,
        image_encoder=None,
        requires_safety_checker=False,
    )
