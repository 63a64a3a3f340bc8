"""What the arch picker knows of a family: the checkpoint it offers, its group, and its ``:tag`` variants.

AI Toolkit names a family's variants with a tag after a colon (``zimage:turbo``, ``qwen_image:2512``,
``wan22_14b:t2v``; ui/src/app/jobs/new/options.tsx in ostris/ai-toolkit): the tag picks the checkpoint its UI
offers and the sample settings that suit it, while the model class stays the family's
(``toolkit.models.registry.get_model_class`` drops the tag). Its UI groups the archs as image, instruction
(editing), video, audio and experimental; ``GROUPS`` keeps that order.

A family declares, beside its other class attributes::

    hub_id = "Tongyi-MAI/Z-Image"              # the published diffusers checkpoint the picker offers
    group = "image"                            # only where it is not the modality's (edit families: "instruction")
    tags = {"turbo": {"hub_id": "Tongyi-MAI/Z-Image-Turbo", "description": "...",
                      "defaults": {"num_inference_steps": 9, "guidance_scale": 0.0}}}

A tag's ``defaults`` update the family's; a tag without ``hub_id`` offers the family's. A tag whose checkpoint
holds the denoiser alone names the checkpoint of the other components as ``extras_hub_id`` (AI Toolkit's UI sets
``extras_name_or_path`` to it on choosing that arch). No torch here.
"""

from __future__ import annotations

from typing import ClassVar, Optional

GROUPS = ("image", "instruction", "video", "audio", "experimental")
_MODALITY_GROUP = {"image": "image", "video": "video", "audio": "audio"}


class UnknownArchTag(ValueError):
    """``family:tag`` with a tag the family does not declare."""


class ArchPicker:
    hub_id: ClassVar[str] = ""
    group: ClassVar[str] = "image"
    tags: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        # A hub id and tags name one family's checkpoints: a family that subclasses another (Qwen-Image-Edit of
        # Qwen-Image) would otherwise offer its parent's checkpoint and variants as its own.
        if "hub_id" not in own:
            cls.hub_id = ""
        if "tags" not in own:
            cls.tags = {}
        # The group follows the modality unless a family (or the family it subclasses) says otherwise.
        if "group" in own:
            cls._group_declared = True
        elif not getattr(cls, "_group_declared", False) and getattr(cls, "modality", None) in _MODALITY_GROUP:
            cls.group = _MODALITY_GROUP[cls.modality]

    @classmethod
    def tag_of(cls, arch: Optional[str]) -> Optional[str]:
        """The tag of ``family:tag`` (None for the bare family); a tag the family lacks is an error naming those
        it has."""
        tag = str(arch or "").partition(":")[2]
        if not tag:
            return None
        if tag not in cls.tags:
            known = ", ".join(f"{cls.arch}:{t}" for t in cls.tags)
            raise UnknownArchTag(
                f"{cls.arch} has no tag {tag!r}; " + (f"its tags: {known}" if known else f"use {cls.arch} alone")
            )
        return tag

    @classmethod
    def defaults_for(cls, arch: Optional[str] = None) -> dict:
        """The sample defaults of ``arch`` (``family`` or ``family:tag``): the family's, updated by the tag's."""
        tag = cls.tag_of(arch)
        return {**cls.defaults, **(cls.tags[tag].get("defaults", {}) if tag else {})}

    @classmethod
    def hub_id_for(cls, arch: Optional[str] = None) -> str:
        tag = cls.tag_of(arch)
        return (tag and cls.tags[tag].get("hub_id")) or cls.hub_id

    @classmethod
    def model_for(cls, arch: Optional[str], model: dict) -> dict:
        """A request's model settings with what its tag implies: a tag's denoiser-only checkpoint, named as is,
        takes the other components from the tag's ``extras_hub_id`` unless the request names them."""
        tag = cls.tag_of(arch)
        extras = tag and cls.tags[tag].get("extras_hub_id")
        if extras and not model.get("extras_name_or_path") and model.get("name_or_path") == cls.hub_id_for(arch):
            return {**model, "extras_name_or_path": extras}
        return model

    @classmethod
    def picker_facts(cls) -> dict:
        """``GET /models``'s picker keys: the group, the family's hub id, and each tag with its full defaults."""
        tags = {
            tag: {
                "hub_id": cls.hub_id_for(f"{cls.arch}:{tag}"),
                "description": entry.get("description", ""),
                "defaults": cls.defaults_for(f"{cls.arch}:{tag}"),
            }
            | ({"extras_hub_id": entry["extras_hub_id"]} if entry.get("extras_hub_id") else {})
            for tag, entry in cls.tags.items()
        }
        return {"group": cls.group, "hub_id": cls.hub_id, "tags": tags}
