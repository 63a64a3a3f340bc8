"""ERNIE-Image: Baidu's 8B single-stream DiT with a Ministral-3 (Mistral3) text encoder on the FLUX.2 VAE.

The loop samples B, 128, H/16, W/16: the 32-channel VAE latent, 2x2-patchified into channels and normalised with
the VAE's BatchNorm statistics. Streamed latents are put back the way the pipeline does before decoding
(BatchNorm de-normalisation, un-patchify): B, 32, H/8, W/8, FLUX.2's latent space, which ComfyUI previews with
its Flux2 format (comfy/supported_models.py, ErnieImage).
"""

from toolkit.memory_plan import WorkingSet
from toolkit.models.archs.flux2_klein import FLUX2_LATENT
from toolkit.models.base_model import BaseModel, Component

# ErnieImagePipeline.__call__ de-normalises with this epsilon, not the VAE config's batch_norm_eps (its comment:
# the hub config differs from the trained value).
BN_EPS = 1e-5


class ErnieImageModel(BaseModel):
    arch = "ernie_image"
    modality = "image"
    group = "image"
    hub_id = "baidu/ERNIE-Image"
    description = "ERNIE-Image (Baidu, 8B single-stream DiT)"
    pipeline_class = "ErnieImagePipeline"
    components = {
        "transformer": Component("diffusers.ErnieImageTransformer2DModel", "transformer", source="main"),
        # text_encoder/config.json names Mistral3Model (Ministral-3 3B with its Pixtral tower, which text never runs)
        "text_encoder": Component("transformers.Mistral3Model", "text_encoder"),
        "tokenizer": Component("transformers.AutoTokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLFlux2", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    latent = FLUX2_LATENT
    divisibility = 16  # the pipeline's vae_scale_factor: 8x VAE x 2x2 patches (the DiT's own patch is 1)
    native_resolution = 1024
    # Model card (SFT checkpoint): 50 steps at guidance 4.0, 1024x1024; CFG runs whenever guidance > 1.
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=4.0, output_ext="png")
    # Not measured yet: FLUX.2 [dev]'s measured 68 KiB per position (flux2.py) scaled by ERNIE's widths (4096 /
    # 12288 against 6144 / 18432: 2/3) and by the CFG batch of two the pipeline runs in one forward.
    working_set = WorkingSet(per_position=90 * 1024)
    # Image-to-image and inpainting on its own pipeline (toolkit/models/latent_start.py). ErnieImagePipeline draws
    # its noise inline (it has no prepare_latents to start from), so the family draws the same noise itself, through
    # a prepare_latents of the pipeline's (``ernie_prepare_latents``), and hands it in as ``latents``.
    starts_from_latents = True

    def build_pipeline(self):
        import types

        pipe = super().build_pipeline()
        pipe.prepare_latents = types.MethodType(ernie_prepare_latents, pipe)
        return pipe

    def sample_media(self, pipeline, gen, generator):
        """As every family, with the starting noise drawn before the call (the pipeline's own draw, made here)."""
        kwargs = self.call_kwargs(pipeline, gen)
        kwargs["latents"] = pipeline.prepare_latents(gen.height, gen.width, generator)
        output = pipeline(**kwargs, generator=generator, output_type=self.pixel_output)
        return self.to_media(output, gen)

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or "",
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            # The release's optional prompt enhancer (pe/, a causal LM that rewrites the prompt) is not loaded:
            # AI Toolkit samples without it, and a rewritten prompt would not be the one the request names.
            use_pe=False,
            **gen.extra_kwargs,
        )

    def unpack_latents(self, latents, gen):
        import torch
        from diffusers import ErnieImagePipeline

        bn = self.parts["vae"].bn
        mean = bn.running_mean.view(1, -1, 1, 1).to(latents.device, latents.dtype)
        std = torch.sqrt(bn.running_var.view(1, -1, 1, 1) + BN_EPS).to(latents.device, latents.dtype)
        return ErnieImagePipeline._unpatchify_latents(latents * std + mean)


def ernie_prepare_latents(pipe, height: int, width: int, generator):
    """The noise ErnieImagePipeline.__call__ draws when given no latents: the same shape, generator, device and
    dtype, so a text-to-image request is the same picture either way."""
    from diffusers.utils.torch_utils import randn_tensor

    shape = (1, pipe.transformer.config.in_channels, height // pipe.vae_scale_factor, width // pipe.vae_scale_factor)
    return randn_tensor(shape, generator=generator, device=pipe._execution_device, dtype=pipe.transformer.dtype)
