"""Wan 2.2 TI2V-5B: 48-channel BCFHW latents, 16x spatial (VAE patch 2 x 8) and 4x temporal compression.

One checkpoint does text-to-video and, given a control image, image-to-video: diffusers runs the second through
WanImageToVideoPipeline with ``expand_timesteps`` (the first latent frame is the encoded image and keeps
timestep 0). Both pipelines share this holder's components and scheduler, so the step hook sees either.
"""

from toolkit.memory_plan import WorkingSet
from toolkit.models.base_model import BaseModel, Component, LatentSpec

# ComfyUI latent_formats.Wan22 (comfy/latent_formats.py): the 48-channel TI2V-5B space only (the A14B models
# use Wan21's 16-channel space). Fitted on (x - mean) / std, the normalised space diffusers' Wan loop samples in.
WAN22_RGB_FACTORS = (
    (0.0119, 0.0103, 0.0046),
    (-0.1062, -0.0504, 0.0165),
    (0.0140, 0.0409, 0.0491),
    (-0.0813, -0.0677, 0.0607),
    (0.0656, 0.0851, 0.0808),
    (0.0264, 0.0463, 0.0912),
    (0.0295, 0.0326, 0.0590),
    (-0.0244, -0.0270, 0.0025),
    (0.0443, -0.0102, 0.0288),
    (-0.0465, -0.0090, -0.0205),
    (0.0359, 0.0236, 0.0082),
    (-0.0776, 0.0854, 0.1048),
    (0.0564, 0.0264, 0.0561),
    (0.0006, 0.0594, 0.0418),
    (-0.0319, -0.0542, -0.0637),
    (-0.0268, 0.0024, 0.0260),
    (0.0539, 0.0265, 0.0358),
    (-0.0359, -0.0312, -0.0287),
    (-0.0285, -0.1032, -0.1237),
    (0.1041, 0.0537, 0.0622),
    (-0.0086, -0.0374, -0.0051),
    (0.0390, 0.0670, 0.2863),
    (0.0069, 0.0144, 0.0082),
    (0.0006, -0.0167, 0.0079),
    (0.0313, -0.0574, -0.0232),
    (-0.1454, -0.0902, -0.0481),
    (0.0714, 0.0827, 0.0447),
    (-0.0304, -0.0574, -0.0196),
    (0.0401, 0.0384, 0.0204),
    (-0.0758, -0.0297, -0.0014),
    (0.0568, 0.1307, 0.1372),
    (-0.0055, -0.0310, -0.0380),
    (0.0239, -0.0305, 0.0325),
    (-0.0663, -0.0673, -0.0140),
    (-0.0416, -0.0047, -0.0023),
    (0.0166, 0.0112, -0.0093),
    (-0.0211, 0.0011, 0.0331),
    (0.1833, 0.1466, 0.2250),
    (-0.0368, 0.0370, 0.0295),
    (-0.3441, -0.3543, -0.2008),
    (-0.0479, -0.0489, -0.0420),
    (-0.0660, -0.0153, 0.0800),
    (-0.0101, 0.0068, 0.0156),
    (-0.0690, -0.0452, -0.0927),
    (-0.0145, 0.0041, 0.0015),
    (0.0421, 0.0451, 0.0373),
    (0.0504, -0.0483, -0.0356),
    (-0.0837, 0.0168, 0.0055),
)
WAN22_RGB_BIAS = (0.0317, -0.0878, -0.1388)


class Wan225bModel(BaseModel):
    arch = "wan22_5b"
    modality = "video"
    description = "Wan 2.2 TI2V-5B (text or image to video, 720p)"
    # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx).
    hub_id = "Wan-AI/Wan2.2-TI2V-5B-Diffusers"
    pipeline_class = "WanPipeline"
    # sample.init_video on its own pipeline (toolkit/models/latent_start.py): WanVideoToVideoPipeline has no
    # expand_timesteps, which TI2V-5B's transformer samples with.
    vid2vid_own = True
    default_sampler = "UniPC"
    components = {
        "transformer": Component("diffusers.WanTransformer3DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.UMT5EncoderModel", "text_encoder"),
        "tokenizer": Component("transformers.T5Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLWan", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # model_index.json holds these, but build_pipeline() assembles the pipeline from components, so pass them.
    pipeline_init_kwargs = dict(transformer_2=None, boundary_ratio=None, expand_timesteps=True)
    latent = LatentSpec(
        "BCFHW",
        48,
        spatial_factor=16,
        temporal_factor=4,
        rgb_factors=WAN22_RGB_FACTORS,
        rgb_bias=WAN22_RGB_BIAS,
        factors_source="ComfyUI Wan22",
    )
    divisibility = 32  # 16x VAE x transformer patch 2
    native_resolution = 1280
    output_exts = ("mp4", "webp")
    defaults = dict(
        width=1280, height=704, num_inference_steps=50, guidance_scale=5.0, num_frames=121, fps=24, output_ext="mp4"
    )
    # Measured on the full card at 1280x704x121 (docs/MEASURED.md "Wan 2.2 5B's working set"), over the
    # weights: sampling 5.23 GiB (106k latent positions: 48 KiB each beside the base, above the image DiTs' 40),
    # decoding 10.69 (its VAE is causal like 2.1's, a few frames at a time); ~15 % margin on sampling.
    working_set = WorkingSet(per_position=56 * 1024, per_pixel=12 * 1024, frames_at_once=1)
    float8_activations = False  # a video step: float8 weights only (base_model.py says why)
    # The ``cache`` speed tier: diffusers' FirstBlockCache; of the DiT families, the Wan ones took it and skipped
    # steps on their tiny checkpoints (others raised or never skipped: toolkit/models/speed.py).
    step_cache = "first_block"

    def pipeline_kwargs(self, gen):
        kw = dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or None,
            width=gen.width,
            height=gen.height,
            num_frames=gen.num_frames,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
        )
        if gen.control_images:
            kw["image"] = self.control_image(gen, 0, (gen.width, gen.height))
        kw.update(gen.extra_kwargs)
        return kw

    def sample_media(self, pipeline, gen, generator):
        if gen.control_images:
            pipeline = self.image_to_video_pipeline(pipeline)
        output = pipeline(**self.pipeline_kwargs(gen), generator=generator, output_type=self.pixel_output)
        return self.to_media(output, gen)

    def image_to_video_pipeline(self, pipeline):
        """WanImageToVideoPipeline over the same modules and the same scheduler object (the hooked one)."""
        from diffusers import WanImageToVideoPipeline

        from toolkit.models.archs.wan21_i2v import ensure_wan_i2v_text_cleaning

        ensure_wan_i2v_text_cleaning()
        cached = getattr(self, "_i2v", None)
        if cached is None or cached[0] is not pipeline:
            i2v = WanImageToVideoPipeline(
                tokenizer=pipeline.tokenizer,
                text_encoder=pipeline.text_encoder,
                vae=pipeline.vae,
                scheduler=pipeline.scheduler,
                transformer=pipeline.transformer,
                transformer_2=None,
                image_encoder=None,
                image_processor=None,
                boundary_ratio=None,
                expand_timesteps=True,
            )
            i2v.set_progress_bar_config(disable=True)
            self._i2v = cached = (pipeline, i2v)
        return cached[1]

    def video_start_latents(self, frames, raw):
        from toolkit.models.archs.wan21 import wan_video_start

        return wan_video_start(self.pipeline, frames, raw)
