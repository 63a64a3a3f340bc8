"""AI Toolkit's other arch names (toolkit/config_modules.py ARCH_ALIASES): a request naming ``flex1`` or ``sd15``
reaches the family AI Toolkit runs it as, through the engine's request checks, and ``GET /models`` lists the
names under that family rather than as families of their own."""

import pytest

from extensions_built_in.inference_engine.assets import AssetStore
from extensions_built_in.inference_engine.request_checks import BadRequest, RequestChecks
from toolkit.config_modules import ModelConfig
from toolkit.models.registry import ARCHS, describe_all, get_model_class


@pytest.fixture(scope="module")
def checks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("alias_checks")
    return RequestChecks("cpu", AssetStore(str(folder / "assets")), str(folder / "outputs"), [str(folder)])


@pytest.mark.parametrize("alias, family", [("flex1", "flux"), ("sd15", "sd1")])
def test_a_request_naming_an_alias_runs_as_its_family(checks, alias, family):
    model_class, config, gen, _ = checks.resolve({"arch": alias, "name_or_path": f"tiny:{family}"}, {"prompt": "x"}, {})
    assert model_class is get_model_class(family) and model_class.arch == family
    assert config.arch == family  # the holder, the pool and the sidecar see the family
    defaults = get_model_class(family).defaults
    assert (gen.width, gen.height, gen.num_inference_steps) == (
        defaults["width"],
        defaults["height"],
        defaults["num_inference_steps"],
    )


def test_model_config_resolves_the_same_names():
    assert ModelConfig(name_or_path="x", arch="flex1").arch == "flux"
    assert ModelConfig(name_or_path="x", arch="sd15").arch == "sd1"
    assert ModelConfig(name_or_path="x", arch="flux").arch == "flux"


def test_an_alias_with_a_tag_its_family_lacks_is_a_422_naming_the_field(checks):
    with pytest.raises(BadRequest) as e:
        checks.resolve({"arch": "flex1:turbo", "name_or_path": "tiny:flux"}, {"prompt": "x"}, {})
    assert e.value.loc == ("body", "model", "arch") and "flux has no tag 'turbo'" in str(e.value)


def test_models_listing_names_aliases_under_their_family_with_the_checkpoint_ai_toolkit_offers():
    listing = {m["arch"]: m for m in describe_all()}
    assert "flex1" not in listing and "sd15" not in listing and "flex1" not in ARCHS
    assert listing["flux"]["aliases"] == {"flex1": {"hub_id": "ostris/Flex.1-alpha"}}
    assert listing["sd1"]["aliases"] == {"sd15": {"hub_id": "stable-diffusion-v1-5/stable-diffusion-v1-5"}}
    assert listing["sdxl"]["aliases"] == {}
