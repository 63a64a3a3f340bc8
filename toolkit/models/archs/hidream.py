"""HiDream-I1: sparse (MoE) DiT with four text encoders (two CLIPs, T5, Llama 3.1) on Flux.1's VAE, BCHW latents."""

import math

from toolkit.memory_plan import WorkingSet
from toolkit.models.archs.flux import FLUX_RGB_BIAS, FLUX_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class HiDreamModel(BaseModel):
    arch = "hidream"
    modality = "image"
    description = "HiDream-I1 (Full / Dev / Fast)"
    # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx).
    hub_id = "HiDream-ai/HiDream-I1-Full"
    pipeline_class = "HiDreamImagePipeline"
    starts_from_latents = True  # image-to-image on its own pipeline (toolkit/models/latent_start.py)
    # Its Llama states arrive stacked by layer ahead of the batch (layers, batch, tokens, dim): nothing tells
    # that dimension from a batch of one layer's worth, so requests run alone (toolkit/models/step_batching.py).
    batchable = False
    components = {
        "transformer": Component("diffusers.HiDreamImageTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.CLIPTextModelWithProjection", "text_encoder"),
        "tokenizer": Component("transformers.CLIPTokenizer", "tokenizer", has_weights=False),
        "text_encoder_2": Component("transformers.CLIPTextModelWithProjection", "text_encoder_2"),
        "tokenizer_2": Component("transformers.CLIPTokenizer", "tokenizer_2", has_weights=False),
        "text_encoder_3": Component("transformers.T5EncoderModel", "text_encoder_3"),
        "tokenizer_3": Component("transformers.T5Tokenizer", "tokenizer_3", has_weights=False),
        # Llama 3.1 8B Instruct. HiDream's repos do not ship it: the extras folder must hold these two roles
        # (diffusers' examples load them from meta-llama/Llama-3.1-8B-Instruct and pass them in).
        "text_encoder_4": Component("transformers.LlamaForCausalLM", "text_encoder_4"),
        "tokenizer_4": Component("transformers.AutoTokenizer", "tokenizer_4", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # Flux.1's VAE; ComfyUI previews HiDream with latent_formats.Flux (comfy/supported_models.py). The pipeline keeps
    # B,16,H/8,W/8 latents (patchified inside the transformer) in the (x - 0.1159) * 0.3611 space.
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
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=5.0, output_ext="png")
    # Measured at 1024x1024 (testing/test_working_sets.py): sampling 1.07 GiB over the weights (the MoE's routing
    # buffers): 52 KB per latent position beyond the base.
    working_set = WorkingSet(per_position=60 * 1024)
    # At 24 GiB (1024², 8 steps; full card 0.355 s/step): float8 weights and activations 0.577 s/step, float8 weights
    # only 0.496 (docs/MEASURED.md "HiDream's float8 activations"). Its MoE routes a different token count to each
    # expert at every layer and step, so the activation path quantizes many small, ragged matrices.
    float8_activations = False

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            prompt_2=gen.prompt_2,
            negative_prompt=gen.negative_prompt or None,
            negative_prompt_2=gen.negative_prompt_2 or None,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            **gen.extra_kwargs,
        )

    def sample_media(self, pipeline, gen, generator):
        # HiDreamImagePipeline rescales every request to the area default_sample_size^2 (1 MP) at the requested
        # aspect; the engine honours the requested (snapped) size instead, so the streamed latents and the saved
        # image have the shape the client was told. A hair above 1.0 keeps the pipeline's floor-to-16 exact.
        saved = pipeline.default_sample_size
        pipeline.default_sample_size = math.sqrt(gen.width * gen.height) / pipeline.vae_scale_factor * (1 + 1e-9)
        try:
            return super().sample_media(pipeline, gen, generator)
        finally:
            pipeline.default_sample_size = saved
