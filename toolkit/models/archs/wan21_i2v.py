"""Wan 2.1 image-to-video: Wan 2.1's 16-channel latent space, a 36-channel transformer input (noise + first-frame
mask + encoded control image) and a CLIP vision encoder whose penultimate hidden states condition cross-attention."""

from dataclasses import replace

from toolkit.models.archs.wan21 import WAN21_RGB_BIAS, WAN21_RGB_FACTORS, Wan21Model
from toolkit.models.base_model import Component, LatentSpec


def ensure_wan_i2v_text_cleaning() -> None:
    """diffusers' Wan image-to-video module calls ``ftfy.fix_text`` unconditionally (the text-to-video module
    skips it when ftfy is missing). Without ftfy installed, give that module the same no-op fallback."""
    from diffusers.pipelines.wan import pipeline_wan_i2v

    if getattr(pipeline_wan_i2v, "ftfy", None) is None:
        try:
            import ftfy
        except ImportError:
            import types

            ftfy = types.SimpleNamespace(fix_text=lambda text: text)
        pipeline_wan_i2v.ftfy = ftfy


def wan_i2v_kwargs(model, gen) -> dict:
    """The call shared by the Wan I2V families: the first control image, resized to the output size."""
    return dict(
        image=model.control_image(gen, 0, (gen.width, gen.height)),
        prompt=gen.prompt,
        negative_prompt=gen.negative_prompt or None,
        width=gen.width,
        height=gen.height,
        num_frames=gen.num_frames,
        num_inference_steps=gen.num_inference_steps,
        guidance_scale=gen.guidance_scale,
    )


class Wan21I2VModel(Wan21Model):
    arch = "wan21_i2v"
    description = "Wan 2.1 image-to-video (14B, 480p / 720p)"
    # AI Toolkit's UI offers wan21_i2v:14b480p and wan21_i2v:14b (720P); the bare family is the 480P checkpoint,
    # whose size the defaults are.
    hub_id = "Wan-AI/Wan2.1-I2V-14B-480P-Diffusers"
    tags = {
        "14b480p": {"hub_id": "Wan-AI/Wan2.1-I2V-14B-480P-Diffusers", "description": "Wan 2.1 I2V 14B 480P"},
        "14b": {
            "hub_id": "Wan-AI/Wan2.1-I2V-14B-720P-Diffusers",
            "description": "Wan 2.1 I2V 14B 720P",
            "defaults": {"width": 1280, "height": 720},
        },
    }
    pipeline_class = "WanImageToVideoPipeline"
    vid2vid_pipeline = None
    cannot_start_video = "its transformer needs an image's embedding, which WanVideoToVideoPipeline does not give it"
    components = {
        "transformer": Component("diffusers.WanTransformer3DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.UMT5EncoderModel", "text_encoder"),
        "tokenizer": Component("transformers.T5Tokenizer", "tokenizer", has_weights=False),
        "image_encoder": Component("transformers.CLIPVisionModel", "image_encoder"),
        "image_processor": Component("transformers.CLIPImageProcessor", "image_processor", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLWan", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    pipeline_init_kwargs = dict(transformer_2=None, boundary_ratio=None, expand_timesteps=False)
    # The VAE encodes the conditioning clip beside the visiting UMT5 (docs/MEASURED.md
    # "Image-to-video encoding of the conditioning clip"): Wan 2.1 I2V's encoding at 832x480x81 peaked 3.45 GiB over its
    # weights with the prompt cached (8.2 KB per pixel over 0.4 GiB), which also gives Wan 2.2 14B I2V's 18.69 GiB at
    # 1280x720 on 24 GiB (with UMT5's 10.58); +20 %.
    working_set = replace(Wan21Model.working_set, per_pixel_encode=10 * 1024)
    latent = LatentSpec(
        "BCFHW",
        16,
        spatial_factor=8,
        temporal_factor=4,
        rgb_factors=WAN21_RGB_FACTORS,
        rgb_bias=WAN21_RGB_BIAS,
        factors_source="ComfyUI Wan21",
    )
    control_images = 1
    native_resolution = 832
    defaults = dict(
        width=832, height=480, num_inference_steps=40, guidance_scale=5.0, num_frames=81, fps=16, output_ext="mp4"
    )

    def build_pipeline(self):
        ensure_wan_i2v_text_cleaning()
        return super().build_pipeline()

    def pipeline_kwargs(self, gen):
        return dict(wan_i2v_kwargs(self, gen), **gen.extra_kwargs)
