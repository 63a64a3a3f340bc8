"""FLUX.1 Kontext [dev]: Flux.1 conditioned on a control image whose tokens join the sequence (editing)."""

from toolkit.memory_plan import GIB, WorkingSet
from toolkit.models.archs.flux import FluxModel


class FluxKontextModel(FluxModel):
    arch = "flux_kontext"
    img2img_pipeline = inpaint_pipeline = None
    cannot_start = "an edit model: its input image is the instruction's subject (ctrl_img), not a start to re-noise"
    fill_channels = fill_pipeline = None
    description = "FLUX.1 Kontext [dev] (instruction editing, one control image)"
    # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx).
    hub_id = "black-forest-labs/FLUX.1-Kontext-dev"
    group = "instruction"  # AI Toolkit's group for editing models
    pipeline_class = "FluxKontextPipeline"
    control_images = 1
    defaults = dict(width=1024, height=1024, num_inference_steps=28, guidance_scale=2.5, output_ext="png")
    # Measured at 1024x1024 (testing/test_working_sets.py): encoding 1.54 GiB over the weights (the context image's VAE
    # encode beside the prompt's), sampling 0.90 GiB (40 KB per latent position of the output beyond the base: the
    # context image's tokens ride along).
    working_set = WorkingSet(per_position=48 * 1024, encode=2 * GIB)

    def pipeline_kwargs(self, gen):
        # max_area = the request's area keeps the requested size (the pipeline otherwise rescales to 1 MP);
        # _auto_resize=False keeps the control image at that size instead of Kontext's preferred ~1 MP buckets.
        # Only the generated tokens are stepped; the control image's tokens are sliced off each step.
        return dict(
            super().pipeline_kwargs(gen),
            image=self.control_image(gen, 0, (gen.width, gen.height)),
            max_area=gen.width * gen.height,
            _auto_resize=False,
        )

    def unpack_latents(self, latents, gen):
        from diffusers import FluxKontextPipeline

        return FluxKontextPipeline._unpack_latents(latents, gen.height, gen.width, self.latent.spatial_factor)
