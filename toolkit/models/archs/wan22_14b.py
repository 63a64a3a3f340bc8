"""Wan 2.2 A14B text-to-video: two experts in Wan 2.1's 16-channel latent space (8x spatial, 4x temporal).

``transformer`` (high noise) denoises while ``t >= boundary_ratio * 1000``, then ``transformer_2`` (low noise)
takes over; both are the checkpoint's denoisers, so both come from ``name_or_path``. The swap happens inside
the pipeline's loop: the step hook still sees one scheduler step per denoising step.
"""

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


class Wan2214bModel(Wan21Model):
    arch = "wan22_14b"
    description = "Wan 2.2 A14B text-to-video (high/low-noise experts)"
    # AI Toolkit's UI offers it as wan22_14b:t2v: its bf16 copy of Wan-AI/Wan2.2-T2V-A14B-Diffusers.
    hub_id = "ai-toolkit/Wan2.2-T2V-A14B-Diffusers-bf16"
    tags = {"t2v": {"hub_id": "ai-toolkit/Wan2.2-T2V-A14B-Diffusers-bf16", "description": "Wan 2.2 T2V A14B"}}
    pipeline_class = "WanPipeline"
    # sample.init_video on its own pipeline (toolkit/models/latent_start.py): WanVideoToVideoPipeline drives one
    # transformer, not the high- and low-noise pair, which WanPipeline switches between by timestep.
    vid2vid_pipeline = None
    vid2vid_own = True
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
