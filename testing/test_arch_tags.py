"""The arch picker's facts (toolkit/models/arch_tags.py): every family's group, hub id and ``:tag`` variants as
``GET /models`` serves them, and a tagged arch through the engine's request checks (its defaults, its 422)."""

import pytest

from extensions_built_in.inference_engine.assets import AssetStore
from extensions_built_in.inference_engine.request_checks import BadRequest, RequestChecks
from toolkit.config_modules import GenerateImageConfig
from toolkit.models.arch_tags import GROUPS, UnknownArchTag
from toolkit.models.components.sources import is_hub_id
from toolkit.models.registry import ARCHS, describe_all, get_model_class

# AI Toolkit's UI (ui/src/app/jobs/new/options.tsx) offers ACE-Step 1.5 as a ComfyUI single file inside a repo
# (ostris/ace_step_1.5_ComfyUI_files/ace_step_1.5_base_aio.safetensors), which is no hub id the engine loads, and
# ACE-Step publishes no diffusers folder of the 1.5 base (only of XL): the picker leaves its Model field alone.
# Z-Image L2P and Chroma Radiance are published as one file in a repo (zhen-nan/L2P/model-1k-merge.safetensors,
# AI Toolkit's default; lodestones/Chroma1-Radiance/Chroma1-Radiance.safetensors, which AI Toolkit downloads), a local
# single file to the engine with a diffusers folder as extras (Z-Image-Turbo; Chroma1-HD); no diffusers folder of
# either exists.
NO_HUB_ID = {"ace_step_15", "zimage_l2p", "chroma_radiance"}


@pytest.fixture(scope="module")
def checks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tag_checks")
    return RequestChecks("cpu", AssetStore(str(folder / "assets")), str(folder / "outputs"), [str(folder)])


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_every_family_has_a_picker_group_and_a_hub_id(arch):
    cls = get_model_class(arch)
    assert cls.group in GROUPS
    if arch in NO_HUB_ID:
        assert cls.hub_id == ""
    else:
        assert is_hub_id(cls.hub_id), cls.hub_id  # org/name: what the engine fetches from the hub
    for tag, entry in cls.tags.items():
        assert tag and ":" not in tag and set(entry) <= {"hub_id", "description", "defaults", "extras_hub_id"}
        assert is_hub_id(cls.hub_id_for(f"{arch}:{tag}")) and entry.get("description")
        merged = cls.defaults_for(f"{arch}:{tag}")
        GenerateImageConfig(prompt="", **merged)  # every key is a sample setting the engine takes
        assert merged["output_ext"] in cls.output_exts


def test_groups_follow_ai_toolkit():
    """Edit families are AI Toolkit's "instruction" group; the others their modality's."""
    groups = {a: get_model_class(a).group for a in ARCHS}
    for arch in ("flux_kontext", "qwen_image_edit", "qwen_image_edit_plus"):
        assert groups[arch] == "instruction"
    for arch in ("sd1", "zimage", "qwen_image", "wan21", "wan22_14b_i2v", "ltx2", "stable_audio"):
        assert groups[arch] == get_model_class(arch).modality


def test_a_tag_updates_the_family_defaults_and_picks_its_checkpoint():
    z = get_model_class("zimage")
    assert z.hub_id_for("zimage") == "Tongyi-MAI/Z-Image" and z.defaults_for("zimage")["num_inference_steps"] == 50
    turbo = z.defaults_for("zimage:turbo")
    assert z.hub_id_for("zimage:turbo") == "Tongyi-MAI/Z-Image-Turbo"
    assert (turbo["num_inference_steps"], turbo["guidance_scale"]) == (9, 0.0)
    assert {k: v for k, v in turbo.items() if k not in z.tags["turbo"]["defaults"]} == {
        k: v for k, v in z.defaults.items() if k not in z.tags["turbo"]["defaults"]
    }  # the rest is the family's
    assert get_model_class("qwen_image").hub_id_for("qwen_image:2512") == "Qwen/Qwen-Image-2512"
    assert (
        get_model_class("qwen_image_edit_plus").hub_id_for("qwen_image_edit_plus:2511") == "Qwen/Qwen-Image-Edit-2511"
    )
    wan = get_model_class("wan21")
    assert (wan.defaults_for("wan21:14b")["width"], wan.defaults_for("wan21:1b")["width"]) == (1280, 832)


def test_a_subclassed_family_offers_its_own_checkpoint_not_its_parents():
    edit, image = get_model_class("qwen_image_edit"), get_model_class("qwen_image")
    assert issubclass(edit, image) and "2512" in image.tags and edit.tags == {}
    assert edit.hub_id == "Qwen/Qwen-Image-Edit" != image.hub_id


def test_models_listing_carries_group_hub_id_and_each_tag_with_its_whole_defaults():
    listing = {m["arch"]: m for m in describe_all()}
    z = listing["zimage"]
    assert (z["group"], z["hub_id"]) == ("image", "Tongyi-MAI/Z-Image")
    assert z["tags"]["turbo"]["hub_id"] == "Tongyi-MAI/Z-Image-Turbo"
    assert z["tags"]["turbo"]["defaults"] == get_model_class("zimage").defaults_for("zimage:turbo")
    assert z["tags"]["turbo"]["description"]
    assert z["tags"]["deturbo"]["extras_hub_id"] == "Tongyi-MAI/Z-Image-Turbo"
    assert listing["sd1"]["tags"] == {}


def test_an_unknown_tag_names_the_family_tags():
    with pytest.raises(UnknownArchTag, match="zimage:turbo"):
        get_model_class("zimage").defaults_for("zimage:turbbo")
    with pytest.raises(UnknownArchTag, match="use sd1 alone"):
        get_model_class("sd1").hub_id_for("sd1:turbo")


def test_the_request_checks_take_the_tag_defaults(checks):
    sample = {"prompt": "a fox", "width": 64, "height": 64}
    _, _, gen, _ = checks.resolve({"arch": "zimage:turbo", "name_or_path": "tiny:zimage"}, sample, {})
    assert (gen.num_inference_steps, gen.guidance_scale) == (9, 0.0)
    _, _, gen, _ = checks.resolve({"arch": "zimage", "name_or_path": "tiny:zimage"}, sample, {})
    assert (gen.num_inference_steps, gen.guidance_scale) == (50, 4.0)
    # what the request says wins over the tag
    _, _, gen, _ = checks.resolve(
        {"arch": "zimage:turbo", "name_or_path": "tiny:zimage"}, sample | {"guidance_scale": 2.0}, {}
    )
    assert gen.guidance_scale == 2.0


def test_an_unknown_tag_is_refused_naming_model_arch(checks):
    with pytest.raises(BadRequest) as e:
        checks.resolve({"arch": "zimage:warp", "name_or_path": "tiny:zimage"}, {"prompt": "a fox"}, {})
    assert e.value.loc == ("body", "model", "arch") and "zimage:turbo" in str(e.value)


def test_a_denoiser_only_tag_checkpoint_takes_its_extras_unless_the_request_names_them():
    z = get_model_class("zimage")
    named = {"name_or_path": "ostris/Z-Image-De-Turbo"}
    assert z.model_for("zimage:deturbo", named)["extras_name_or_path"] == "Tongyi-MAI/Z-Image-Turbo"
    own = named | {"extras_name_or_path": "my/extras"}
    assert z.model_for("zimage:deturbo", own) == own
    assert z.model_for("zimage:deturbo", {"name_or_path": "tiny:zimage"}) == {"name_or_path": "tiny:zimage"}
