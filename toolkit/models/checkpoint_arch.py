"""Which family a checkpoint on disk is, read from its JSON and its safetensors header alone (no weights, no
torch), for the model library (``GET /checkpoints``).

A diffusers folder names its pipeline in ``model_index.json`` (``_class_name``); the registry's ``pipeline_class``
maps that to families. Where several families share a pipeline class, the components' configs tell them apart
(SD 2's linear attention projections, Wan 2.2's second expert or 48-channel patches, Flex.2's control channels,
the transformer's own class); what they cannot tell apart goes to the family the registry lists first.

A single ``.safetensors`` file names nothing but its tensors; the key names each family's code uses are the
signature (``SIGNATURES``): Black Forest Labs' ``double_blocks.*.img_attn.qkv`` is Flux, Stability's
``model.diffusion_model.input_blocks`` with ``label_emb`` is SDXL, Wan-AI's ``patch_embedding`` with
``blocks.*.self_attn`` is Wan. The prefixes ComfyUI and the trainers put in front (``model.diffusion_model.``,
``diffusion_model.``, ``transformer.``, ``unet.``) are looked through.
"""

from __future__ import annotations

import json
import os
from typing import Callable, Optional

# Prefixes in front of the denoiser's own names in whole-model and ComfyUI files.
PREFIXES = ("model.diffusion_model.", "diffusion_model.", "model.", "transformer.", "unet.")


def _has(*parts: str) -> Callable[[set, dict], bool]:
    """Every part is the start of some key (``"label_emb."``) or, with a leading dot, inside one."""

    def test(keys: set, _header: dict) -> bool:
        return all(any((p in k) if p.startswith(".") else k.startswith(p) for k in keys) for p in parts)

    return test


def _any(*tests: Callable[[set, dict], bool]) -> Callable[[set, dict], bool]:
    return lambda keys, header: any(t(keys, header) for t in tests)


def _wan(keys: set, header: dict) -> Optional[str]:
    """Wan 2.1 text-to-video, its image-to-video (an image embedder, ``k_img``), Wan 2.2 5B (48 latent
    channels into the patch embedding) or an expert of Wan 2.2 14B image-to-video (36 channels: noise and image
    latents, no image embedder). A text-to-video 14B expert reads as Wan 2.1 14B: the same shapes."""
    patch = next((header[k] for k in header if _strip(k) == "patch_embedding.weight"), None)
    if patch and len(patch.get("shape", [])) > 1 and patch["shape"][1] == 48:
        return "wan22_5b"
    if any(("k_img" in k) or k.startswith(("img_emb.", "condition_embedder.image_embedder")) for k in keys):
        return "wan21_i2v"
    if patch and len(patch.get("shape", [])) > 1 and patch["shape"][1] == 36:  # image latents, no image encoder
        return "wan22_14b_i2v"
    return "wan21"


def _sd(keys: set, header: dict) -> str:
    """SD 1.x or 2.x: 2.x's CLIP is OpenCLIP (``cond_stage_model.model``) and its attention projections are
    linear (a 2-d ``proj_in``) where 1.x has 1×1 convolutions."""
    if any(k.startswith("cond_stage_model.model.") for k in header):
        return "sd2"
    if any(k.startswith("cond_stage_model.transformer.") for k in header):  # OpenAI's CLIP-L: 1.x
        return "sd1"
    proj = next(
        (v for k, v in header.items() if k != "__metadata__" and k.endswith("attentions.0.proj_in.weight")), None
    )
    proj = proj or next((v for k, v in header.items() if k.endswith(".1.proj_in.weight") and "input_blocks" in k), None)
    return "sd2" if proj and len(proj.get("shape", [])) == 2 else "sd1"


# (family or a function of the keys, test) in order: the more specific signature first (Chroma's and Flux.2's
# keys include Flux's shapes, LTX-2's include LTX's).
SIGNATURES: list = [
    ("ltx2", _has("audio_", "transformer_blocks.")),
    ("ltx", _any(_has("patchify_proj."), _has("scale_shift_table", "proj_in.", "time_embed.", "caption_projection."))),
    (
        "hunyuan_video",
        _any(_has(".img_attn_qkv."), _has("context_embedder.token_refiner."), _has("txt_in.individual_token_refiner.")),
    ),
    ("chroma_radiance", _has("nerf_")),
    ("chroma", _has("distilled_guidance_layer.")),
    ("flux2", _has("double_stream_modulation_img.")),
    (
        "flux",
        _any(
            _has("double_blocks.", "single_blocks.", ".img_attn.qkv."),
            _has("single_transformer_blocks.", "x_embedder.", "time_text_embed."),
        ),
    ),
    ("hidream", _has("double_stream_blocks.")),
    ("auraflow", _has("register_tokens")),
    (
        "sd3",
        _any(
            _has("joint_blocks."),
            _has("pos_embed.proj.", "time_text_embed.", "context_embedder.", "transformer_blocks."),
        ),
    ),
    ("pixart", _any(_has("adaln_single.", "caption_projection."), _has("y_embedder.", "t_block."))),
    ("qwen_image", _has("img_in.", "txt_in.", "txt_norm.")),
    ("zimage", _any(_has("all_x_embedder."), _has("x_pad_token", "cap_pad_token"))),
    ("lumina2", _has("noise_refiner.", "context_refiner.")),
    ("cogview4", _has("time_condition_embed.")),
    (_wan, _has("patch_embedding.", "blocks.")),
    ("sdxl", _any(_has("label_emb."), _has("add_embedding."), _has("conditioner.embedders."))),
    (_sd, _any(_has("input_blocks."), _has("down_blocks.", "mid_block."), _has("cond_stage_model."))),
]


def _strip(key: str) -> str:
    for prefix in PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def arch_of_header(header: dict) -> Optional[str]:
    """The family a safetensors header's tensor names point to; None when no signature matches (a VAE, a text
    encoder, a family not in the table)."""
    raw = {k: v for k, v in header.items() if k != "__metadata__"}
    keys = {_strip(k) for k in raw}
    for arch, test in SIGNATURES:
        if test(keys, raw):
            return arch(keys, raw) if callable(arch) else arch
    return None


def arch_of_file(path: str) -> Optional[str]:
    from toolkit.models.components.loading import safetensors_header

    return arch_of_header(safetensors_header(path))


def _json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _denoiser_config(folder: str) -> dict:
    for sub in ("transformer", "unet"):
        config = _json(os.path.join(folder, sub, "config.json"))
        if config:
            return config
    return {}


def pipeline_archs() -> dict:
    """Pipeline class -> the families that load it, in the registry's order. A family's task pipelines count too:
    an inpainting checkpoint's folder names ``StableDiffusionInpaintPipeline`` or ``FluxFillPipeline``."""
    from toolkit.models.registry import ARCHS, get_model_class

    out: dict = {}
    for arch in ARCHS:
        cls = get_model_class(arch)
        for name in (cls.pipeline_class, cls.fill_pipeline, cls.inpaint_pipeline, cls.img2img_pipeline):
            if name and arch not in out.get(name, []):
                out.setdefault(name, []).append(arch)
    return out


def arch_of_folder(folder: str, by_pipeline: Optional[dict] = None) -> Optional[str]:
    """A diffusers folder's family: its ``model_index.json`` pipeline class through the registry, the shared
    classes told apart by their components' configs."""
    index = _json(os.path.join(folder, "model_index.json")) or _json(os.path.join(folder, "modular_model_index.json"))
    candidates = (by_pipeline if by_pipeline is not None else pipeline_archs()).get(index.get("_class_name"), [])
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    config = _denoiser_config(folder)
    own_class = str(config.get("_class_name") or "")
    if "sd2" in candidates:
        linear = config.get("use_linear_projection") or config.get("cross_attention_dim") == 1024
        return "sd2" if linear else "sd1"
    if "wan21" in candidates or "wan21_i2v" in candidates:
        two_experts = isinstance(index.get("transformer_2"), list) and index["transformer_2"][0] is not None
        if two_experts:
            return next(a for a in candidates if a.startswith("wan22_14b"))
        if config.get("in_channels") == 48 and "wan22_5b" in candidates:
            return "wan22_5b"
        return candidates[0]
    if "flex2" in candidates and int(config.get("in_channels") or 0) > 64:
        return "flex2"
    if "chroma_radiance" in candidates and "Radiance" in own_class:
        return "chroma_radiance"
    if "zimage_l2p" in candidates and "L2P" in own_class:
        return "zimage_l2p"
    return candidates[0]


def native_size(folder: str, arch_class) -> Optional[int]:
    """An image checkpoint's own training size: its denoiser's ``sample_size`` (latent pixels) times the VAE's
    downscale (2 per block after the first); None where the config does not say (the family's then)."""
    if getattr(arch_class, "modality", "image") != "image":
        return None
    sample = _denoiser_config(folder).get("sample_size")
    if isinstance(sample, list):
        sample = sample[0] if sample else None
    if not isinstance(sample, int) or sample <= 0:
        return None
    blocks = _json(os.path.join(folder, "vae", "config.json")).get("block_out_channels")
    factor = 2 ** (len(blocks) - 1) if isinstance(blocks, list) and blocks else arch_class.latent.spatial_factor
    return sample * factor
