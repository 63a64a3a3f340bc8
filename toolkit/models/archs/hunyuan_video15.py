"""HunyuanVideo 1.5 (8.3B) text-to-video: 32-channel BCFHW latents, 16x spatial and 4x temporal compression.

Its text goes through two encoders: Qwen2.5-VL's language model reads the prompt inside a fixed chat template
(the pipeline drops the template's first 108 tokens), and ByT5 reads only the text quoted in the prompt, for
glyphs. Guidance is a diffusers guider component, not a call argument: each request sets its scale on it. The
pipeline has no ``callback_on_step_end``; the engine's step hook wraps the scheduler, so it streams all the same.
"""

from toolkit.memory_plan import WorkingSet
from toolkit.models.base_model import BaseModel, Component, LatentSpec

# ComfyUI latent_formats.HunyuanVideo15 (comfy/latent_formats.py): fitted on x * 1.03682, the space
# diffusers' loop samples in (the pipeline divides by vae.config.scaling_factor before decoding).
HUNYUAN_VIDEO15_RGB_FACTORS = (
    (0.0568, -0.0521, -0.0131),
    (0.0014, 0.0735, 0.0326),
    (0.0186, 0.0531, -0.0138),
    (-0.0031, 0.0051, 0.0288),
    (0.0110, 0.0556, 0.0432),
    (-0.0041, -0.0023, -0.0485),
    (0.0530, 0.0413, 0.0253),
    (0.0283, 0.0251, 0.0339),
    (0.0277, -0.0372, -0.0093),
    (0.0393, 0.0944, 0.1131),
    (0.0020, 0.0251, 0.0037),
    (-0.0017, 0.0012, 0.0234),
    (0.0468, 0.0436, 0.0203),
    (0.0354, 0.0439, -0.0233),
    (0.0090, 0.0123, 0.0346),
    (0.0382, 0.0029, 0.0217),
    (0.0261, -0.0300, 0.0030),
    (-0.0088, -0.0220, -0.0283),
    (-0.0272, -0.0121, -0.0363),
    (-0.0664, -0.0622, 0.0144),
    (0.0414, 0.0479, 0.0529),
    (0.0355, 0.0612, -0.0247),
    (0.0147, 0.0264, 0.0174),
    (0.0438, 0.0038, 0.0542),
    (0.0431, -0.0573, -0.0033),
    (-0.0162, -0.0211, -0.0406),
    (-0.0487, -0.0295, -0.0393),
    (0.0005, -0.0109, 0.0253),
    (0.0296, 0.0591, 0.0353),
    (0.0119, 0.0181, -0.0306),
    (-0.0085, -0.0362, 0.0229),
    (0.0005, -0.0106, 0.0242),
)
HUNYUAN_VIDEO15_RGB_BIAS = (0.0456, -0.0202, -0.0644)


class HunyuanVideo15Model(BaseModel):
    arch = "hunyuan_video15"
    modality = "video"
    description = "HunyuanVideo 1.5 (8.3B text-to-video, 480p/720p)"
    # Not in AI Toolkit's UI: the diffusers conversion of the 480p text-to-video model, whose size the defaults are.
    hub_id = "hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-480p_t2v"
    pipeline_class = "HunyuanVideo15Pipeline"
    components = {
        "transformer": Component("diffusers.HunyuanVideo15Transformer3DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.Qwen2_5_VLTextModel", "text_encoder"),
        "tokenizer": Component("transformers.AutoTokenizer", "tokenizer", has_weights=False),
        "text_encoder_2": Component("transformers.T5EncoderModel", "text_encoder_2"),
        "tokenizer_2": Component("transformers.ByT5Tokenizer", "tokenizer_2", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLHunyuanVideo15", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
        "guider": Component("diffusers.ClassifierFreeGuidance", "guider", has_weights=False),
    }
    latent = LatentSpec(
        "BCFHW",
        32,
        spatial_factor=16,
        temporal_factor=4,
        rgb_factors=HUNYUAN_VIDEO15_RGB_FACTORS,
        rgb_bias=HUNYUAN_VIDEO15_RGB_BIAS,
        scale=1.03682,
        factors_source="ComfyUI HunyuanVideo15",
    )
    divisibility = 16  # 16x VAE x transformer patch 1
    native_resolution = 848
    output_exts = ("mp4", "webp")
    defaults = dict(
        width=848, height=480, num_inference_steps=50, guidance_scale=6.0, num_frames=121, fps=24, output_ext="mp4"
    )
    # Measured at 848x480x121 (testing/test_working_sets.py): sampling 11.1 GiB over the weights (48,101 latent
    # positions: 237 KB each); an untiled decode holds the whole clip, 82.5 GiB (1.7 KB per pixel and frame). Tiled:
    # 256 px tiles of every frame.
    working_set = WorkingSet(per_position=272 * 1024, per_pixel=2048, frames_at_once=0, patch=1)
    float8_activations = False  # a video step: float8 weights only (base_model.py says why)

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or None,
            width=gen.width,
            height=gen.height,
            num_frames=gen.num_frames,
            num_inference_steps=gen.num_inference_steps,
            **gen.extra_kwargs,
        )

    def sample_media(self, pipeline, gen, generator):
        # The guider may be shared with another holder through the pool; requests run one at a time on the
        # engine's main thread, so setting the scale right before the call is this request's scale.
        pipeline.guider.guidance_scale = gen.guidance_scale
        return super().sample_media(pipeline, gen, generator)
