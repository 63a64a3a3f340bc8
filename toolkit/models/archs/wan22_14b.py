"""Wan 2.2 A14B text-to-video: two experts in Wan 2.1's 16-channel latent space (8x spatial, 4x temporal).

``transformer`` (high noise) denoises while ``t >= boundary_ratio * 1000``, then ``transformer_2`` (low noise)
takes over; both are the checkpoint's denoisers, so both come from ``name_or_path``. The swap happens inside
the pipeline's loop: the step hook still sees one scheduler step per denoising step.
"""

from toolkit.models import tiny
from toolkit.models.archs.wan21 import WAN21_RGB_BIAS, WAN21_RGB_FACTORS, Wan21Model
from toolkit.models.base_model import Component, LatentSpec

WAN_COMPONENTS = {
    "transformer": Component("diffusers.WanTransformer3DModel", "transformer", source="main"),
    "transformer_2": Component("diffusers.WanTransformer3DModel", "transformer_2", source="main"),
    "text_encoder": Component("transformers.UMT5EncoderModel", "text_encoder"),
    "tokenizer": Component("transformers.T5Tokenizer", "tokenizer", has_weights=False),
    "vae": Component("diffusers.AutoencoderKLWan", "vae"),
    "scheduler": Component("auto", "scheduler", has_weights=False),
}


def tiny_wan_expert(variant, expert: int, in_channels: int = 16):
    """A tiny Wan transformer; the two experts of one checkpoint differ by seed, and so do variants."""
    from diffusers import WanTransformer3DModel

    tiny.seeded(tiny.variant_seed(variant) + expert)
    return WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=in_channels,
        out_channels=16,
        text_dim=32,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32,
    ).eval()


def tiny_wan21_shared():
    """UMT5 tokenizer + encoder and the 16-channel VAE, built exactly as wan21's recipe builds them."""
    from diffusers import AutoencoderKLWan

    tok = tiny.t5_tokenizer()
    te = tiny.t5_text_encoder(tok, d_model=32, umt5=True)
    tiny.seeded()
    vae = AutoencoderKLWan(
        base_dim=8, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True]
    ).eval()
    return tok, te, vae


class Wan2214bModel(Wan21Model):
    arch = "wan22_14b"
    description = "Wan 2.2 A14B text-to-video (high/low-noise experts)"
    pipeline_class = "WanPipeline"
    components = WAN_COMPONENTS
    # The real model_index.json says boundary_ratio 0.875; build_pipeline() assembles from components, so pass it.
    pipeline_init_kwargs = dict(boundary_ratio=0.875, expand_timesteps=False)
    # A14B latents are Wan 2.1's (ComfyUI runs A14B on latent_formats.Wan21): not Wan22's 48-channel factors.
    latent = LatentSpec(
        "BCFHW",
        16,
        spatial_factor=8,
        temporal_factor=4,
        rgb_factors=WAN21_RGB_FACTORS,
        rgb_bias=WAN21_RGB_BIAS,
        factors_source="ComfyUI Wan21",
    )
    divisibility = 16
    native_resolution = 1280
    # guidance_scale drives the high-noise expert; pass extra_kwargs guidance_scale_2 (real default 3.0) for the
    # low-noise one, else the pipeline reuses guidance_scale.
    defaults = dict(
        width=1280, height=720, num_inference_steps=40, guidance_scale=4.0, num_frames=81, fps=16, output_ext="mp4"
    )

    def lora_load_kwargs(self, path: str) -> dict:
        """AI Toolkit saves a Wan 2.2 A14B LoRA as two files (docs/LORA_FORMATS.md): ``<name>_high_noise`` for the
        first expert (the high-noise steps), ``<name>_low_noise`` for the second. Any other file goes to the
        first expert, as diffusers loads it."""
        return {"load_into_transformer_2": True} if path.endswith("_low_noise.safetensors") else {}

    @staticmethod
    def build_tiny(variant=None):
        from diffusers import UniPCMultistepScheduler, WanPipeline

        tok, te, vae = tiny_wan21_shared()
        sched = UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=12.0)
        return WanPipeline(
            tokenizer=tok,
            text_encoder=te,
            vae=vae,
            scheduler=sched,
            transformer=tiny_wan_expert(variant, 0),
            transformer_2=tiny_wan_expert(variant, 1),
            boundary_ratio=0.875,
            expand_timesteps=False,
        )
