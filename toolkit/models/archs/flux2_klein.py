"""FLUX.2 [klein] 4B / 9B: Flux.2 transformer with a Qwen3 text encoder on the 32-channel Flux.2 VAE.

The loop samples packed tokens (B, H/16 * W/16, 128): the 32-channel VAE latent, 2x2-patchified into channels
and normalised with the VAE's BatchNorm statistics. Streamed latents are unpacked the way the pipeline does
before decoding (tokens -> 128 x H/16 x W/16, BatchNorm denormalisation, un-patchify): B, 32, H/8, W/8.
"""

from toolkit.models.base_model import BaseModel, Component, LatentSpec

# ComfyUI latent_formats.Flux2 (comfy/latent_formats.py): 32 x 3, applied after its
# latent_rgb_factors_reshape, i.e. on the un-patchified 32-channel map; the bias equals Flux.1's.
FLUX2_RGB_FACTORS = (
    (0.0058, 0.0113, 0.0073),
    (0.0495, 0.0443, 0.0836),
    (-0.0099, 0.0096, 0.0644),
    (0.2144, 0.3009, 0.3652),
    (0.0166, -0.0039, -0.0054),
    (0.0157, 0.0103, -0.0160),
    (-0.0398, 0.0902, -0.0235),
    (-0.0052, 0.0095, 0.0109),
    (-0.3527, -0.2712, -0.1666),
    (-0.0301, -0.0356, -0.0180),
    (-0.0107, 0.0078, 0.0013),
    (0.0746, 0.0090, -0.0941),
    (0.0156, 0.0169, 0.0070),
    (-0.0034, -0.0040, -0.0114),
    (0.0032, 0.0181, 0.0080),
    (-0.0939, -0.0008, 0.0186),
    (0.0018, 0.0043, 0.0104),
    (0.0284, 0.0056, -0.0127),
    (-0.0024, -0.0022, -0.0030),
    (0.1207, -0.0026, 0.0065),
    (0.0128, 0.0101, 0.0142),
    (0.0137, -0.0072, -0.0007),
    (0.0095, 0.0092, -0.0059),
    (0.0000, -0.0077, -0.0049),
    (-0.0465, -0.0204, -0.0312),
    (0.0095, 0.0012, -0.0066),
    (0.0290, -0.0034, 0.0025),
    (0.0220, 0.0169, -0.0048),
    (-0.0332, -0.0457, -0.0468),
    (-0.0085, 0.0389, 0.0609),
    (-0.0076, 0.0003, -0.0043),
    (-0.0111, -0.0460, -0.0614),
)
FLUX2_RGB_BIAS = (-0.0329, -0.0718, -0.0851)
FLUX2_LATENT = LatentSpec(
    "BCHW", 32, spatial_factor=8, rgb_factors=FLUX2_RGB_FACTORS, rgb_bias=FLUX2_RGB_BIAS, factors_source="ComfyUI Flux2"
)


def unpack_flux2_latents(pipeline_class, vae, latents, height: int, width: int):
    """Packed Flux.2 tokens -> B, 32, H/8, W/8 exactly as ``pipeline_class.__call__`` does before decoding."""
    import torch

    h, w = height // 16, width // 16
    ids = pipeline_class._prepare_latent_ids(latents.new_empty(latents.shape[0], latents.shape[2], h, w))
    x = pipeline_class._unpack_latents_with_ids(latents, ids.to(latents.device))
    mean = vae.bn.running_mean.view(1, -1, 1, 1).to(x.device, x.dtype)
    std = torch.sqrt(vae.bn.running_var.view(1, -1, 1, 1) + vae.config.batch_norm_eps).to(x.device, x.dtype)
    return pipeline_class._unpatchify_latents(x * std + mean)


class Flux2KleinModel(BaseModel):
    """Shared by the 4B and 9B classes: they differ in the Qwen3 size (3 x hidden = joint_attention_dim)."""

    modality = "image"
    pipeline_class = "Flux2KleinPipeline"
    inpaint_pipeline = "Flux2KleinInpaintPipeline"
    starts_from_latents = True  # image-to-image on its own pipeline (toolkit/models/latent_start.py)
    components = {
        "transformer": Component("diffusers.Flux2Transformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.Qwen3ForCausalLM", "text_encoder"),
        "tokenizer": Component("transformers.Qwen2Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLFlux2", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    latent = FLUX2_LATENT
    divisibility = 16
    native_resolution = 1024
    # The base checkpoints' settings (50 steps, CFG 4); the step-distilled ones ignore CFG (is_distilled).
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=4.0, output_ext="png")

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            **gen.extra_kwargs,
        )

    def unpack_latents(self, latents, gen):
        from diffusers import Flux2KleinPipeline

        return unpack_flux2_latents(Flux2KleinPipeline, self.parts["vae"], latents, gen.height, gen.width)


class Flux2Klein4BModel(Flux2KleinModel):
    arch = "flux2_klein_4b"
    description = "FLUX.2 [klein] 4B (Qwen3-4B text encoder)"
    # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx): the base (undistilled) model.
    hub_id = "black-forest-labs/FLUX.2-klein-base-4B"


class Flux2Klein9BModel(Flux2KleinModel):
    arch = "flux2_klein_9b"
    description = "FLUX.2 [klein] 9B (Qwen3-8B text encoder)"
    # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx): the base (undistilled) model.
    hub_id = "black-forest-labs/FLUX.2-klein-base-9B"
