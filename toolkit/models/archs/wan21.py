"""Wan 2.1 text-to-video: 16-channel BCFHW latents, 8x spatial and 4x temporal compression."""

from toolkit.memory_plan import WorkingSet
from toolkit.models.base_model import BaseModel, Component, LatentSpec

# ComfyUI latent_formats.Wan21 (comfy/latent_formats.py): fitted on (x - mean) / std, which is the
# normalised space diffusers' Wan loop samples in.
WAN21_RGB_FACTORS = (
    (-0.1299, -0.1692, 0.2932),
    (0.0671, 0.0406, 0.0442),
    (0.3568, 0.2548, 0.1747),
    (0.0372, 0.2344, 0.1420),
    (0.0313, 0.0189, -0.0328),
    (0.0296, -0.0956, -0.0665),
    (-0.3477, -0.4059, -0.2925),
    (0.0166, 0.1902, 0.1975),
    (-0.0412, 0.0267, -0.1364),
    (-0.1293, 0.0740, 0.1636),
    (0.0680, 0.3019, 0.1128),
    (0.0032, 0.0581, 0.0639),
    (-0.1251, 0.0927, 0.1699),
    (0.0060, -0.0633, 0.0005),
    (0.3477, 0.2275, 0.2950),
    (0.1984, 0.0913, 0.1861),
)
WAN21_RGB_BIAS = (-0.1835, -0.0868, -0.3360)


def ftfy_or_plain(module) -> None:
    """diffusers' Wan video-to-video module calls ``ftfy.fix_text`` unconditionally (the text-to-video module
    skips it when ftfy is missing). Without ftfy installed, give that module a no-op in its place."""
    if getattr(module, "ftfy", None) is None:
        try:
            import ftfy
        except ImportError:
            import types

            ftfy = types.SimpleNamespace(fix_text=lambda text: text)
        module.ftfy = ftfy


def begin_index_told(pipeline) -> None:
    """WanVideoToVideoPipeline cuts its timesteps at the strength without telling the scheduler (SD's image-to-image
    pipelines call ``set_begin_index``), so progress would count the skipped steps as to come: its
    ``get_timesteps`` is wrapped, once per pipeline, to tell it."""
    if "get_timesteps" in pipeline.__dict__:
        return
    own = pipeline.get_timesteps

    def get_timesteps(num_inference_steps, timesteps, strength, device):
        kept, count = own(num_inference_steps, timesteps, strength, device)
        if hasattr(pipeline.scheduler, "set_begin_index"):
            pipeline.scheduler.set_begin_index(len(timesteps) - len(kept))
        return kept, count

    pipeline.get_timesteps = get_timesteps


def wan_video_start(pipeline, frames, raw: bool):
    """A start video in a Wan pipeline's latent space, B x C x F x H x W: the VAE's encoding (its mode), normalised
    as WanPipeline's decode undoes (``(z - latents_mean) / latents_std``) unless ``raw``."""
    import torch

    vae = pipeline.vae
    pixels = pipeline.video_processor.preprocess_video(frames)
    first = next(vae.parameters())
    z = vae.encode(pixels.to(first.device, first.dtype)).latent_dist.mode().float()
    if raw:
        return z
    mean = torch.tensor(vae.config.latents_mean, device=z.device).view(1, -1, 1, 1, 1)
    std = torch.tensor(vae.config.latents_std, device=z.device).view(1, -1, 1, 1, 1)
    return (z - mean) / std


class Wan21Model(BaseModel):
    arch = "wan21"
    modality = "video"
    description = "Wan 2.1 text-to-video (1.3B / 14B)"
    # AI Toolkit's UI offers wan21:1b and wan21:14b; the bare family is the 1.3B, whose 480p the defaults are. The
    # 14B samples at 720p (diffusers' WanPipeline example: 1280x720, guidance 5).
    hub_id = "Wan-AI/Wan2.1-T2V-1.3B-Diffusers"
    tags = {
        "1b": {"hub_id": "Wan-AI/Wan2.1-T2V-1.3B-Diffusers", "description": "Wan 2.1 T2V 1.3B (480p)"},
        "14b": {
            "hub_id": "Wan-AI/Wan2.1-T2V-14B-Diffusers",
            "description": "Wan 2.1 T2V 14B (720p)",
            "defaults": {"width": 1280, "height": 720},
        },
    }
    pipeline_class = "WanPipeline"
    vid2vid_pipeline = "WanVideoToVideoPipeline"  # sample.init_video (toolkit/models/from_video.py)
    default_sampler = "UniPC"  # flow-matching UniPC, as Wan ships it
    components = {
        "transformer": Component("diffusers.WanTransformer3DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.UMT5EncoderModel", "text_encoder"),
        "tokenizer": Component("transformers.T5Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLWan", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
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
    native_resolution = 832
    output_exts = ("mp4", "webp")
    defaults = dict(
        width=832, height=480, num_inference_steps=30, guidance_scale=5.0, num_frames=33, fps=16, output_ext="mp4"
    )
    # Measured (14B image-to-video at 832x480x81, testing/test_working_sets.py): sampling 3.6 GiB over the weights
    # (126,360 latent positions: 27.6 KB each); Wan's causal VAE decodes a few frames at a time whatever the length:
    # 4.5 GiB (10.8 KB per pixel of one frame; 4.3 GiB for the 1.3B model's 33 frames). Wan 2.2 14B inherits this.
    working_set = WorkingSet(per_position=32 * 1024, per_pixel=12 * 1024, frames_at_once=1)
    float8_activations = False  # a video step: float8 weights only (base_model.py says why)
    # The ``cache`` speed tier: diffusers' FirstBlockCache; of the DiT families, the Wan ones took it and skipped
    # steps on their tiny checkpoints (others raised or never skipped: toolkit/models/speed.py).
    step_cache = "first_block"

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or None,
            width=gen.width,
            height=gen.height,
            num_frames=gen.num_frames,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            **gen.extra_kwargs,
        )

    def vid2vid_kwargs(self, pipeline, gen, kwargs):
        from diffusers.pipelines.wan import pipeline_wan_video2video

        ftfy_or_plain(pipeline_wan_video2video)
        begin_index_told(pipeline)
        return super().vid2vid_kwargs(pipeline, gen, kwargs)

    def video_start_latents(self, frames, raw):
        return wan_video_start(self.pipeline, frames, raw)  # the Wan 2.2 families that start on their own pipeline
