"""Krea 2: a 12B single-stream MMDiT fed twelve tapped hidden states of a Qwen3-VL-4B text encoder, on the
Qwen-Image VAE (Wan 2.1's: 16 channels, 8x).

The loop samples packed tokens (B, H/16 * W/16, 64): the VAE latent normalised with its per-channel mean and std,
2x2-patchified. Streamed latents are unpacked the way the pipeline does before decoding, without the VAE's frame
axis: B, 16, H/8, W/8 in the normalised space, which ComfyUI previews with its Wan21 format
(comfy/supported_models.py, Krea2).

``guidance_scale`` is AI Toolkit's: ordinary CFG, 1 = off (AI Toolkit's Krea2Model passes ``max(0, g - 1)`` to its
pipeline, whose convention, diffusers' too, is ``cond + g * (cond - uncond)`` with 0 = off).

Krea-2-Turbo runs its sigmas with a fixed time shift (``mu`` 1.15) instead of the resolution-aware one: diffusers
reads that (``is_distilled``) from the checkpoint's model_index.json, and so does this family; where that file
cannot be read (a single-file transformer, a hub id not cached while downloads are off) the ``:turbo`` tag says it.
"""

import json
import os

from toolkit.memory_plan import WorkingSet
from toolkit.models.archs.wan21 import WAN21_RGB_BIAS, WAN21_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec

TURBO_TAGS = ("turbo",)
PIPELINE_SETTINGS = ("text_encoder_select_layers", "is_distilled", "patch_size")


def model_index(name_or_path: str) -> dict:
    """A checkpoint's model_index.json (its pipeline settings), or {} where it has none or it cannot be read
    under this engine's download rules. A hub id's is fetched alone (one small file) like its components."""
    from toolkit.models.components import hub
    from toolkit.models.components.sources import source_kind

    kind, path = source_kind(name_or_path), None
    if kind == "tiny":
        from toolkit.models.tiny import tiny_checkpoint

        path = os.path.join(tiny_checkpoint(name_or_path[len("tiny:") :]), "model_index.json")
    elif kind == "local":
        path = os.path.join(os.path.expanduser(name_or_path), "model_index.json")
    elif kind == "hub":
        root = hub.cached_snapshot(name_or_path)
        path = os.path.join(root, "model_index.json") if root else None
        if (path is None or not os.path.isfile(path)) and hub.downloads_possible():
            from huggingface_hub import hf_hub_download

            try:
                path = hf_hub_download(name_or_path, "model_index.json")
            except Exception:  # no such file in the repo, or the hub unreachable: the tag decides
                path = None
    if not path or not os.path.isfile(path):
        return {}
    with open(path) as f:
        return json.load(f)


class Krea2Model(BaseModel):
    arch = "krea2"
    modality = "image"
    group = "image"
    hub_id = "krea/Krea-2-Raw"
    # AI Toolkit's UI (options.tsx) offers krea2:turbo as Krea-2-Turbo; its krea2:o_edit and :o_edit_turbo train an
    # edit LoRA through AI Toolkit's own pipeline (reference images as Qwen3-VL prompt input and as clean latents in
    # the sequence), which Krea2Pipeline does not take: they are not offered here.
    tags = {
        "turbo": {
            "hub_id": "krea/Krea-2-Turbo",
            "description": "Krea 2 Turbo: distilled for 8 steps without CFG, fixed time shift",
            # The card's recipe: 8 steps, no CFG (guidance 1 here is diffusers' 0). AI Toolkit's UI samples 9.
            "defaults": {"num_inference_steps": 8, "guidance_scale": 1.0},
        }
    }
    description = "Krea 2 (12B MMDiT, Qwen3-VL-4B text encoder)"
    pipeline_class = "Krea2Pipeline"
    starts_from_latents = True  # image-to-image on its own pipeline (toolkit/models/latent_start.py)
    components = {
        "transformer": Component("diffusers.Krea2Transformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.Qwen3VLModel", "text_encoder"),
        "tokenizer": Component("transformers.AutoTokenizer", "tokenizer", has_weights=False),
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
    divisibility = 16  # 8x VAE x 2x2 packing
    native_resolution = 1024
    # diffusers' Krea 2 docs for the base (RAW) checkpoint: 28 steps at their guidance 4.5, which is 5.5 in AI
    # Toolkit's convention. Krea calls RAW a base for fine-tuning rather than for inference (Turbo is that).
    defaults = dict(width=1024, height=1024, num_inference_steps=28, guidance_scale=5.5, output_ext="png")
    # Not measured yet. Sampling: FLUX.2 [dev]'s measured 68 KiB per position (flux2.py: the same 6144 width and a
    # similar FFN), plus the fixed 512 text tokens beside 4096 image tokens at 1024^2; CFG runs the two passes one
    # after the other. Decoding: the Qwen-Image VAE's measured rate (qwen_image.py).
    working_set = WorkingSet(per_position=76 * 1024, per_pixel=4608)

    def build_pipeline(self):
        """The pipeline with the checkpoint's own settings (its text taps, patch size, and whether it is the
        distilled Turbo), as ``from_pretrained`` would take them from model_index.json."""
        from toolkit.models.components.loading import import_class

        cfg = self.model_config
        saved = model_index(cfg.name_or_path) or model_index(cfg.extras_name_or_path)
        settings = {k: saved[k] for k in PIPELINE_SETTINGS if k in saved}
        if "is_distilled" not in settings:
            settings["is_distilled"] = cfg.arch_tag in TURBO_TAGS
        if settings.get("text_encoder_select_layers") is not None:
            settings["text_encoder_select_layers"] = tuple(settings["text_encoder_select_layers"])
        pipe = import_class(f"diffusers.{self.pipeline_class}")(**self.parts, **settings)
        pipe.set_progress_bar_config(disable=True)
        return pipe

    def pipeline_kwargs(self, gen):
        guidance = max(0.0, gen.guidance_scale - 1.0)  # AI Toolkit's CFG scale -> Krea 2's
        return dict(
            prompt=gen.prompt,
            negative_prompt=(gen.negative_prompt or "") if guidance > 0 else None,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=guidance,
            **gen.extra_kwargs,
        )

    def unpack_latents(self, latents, gen):
        # (B, H/16 * W/16, 64) -> (B, 16, 1, H/8, W/8) -> the image's one frame
        return self.pipeline._unpack_latents(latents, gen.height, gen.width)[:, :, 0]
