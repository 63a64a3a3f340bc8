"""FLUX.2 [dev]: Flux.2 transformer with a Mistral-Small-3.1 (Mistral3) text encoder on the 32-channel VAE.

Latents are packed and BatchNorm-normalised like Klein's (see flux2_klein.py); streamed as B, 32, H/8, W/8.
"""

from toolkit.memory_plan import WorkingSet
from toolkit.models.archs.flux2_klein import FLUX2_LATENT, unpack_flux2_latents
from toolkit.models.base_model import BaseModel, Component


class Flux2Model(BaseModel):
    arch = "flux2"
    modality = "image"
    description = "FLUX.2 [dev] (Mistral-Small-3.1 text encoder)"
    # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx).
    hub_id = "black-forest-labs/FLUX.2-dev"
    pipeline_class = "Flux2Pipeline"
    starts_from_latents = True  # image-to-image on its own pipeline (toolkit/models/latent_start.py)
    components = {
        "transformer": Component("diffusers.Flux2Transformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.Mistral3ForConditionalGeneration", "text_encoder"),
        # The repo's "tokenizer" folder is a PixtralProcessor (tokenizer + chat template + image processor);
        # transformers only builds that with torchvision, and prompts only need its text half.
        "tokenizer": Component("toolkit.models.processors.MistralTextProcessor", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLFlux2", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    latent = FLUX2_LATENT
    divisibility = 16
    native_resolution = 1024
    # Guidance-distilled: guidance_scale is an embedding, not CFG (no negative prompt).
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=4.0, output_ext="png")
    # Measured at 1024x1024, everything resident (docs/MEASURED.md "FLUX.2-dev's sampling working set"): sampling
    # 1.17 GiB over the weights, above the default's 0.88 (its 6144-wide stream carries twice Flux.1's activations
    # per token); fitted with ~15 % margin.
    working_set = WorkingSet(per_position=68 * 1024)

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
        from diffusers import Flux2Pipeline

        return unpack_flux2_latents(Flux2Pipeline, self.parts["vae"], latents, gen.height, gen.width)
