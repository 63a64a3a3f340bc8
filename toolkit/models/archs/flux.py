"""Flux.1: flow-matching transformer whose pipeline packs 16-channel latents into 2x2 tokens."""

from toolkit.memory_plan import WorkingSet
from toolkit.models.base_model import BaseModel, Component, LatentSpec

# ComfyUI latent_formats.Flux (comfy/latent_formats.py). They apply to (x - 0.1159) * 0.3611, which is the
# space diffusers' Flux loop works in once the 2x2 packing is undone.
FLUX_RGB_FACTORS = (
    (-0.0346, 0.0244, 0.0681),
    (0.0034, 0.0210, 0.0687),
    (0.0275, -0.0668, -0.0433),
    (-0.0174, 0.0160, 0.0617),
    (0.0859, 0.0721, 0.0329),
    (0.0004, 0.0383, 0.0115),
    (0.0405, 0.0861, 0.0915),
    (-0.0236, -0.0185, -0.0259),
    (-0.0245, 0.0250, 0.1180),
    (0.1008, 0.0755, -0.0421),
    (-0.0515, 0.0201, 0.0011),
    (0.0428, -0.0012, -0.0036),
    (0.0817, 0.0765, 0.0749),
    (-0.1264, -0.0522, -0.1103),
    (-0.0280, -0.0881, -0.0499),
    (-0.1262, -0.0982, -0.0778),
)
FLUX_RGB_BIAS = (-0.0329, -0.0718, -0.0851)


class FluxModel(BaseModel):
    arch = "flux"
    quality_8bit_db = {"float8": 44.0, "float8dq": 43.7}  # vs bf16, random-init weights: family_sweep.py --quality
    modality = "image"
    description = "FLUX.1 (dev / schnell)"
    # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx).
    hub_id = "black-forest-labs/FLUX.1-dev"
    pipeline_class = "FluxPipeline"
    img2img_pipeline, inpaint_pipeline = "FluxImg2ImgPipeline", "FluxInpaintPipeline"
    # FLUX.1 Fill: 64 packed latent channels + 64 of the masked image + 256 of the mask (8x8, 2x2-packed)
    fill_channels, fill_pipeline = 384, "FluxFillPipeline"
    components = {
        "transformer": Component("diffusers.FluxTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.CLIPTextModel", "text_encoder"),
        "tokenizer": Component("transformers.CLIPTokenizer", "tokenizer", has_weights=False),
        "text_encoder_2": Component("transformers.T5EncoderModel", "text_encoder_2"),
        "tokenizer_2": Component("transformers.T5Tokenizer", "tokenizer_2", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    pipeline_init_kwargs = dict(image_encoder=None, feature_extractor=None)
    latent = LatentSpec(
        "BCHW",
        16,
        spatial_factor=8,
        rgb_factors=FLUX_RGB_FACTORS,
        rgb_bias=FLUX_RGB_BIAS,
        scale=0.3611,
        shift=0.1159,
        factors_source="ComfyUI Flux",
    )
    divisibility = 16
    native_resolution = 1024
    defaults = dict(width=1024, height=1024, num_inference_steps=28, guidance_scale=3.5, output_ext="png")
    step_cache = "magcache_flux"  # diffusers' MagCache with its Flux.1 ratios (docs/BENCHMARKS.md "Fast tiers")
    # Measured at 1024x1024 (testing/test_working_sets.py): sampling 0.49 GiB over the weights, below the default's
    # 0.88: the 24 GiB plan that lets the 22.2 GiB transformer visit in bf16 (1.00x the full card's step) fits only with
    # the measured figure.
    working_set = WorkingSet(per_position=20 * 1024)

    def pipeline_kwargs(self, gen):
        # Flux-dev is guidance-distilled: guidance_scale is an embedding, not CFG, so no negative prompt.
        return dict(
            prompt=gen.prompt,
            prompt_2=gen.prompt_2,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            max_sequence_length=512,
            **gen.extra_kwargs,
        )

    def unpack_latents(self, latents, gen):
        from diffusers import FluxPipeline

        return FluxPipeline._unpack_latents(latents, gen.height, gen.width, self.latent.spatial_factor)
