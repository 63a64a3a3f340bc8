"""The one table of families: arch name -> the class in its file under ``toolkit/models/archs``.

Arch files import diffusers only inside methods, so reading the table (and serving ``GET /models``) stays
cheap. A new family is a new file plus one line here.
"""

from __future__ import annotations

import importlib

from toolkit.config_modules import ARCH_ALIASES, arch_family

ARCHS = {
    # image
    "sd1": "toolkit.models.archs.sd1:SD1Model",
    "sd2": "toolkit.models.archs.sd2:SD2Model",
    "flux": "toolkit.models.archs.flux:FluxModel",
    "sdxl": "toolkit.models.archs.sdxl:SDXLModel",
    "ssd": "toolkit.models.archs.ssd:SSD1BModel",
    "vega": "toolkit.models.archs.vega:VegaModel",
    "zimage": "toolkit.models.archs.zimage:ZImageModel",
    "zimage_l2p": "toolkit.models.archs.zimage_l2p:ZImageL2PModel",
    "prx_pixel": "toolkit.models.archs.prx_pixel:PRXPixelModel",
    "qwen_image": "toolkit.models.archs.qwen_image:QwenImageModel",
    "qwen_image_edit": "toolkit.models.archs.qwen_image_edit:QwenImageEditModel",
    "qwen_image_edit_plus": "toolkit.models.archs.qwen_image_edit_plus:QwenImageEditPlusModel",
    "chroma": "toolkit.models.archs.chroma:ChromaModel",
    "chroma_radiance": "toolkit.models.archs.chroma_radiance:ChromaRadianceModel",
    "sd3": "toolkit.models.archs.sd3:SD3Model",
    "flux2_klein_4b": "toolkit.models.archs.flux2_klein:Flux2Klein4BModel",
    "flux2_klein_9b": "toolkit.models.archs.flux2_klein:Flux2Klein9BModel",
    "flux_kontext": "toolkit.models.archs.flux_kontext:FluxKontextModel",
    "flex2": "toolkit.models.archs.flex2:Flex2Model",
    "lumina2": "toolkit.models.archs.lumina2:Lumina2Model",
    "cogview4": "toolkit.models.archs.cogview4:CogView4Model",
    "auraflow": "toolkit.models.archs.auraflow:AuraFlowModel",
    "pixart_sigma": "toolkit.models.archs.pixart_sigma:PixArtSigmaModel",
    "pixart": "toolkit.models.archs.pixart:PixArtAlphaModel",
    "hidream": "toolkit.models.archs.hidream:HiDreamModel",
    "flux2": "toolkit.models.archs.flux2:Flux2Model",
    "ernie_image": "toolkit.models.archs.ernie_image:ErnieImageModel",
    "krea2": "toolkit.models.archs.krea2:Krea2Model",
    "nucleus_image": "toolkit.models.archs.nucleus_image:NucleusImageModel",
    "ideogram4": "toolkit.models.archs.ideogram4:Ideogram4Model",
    "anima": "toolkit.models.archs.anima:AnimaModel",
    # video
    "wan21": "toolkit.models.archs.wan21:Wan21Model",
    "wan22_5b": "toolkit.models.archs.wan22_5b:Wan225bModel",
    "wan21_i2v": "toolkit.models.archs.wan21_i2v:Wan21I2VModel",
    "wan22_14b": "toolkit.models.archs.wan22_14b:Wan2214bModel",
    "wan22_14b_i2v": "toolkit.models.archs.wan22_14b_i2v:Wan2214bI2VModel",
    "ltx": "toolkit.models.archs.ltx:LTXModel",
    "ltx2": "toolkit.models.archs.ltx2:LTX2Model",
    "ltx2.3": "toolkit.models.archs.ltx2_3:LTX23Model",
    "ltx2.5": "toolkit.models.archs.ltx2_5:LTX25Model",
    "minimax_h3": "toolkit.models.archs.minimax_h3:MiniMaxH3Model",
    "hunyuan_video": "toolkit.models.archs.hunyuan_video:HunyuanVideoModel",
    "hunyuan_video15": "toolkit.models.archs.hunyuan_video15:HunyuanVideo15Model",
    # audio
    "ace_step_15": "toolkit.models.archs.ace_step_15:AceStep15Model",
    "ace_step_15_xl": "toolkit.models.archs.ace_step_15_xl:AceStep15XLModel",
    "stable_audio": "toolkit.models.archs.stable_audio:StableAudioModel",
}


class UnknownArchError(ValueError):
    pass


def get_model_class(arch: str):
    name = arch_family(str(arch).partition(":")[0])  # AI Toolkit's aliases: flex1 is flux, sd15 is sd1
    if name not in ARCHS:
        raise UnknownArchError(f"unknown arch {arch!r}; known: {', '.join(sorted(ARCHS))}")
    module, _, cls = ARCHS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def describe_all() -> list[dict]:
    """``GET /models``: each family's form facts, the speed tiers it offers (toolkit/models/speed.py), and the other
    arch names AI Toolkit runs it under, each with the checkpoint its UI offers for that name."""
    from toolkit.models.speed import speeds_of

    def aliases(arch):
        return {alias: {"hub_id": hub} for alias, (family, hub) in ARCH_ALIASES.items() if family == arch}

    return [
        cls.describe() | {"speeds": speeds_of(cls), "aliases": aliases(cls.arch)} for cls in map(get_model_class, ARCHS)
    ]
