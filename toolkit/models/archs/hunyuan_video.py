"""HunyuanVideo 1.0 (13B): 16-channel BCFHW latents, 8x spatial and 4x temporal compression; a Llama (llava-
llama-3) text encoder read at its third-last hidden state, plus CLIP-L's pooled output; guidance is embedded
(guidance-distilled), so a negative prompt only acts when extra_kwargs sets ``true_cfg_scale`` > 1.
"""

from toolkit.memory_plan import WorkingSet
from toolkit.models.base_model import BaseModel, Component, LatentSpec

# ComfyUI latent_formats.HunyuanVideo (comfy/latent_formats.py), fitted on x * 0.476986, which is what
# diffusers' HunyuanVideo loop samples (the pipeline divides by vae.config.scaling_factor before decoding).
HUNYUAN_VIDEO_RGB_FACTORS = (
    (-0.0395, -0.0331, 0.0445),
    (0.0696, 0.0795, 0.0518),
    (0.0135, -0.0945, -0.0282),
    (0.0108, -0.0250, -0.0765),
    (-0.0209, 0.0032, 0.0224),
    (-0.0804, -0.0254, -0.0639),
    (-0.0991, 0.0271, -0.0669),
    (-0.0646, -0.0422, -0.0400),
    (-0.0696, -0.0595, -0.0894),
    (-0.0799, -0.0208, -0.0375),
    (0.1166, 0.1627, 0.0962),
    (0.1165, 0.0432, 0.0407),
    (-0.2315, -0.1920, -0.1355),
    (-0.0270, 0.0401, -0.0821),
    (-0.0616, -0.0997, -0.0727),
    (0.0249, -0.0469, -0.1703),
)
HUNYUAN_VIDEO_RGB_BIAS = (0.0259, -0.0192, -0.0761)


class HunyuanVideoModel(BaseModel):
    arch = "hunyuan_video"
    modality = "video"
    description = "HunyuanVideo 1.0 (13B text-to-video, 720p)"
    hub_id = "hunyuanvideo-community/HunyuanVideo"  # not in AI Toolkit's UI: diffusers' HunyuanVideoPipeline example
    pipeline_class = "HunyuanVideoPipeline"
    components = {
        "transformer": Component("diffusers.HunyuanVideoTransformer3DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.LlamaModel", "text_encoder"),
        # Real repos name LlamaTokenizerFast; AutoTokenizer reads whichever class tokenizer_config.json names.
        "tokenizer": Component("transformers.AutoTokenizer", "tokenizer", has_weights=False),
        "text_encoder_2": Component("transformers.CLIPTextModel", "text_encoder_2"),
        "tokenizer_2": Component("transformers.CLIPTokenizer", "tokenizer_2", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLHunyuanVideo", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    latent = LatentSpec(
        "BCFHW",
        16,
        spatial_factor=8,
        temporal_factor=4,
        rgb_factors=HUNYUAN_VIDEO_RGB_FACTORS,
        rgb_bias=HUNYUAN_VIDEO_RGB_BIAS,
        scale=0.476986,
        factors_source="ComfyUI HunyuanVideo",
    )
    divisibility = 16  # 8x VAE x transformer patch 2
    native_resolution = 1280
    output_exts = ("mp4", "webp")
    defaults = dict(
        width=1280, height=720, num_inference_steps=50, guidance_scale=6.0, num_frames=129, fps=24, output_ext="mp4"
    )
    # Measured at 1280x720x129 (testing/test_working_sets.py): sampling 12.4 GiB over the weights (464,400 latent
    # positions: 27.5 KB each); an untiled decode of the whole clip 50.5 GiB (441 B per pixel and frame).
    working_set = WorkingSet(per_position=32 * 1024, per_pixel=512, frames_at_once=0)
    float8_activations = False  # a video step: float8 weights only (base_model.py says why)

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            prompt_2=gen.prompt_2,
            negative_prompt=gen.negative_prompt or None,
            width=gen.width,
            height=gen.height,
            num_frames=gen.num_frames,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            **gen.extra_kwargs,
        )
