"""MiniMax-H3 (33B): joint video + stereo audio from one packed sequence (text rows, keyframe rows, audio rows,
video rows), guidance-distilled: one forward pass a step, no negative prompt, no guidance scale. diffusers serves it
as a modular pipeline only (MiniMaxH3ModularPipeline over MiniMaxH3Blocks, modular_pipelines/minimax_h3); its
folders carry ``modular_model_index.json``, not ``model_index.json``. The engine loads each component through its
own loader and pool as for every family, then hands them to the pipeline with ``update_components``.

What the pipeline fixes, and this family follows: 24 fps; ``17 n + 5`` frames (the VAE encodes 17-frame chunks
into 5 latent frames) lasting 5 to 15 seconds; sizes a multiple of 32 (16x VAE, 2x2 patches); the prompt read from
Qwen3-VL's ``hidden_states[50]``; two MiniMaxH3Schedulers (shift 12 for video, 3 for audio). Its schedule takes
``num_inference_steps`` sigma points, terminal zero included, so it evaluates the model one time fewer; AI Toolkit's
MiniMax-H3 sampler (extensions_built_in/diffusion_models/minimax_h3/src/pipeline.py) counts model evaluations
(``linspace(1, 0, steps + 1)``), and so does this family: the pipeline is asked for one point more.

Streaming: the step hook wraps the video scheduler, whose ``step`` sees the generated video rows of the packed
sequence; ``unpack_latents`` turns them into BCFHW as the pipeline's after-denoise block does. The model predicts a
data-ward velocity, so the denoised estimate is ``x_t + sigma * v`` (MiniMaxH3Scheduler.step), not flow matching's
``x_t - sigma * v``. An optional control image is the first keyframe (the pipeline's ``fl2va`` workflow), as AI
Toolkit's ``ctrl_img`` does. The ``ref2va`` workflow (references, ``transformer_ref/``) is not served.
"""

import types
from dataclasses import dataclass
from typing import Any

from toolkit.media import GeneratedMedia
from toolkit.memory_plan import GIB, WorkingSet
from toolkit.models.base_model import BaseModel, Component, LatentSpec
from toolkit.pixels import pipeline_pixels_to_uint8
from toolkit.sample_step_hook import SchedulerStep

# ComfyUI latent_formats.MiniMaxH3Video (comfy/latent_formats.py; ComfyUI's MiniMaxH3 model previews its video
# stream with it): 24 channels at 16x spatial compression, scale 1 (the space the pipeline samples in).
MINIMAX_H3_RGB_FACTORS = (
    (-0.018555, 0.024344, -0.017536),
    (0.150164, 0.137244, 0.129221),
    (0.027367, -0.050369, -0.208606),
    (-0.000793, -0.164622, -0.323161),
    (-0.048556, 0.013970, -0.074286),
    (0.011740, 0.014172, -0.006906),
    (0.061517, 0.061212, 0.110025),
    (0.035321, 0.086879, 0.110059),
    (-0.017426, 0.002997, 0.035356),
    (0.531539, 0.548819, 0.624404),
    (-0.024968, -0.040234, -0.034302),
    (-0.032549, -0.029096, -0.017221),
    (0.022609, 0.020286, 0.050661),
    (-0.084001, -0.038131, -0.020805),
    (-0.018830, 0.010412, 0.061120),
    (0.020777, 0.011196, -0.030994),
    (-0.008390, -0.012201, -0.025687),
    (-0.013281, -0.002924, 0.006331),
    (0.000260, 0.001833, -0.011038),
    (0.105471, 0.100482, 0.132106),
    (0.016529, 0.015213, 0.009999),
    (-0.014015, -0.017438, -0.019134),
    (-0.033787, -0.009984, -0.019725),
    (0.004224, 0.017284, 0.027196),
)
MINIMAX_H3_RGB_BIAS = (0.057426, -0.022078, -0.071449)

FPS = 24
FRAMES_PER_CHUNK, LATENTS_PER_CHUNK = 17, 5  # AutoencoderKLMiniMaxH3: clip_length, tokens_chunk_size
MIN_FRAMES = 124  # 17 * 7 + 5: the shortest count lasting 5 s at 24 fps
MAX_FRAMES = 345  # 17 * 20 + 5: the longest within 15 s


@dataclass
class MiniMaxH3Output:
    """The modular pipeline's outputs under the names other video-with-sound pipelines use (LTX2PipelineOutput)."""

    frames: Any  # (1, F, 3, H, W) tensor for "pt", (1, F, H, W, 3) array for "np", in [0, 1]
    audio: Any  # (1, 2, samples)


@dataclass
class DataWardStep(SchedulerStep):
    """A MiniMaxH3Scheduler step: the model's velocity points at the data, x0 = x_t + sigma * v."""

    def x0(self):
        if self.sigma is None:
            return self.sample
        return self.input_sample + self.sigma.to(self.model_output.device) * self.model_output


def remove_all_hooks(pipe) -> None:
    """DiffusionPipeline.remove_all_hooks for a modular pipeline: accelerate's hooks off every model component."""
    import torch
    from accelerate.hooks import remove_hook_from_module

    for module in pipe.components.values():
        if isinstance(module, torch.nn.Module) and hasattr(module, "_hf_hook"):
            remove_hook_from_module(module, recurse=True)
    pipe._all_hooks = []


def quiet_loops(blocks) -> None:
    """No progress bar from the denoising loop, wherever it sits: ModularPipeline.set_progress_bar_config reaches
    only the top-level blocks, and the loop is nested under the denoise block's workflow branches."""
    if hasattr(blocks, "set_progress_bar_config"):
        blocks.set_progress_bar_config(disable=True)
    for sub in getattr(blocks, "sub_blocks", {}).values():
        quiet_loops(sub)


class MiniMaxH3Model(BaseModel):
    arch = "minimax_h3"
    modality = "video"
    description = "MiniMax-H3 (video with stereo sound, guidance-distilled)"
    # AI Toolkit's UI offers Comfy-Org/MiniMax-H3 (ComfyUI files, pre-quantized); diffusers' folders are these.
    hub_id = "MiniMaxAI/MiniMax-H3"
    group = "video"
    pipeline_class = "MiniMaxH3ModularPipeline"
    sampler_kind = "own"  # its own flow scheduler, held by the modular pipeline's blocks
    # Its modular pipeline's blocks hold the components and call the transformer their own way, so a request's
    # copy of the pipeline is not its own (toolkit/models/step_batching.py): requests run alone.
    batchable = False
    components = {
        "transformer": Component("diffusers.MiniMaxH3Transformer3DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.Qwen3VLForConditionalGeneration", "text_encoder"),
        "tokenizer": Component("transformers.Qwen2Tokenizer", "tokenizer", has_weights=False),
        "processor": Component("toolkit.models.processors.Qwen3VLNoVideoProcessor", "processor", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLMiniMaxH3", "vae"),
        "audio_vae": Component("diffusers.AutoencoderKLMiniMaxH3Audio", "audio_vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
        "audio_scheduler": Component("auto", "audio_scheduler", has_weights=False),
    }
    latent = LatentSpec(
        "BCFHW",
        24,
        spatial_factor=16,
        temporal_factor=4,  # ComfyUI's figure; exactly, 17-frame chunks hold 5 latent frames (latent_shape)
        rgb_factors=MINIMAX_H3_RGB_FACTORS,
        rgb_bias=MINIMAX_H3_RGB_BIAS,
        factors_source="ComfyUI MiniMaxH3Video",
    )
    divisibility = 32
    native_resolution = 768
    output_exts = ("mp4",)  # the sound track needs a container that carries one
    # AI Toolkit's sample settings for minimax_h3 (ui/src/app/jobs/new/options.tsx): 768x768, 28 steps at guidance
    # 1 (the model is guidance-distilled: the pipeline takes no scale), 24 fps. Its 107 frames last 4.5 s, under
    # the 5 s the diffusers pipeline generates at least: 124, the pipeline's own default.
    defaults = dict(
        width=768, height=768, num_inference_steps=28, guidance_scale=1.0, num_frames=124, fps=FPS, output_ext="mp4"
    )
    # Not measured on a GPU yet: the rates of the video families nearest in shape. Sampling as Wan's 14B (a
    # 5120-5376 wide DiT on 2x2 patches), plus the audio and text rows; the VAE decodes 17-frame chunks through a
    # 2048-wide transformer decoder; encoding keeps Qwen3-VL 32B's 65 hidden states of the prompt. The engine widens
    # a reserve that proves short (memory_planner.py).
    working_set = WorkingSet(per_position=40 * 1024, per_pixel=512, frames_at_once=FRAMES_PER_CHUNK, encode=GIB)
    float8_activations = False  # a video step: float8 weights only (base_model.py says why)

    def build_pipeline(self):
        from diffusers.modular_pipelines import MiniMaxH3Blocks, MiniMaxH3ModularPipeline

        blocks = MiniMaxH3Blocks()
        pipe = MiniMaxH3ModularPipeline(blocks=blocks)
        pipe.update_components(**self.parts)
        quiet_loops(blocks)
        # What model CPU offload (toolkit/models/offload.py, a plan's "visit") reads off a DiffusionPipeline: the
        # order the models run in (a keyframe's VAE encode comes before the transformer, its decode after), and
        # the hook removal it starts from. The text block fires the conditioner's accelerate hook itself
        # (modular_pipelines/minimax_h3/encoders.py), as it calls the conditioner's inner model.
        pipe.model_cpu_offload_seq = "text_encoder->transformer->vae->audio_vae"
        pipe.remove_all_hooks = types.MethodType(remove_all_hooks, pipe)
        return pipe

    def prepare_gen_config(self, gen):
        gen.snap_size(self.divisibility)
        gen.fps = FPS
        frames = max(MIN_FRAMES, int(gen.num_frames))
        frames += (LATENTS_PER_CHUNK - frames) % FRAMES_PER_CHUNK  # up to 17 n + 5, as the pipeline rounds
        gen.num_frames = frames if frames <= MAX_FRAMES else MAX_FRAMES

    def latent_shape(self, gen):
        frames = (gen.num_frames - LATENTS_PER_CHUNK) // FRAMES_PER_CHUNK * LATENTS_PER_CHUNK + 2
        f = self.latent.spatial_factor
        return (1, self.latent.channels, frames, gen.height // f, gen.width // f)

    def pipeline_kwargs(self, gen):
        kw = dict(image=self.control_image(gen, 0, (gen.width, gen.height))) if gen.control_images else {}
        kw.update(
            prompt=gen.prompt,
            height=gen.height,
            width=gen.width,
            num_frames=gen.num_frames,
            num_inference_steps=gen.num_inference_steps + 1,  # sigma points, the terminal zero included
        )
        kw.update(gen.extra_kwargs)
        return kw

    def sample_media(self, pipeline, gen, generator):
        out = pipeline(
            **self.pipeline_kwargs(gen),
            generator=generator,
            output_type=self.pixel_output,
            output=["videos", "audio"],
        )
        return self.to_media(MiniMaxH3Output(frames=out["videos"], audio=out["audio"]), gen)

    def to_media(self, output, gen):
        frames = pipeline_pixels_to_uint8(output.frames[0])
        audio = output.audio[0].float().cpu().numpy()
        rate = int(self.pipeline.audio_vae.config.sampling_rate)
        audio = audio[:, : int(len(frames) * rate / gen.fps)]  # the latents cover the clip, rounded at 40 a second
        return GeneratedMedia("video", frames=frames, fps=gen.fps, audio=audio, sample_rate=rate)

    def unpack_latents(self, latents, gen):
        """The generated video rows (frame-major, then row-major; each row a patch's channels-first values) as
        BCFHW: the pipeline's after-denoise unpacking (modular_pipelines/minimax_h3/decoders.py)."""
        _, channels, frames, height, width = self.latent_shape(gen)
        pt, ph, pw = self.pipeline.transformer.config.patch_size
        rows = latents.reshape(-1, frames // pt, height // ph, width // pw, channels, pt, ph, pw)
        return rows.permute(0, 4, 1, 5, 2, 6, 3, 7).reshape(-1, channels, frames, height, width)

    def _step_callback(self, gen, batch=None):
        on_step = super()._step_callback(gen, batch)
        return lambda raw: on_step(DataWardStep(**vars(raw)))
