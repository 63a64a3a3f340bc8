"""Anima: a 2B Cosmos-Predict2 DiT for anime and illustration, conditioned through an LLM adapter (Qwen3-0.6B
hidden states cross-attended from T5 token embeddings), on the Qwen-Image VAE.

diffusers has Anima as a modular pipeline only (AnimaModularPipeline over AnimaAutoBlocks). The engine drives it
as every family: each component is loaded by the family's own loader and pool from the release's subfolders
(transformer, text_conditioner, text_encoder, tokenizer, t5_tokenizer, vae, scheduler), then handed to the blocks
with ``update_components``; the guider and image processor are built from their default configs. Per-step
latents come through the same hook as for classic pipelines: the denoise loop's after-denoiser block calls
``components.scheduler.step``, and ``components`` is the pipeline whose ``scheduler`` the hook wraps.

The loop's latents are B, 16, 1, H/8, W/8 in the VAE's normalised space ((x - mean) / std); streamed without the
frame axis, previewed with ComfyUI's Wan21 format (comfy/supported_models.py, Anima).
"""

import contextlib

from toolkit.models import from_image
from toolkit.models.archs.wan21 import WAN21_RGB_BIAS, WAN21_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec

# Model card: 30-50 steps at CFG 4-5, about 1 MP. AI Toolkit's UI fills in this negative prompt for Anima.
NEGATIVE = (
    "worst quality, low quality, score_1, score_2, score_3, blurry, jpeg artifacts, sepia, signature, artist name"
)
# Model CPU offload order for the ``visit`` placements (toolkit/models/offload.py reads it from the pipeline):
# the modular pipeline has none of its own.
OFFLOAD_SEQUENCE = "text_encoder->text_conditioner->transformer->vae"


def cosmos_padding_mask_without_torchvision() -> None:
    """diffusers' Cosmos transformer imports torchvision only for ``transforms.functional.resize`` of its padding
    mask at NEAREST, and the engine does not install torchvision (no other family needs it). For a tensor that
    resize is ``torch.nn.functional.interpolate(mode="nearest")`` (torchvision's functional_tensor.resize), which is
    what the module gets here when torchvision is absent."""
    import types

    import torch
    from diffusers.models.transformers import transformer_cosmos

    if hasattr(transformer_cosmos, "transforms"):
        return

    def resize(tensor, size, interpolation="nearest"):
        return torch.nn.functional.interpolate(tensor, size=list(size), mode="nearest")

    transformer_cosmos.transforms = types.SimpleNamespace(
        functional=types.SimpleNamespace(resize=resize), InterpolationMode=types.SimpleNamespace(NEAREST="nearest")
    )


def quiet(blocks) -> None:
    """No progress bar from any block: ModularPipeline.set_progress_bar_config reaches one level of sub-blocks,
    while the denoising loop sits two deep (AI Toolkit's AnimaModel walks them the same way)."""
    if hasattr(blocks, "set_progress_bar_config"):
        blocks.set_progress_bar_config(disable=True)
    for sub in getattr(blocks, "sub_blocks", {}).values():
        quiet(sub)


@contextlib.contextmanager
def blended_inpaint(scheduler, mask):
    """For one call: the img2img step's ``scale_noise(image_latents, t, noise)`` hands over the encoded input and
    the noise the blocks drew; from then on every scheduler step puts the kept region back as the input noised to
    that step's level (latent_start.blend_after_steps), the input itself after the last."""
    from toolkit.models import latent_start

    own_scale = scheduler.scale_noise
    state: dict = {}

    def scale_noise(sample, timestep, noise=None):
        keep = 1 - latent_start.latent_mask(mask, tuple(sample.shape)).to(sample.device, sample.dtype)
        latent_start.blend_after_steps(scheduler, sample.clone(), noise.clone(), keep, True, state)
        return own_scale(sample, timestep, noise)

    saved = {name: scheduler.__dict__.get(name) for name in ("scale_noise", "step")}
    scheduler.scale_noise = scale_noise
    try:
        yield state
    finally:
        for name, previous in saved.items():  # an instance's own (the step hook's) back
            if previous is not None:
                setattr(scheduler, name, previous)
            else:
                scheduler.__dict__.pop(name, None)


class AnimaModel(BaseModel):
    arch = "anima"
    modality = "image"
    group = "image"
    hub_id = "circlestone-labs/Anima-Base-v1.0-Diffusers"
    description = "Anima (2B Cosmos-Predict2 DiT for anime and illustration; Qwen3-0.6B through an LLM adapter)"
    pipeline_class = "AnimaModularPipeline"
    sampler_kind = "own"  # a modular pipeline: its blocks hold the scheduler
    components = {
        "transformer": Component("diffusers.CosmosTransformer3DModel", "transformer", source="main"),
        # The LLM adapter is trained with the DiT (the release's single file holds it as net.llm_adapter.*; LoRAs
        # adapt it too), so it comes with the denoiser. It runs once per prompt, before sampling.
        "text_conditioner": Component("diffusers.AnimaTextConditioner", "text_conditioner", source="main"),
        "text_encoder": Component("transformers.Qwen3Model", "text_encoder"),
        "tokenizer": Component("transformers.AutoTokenizer", "tokenizer", has_weights=False),
        "t5_tokenizer": Component("transformers.AutoTokenizer", "t5_tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLQwenImage", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    latent = LatentSpec(
        "BCHW",
        16,
        spatial_factor=8,
        rgb_factors=WAN21_RGB_FACTORS,
        rgb_bias=WAN21_RGB_BIAS,
        factors_source="ComfyUI Wan21",
    )
    divisibility = 16  # the blocks check height and width against vae_scale_factor x 2 (the DiT's 2x2 patches)
    native_resolution = 1024
    defaults = dict(
        width=1024,
        height=1024,
        num_inference_steps=30,
        guidance_scale=4.0,
        negative_prompt=NEGATIVE,
        output_ext="png",
    )

    # Image-to-image through its own blocks: given an ``image``, AnimaAutoBlocks runs its img2img branch (encode,
    # timesteps cut at ``strength``, the noise scaled in). Inpainting is that branch with the kept region blended
    # back after every step (``blended_inpaint``): the blocks have no inpainting step of their own.
    starts_from_latents = True

    def _started_from_latents(self, pipeline, gen):
        import contextlib

        if self.task_for(gen) != from_image.INPAINT:
            return contextlib.nullcontext()  # the blocks start from the image themselves (sample_media)
        _, mask = from_image.sampled_images(gen)
        return blended_inpaint(pipeline.scheduler, mask)

    def load_component(self, role: str, comp: Component):
        if role == "transformer":
            cosmos_padding_mask_without_torchvision()
        return super().load_component(role, comp)

    def build_pipeline(self):
        """AnimaAutoBlocks' pipeline around the loaded components. The blocks keep no state between calls, so a
        pipeline built here serves every request of this holder."""
        import types

        from diffusers import AnimaAutoBlocks, DiffusionPipeline

        pipe = AnimaAutoBlocks().init_pipeline()
        pipe.update_components(**self.parts)
        quiet(pipe._blocks)  # the live blocks: the public ``blocks`` is a copy
        pipe.model_cpu_offload_seq = OFFLOAD_SEQUENCE
        pipe.remove_all_hooks = types.MethodType(DiffusionPipeline.remove_all_hooks, pipe)
        return pipe

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or "",
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            **gen.extra_kwargs,
        )

    def sample_media(self, pipeline, gen, generator):
        from diffusers.pipelines.pipeline_utils import ImagePipelineOutput

        # The guider is the pipeline's component (CFG, off at 1): set for each request, as AI Toolkit's AnimaModel
        # does, so a holder never keeps another request's scale.
        pipeline.guider.guidance_scale = gen.guidance_scale
        kwargs = self.pipeline_kwargs(gen)
        if self.task_for(gen) in (from_image.IMG2IMG, from_image.INPAINT):
            kwargs.update(image=from_image.sampled_images(gen)[0], strength=from_image.strength_of(gen))
        images = pipeline(**kwargs, generator=generator, output_type=self.pixel_output, output="images")
        return self.to_media(ImagePipelineOutput(images=images), gen)

    def unpack_latents(self, latents, gen):
        return latents[:, :, 0]  # B, 16, 1, H/8, W/8: an image is the video model's one frame
