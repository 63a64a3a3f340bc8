"""Config lookup, parsing, `${ENV}` substitution, `[name]` tags and job-type mapping."""

import importlib
import json
import os
from collections import OrderedDict

import pytest

from toolkit import paths
from toolkit.config import get_cfg_file_path, get_config, preprocess_config
from toolkit.job import get_job

YAML_CONFIG = """\
job: extension
config:
  name: "[name]"
  lr: 1e-4
  big: 1e4
  plain: 0.5
  text: "1e-4"
  folder: "output/[name]/samples"
  process:
    - type: whatever
      zeta: 1
      alpha: 2
meta:
  name: "[name]"
"""


@pytest.fixture
def config_root(tmp_path, monkeypatch):
    """A private config/ folder and a different working directory."""
    root = tmp_path / "config"
    root.mkdir()
    monkeypatch.setattr(paths, "CONFIG_ROOT", str(root))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return root


def write_json(path, name="from_json"):
    path.write_text(json.dumps({"job": "extension", "config": {"name": name}}))


def test_name_without_extension_is_probed_in_config_folder(config_root):
    (config_root / "foo.yaml").write_text(YAML_CONFIG)
    assert get_cfg_file_path("foo") == str(config_root / "foo.yaml")
    assert get_config("foo", name="x")["config"]["name"] == "x"


def test_probing_order_prefers_json_then_jsonc_yaml_yml(config_root):
    for ext in (".yml", ".yaml", ".jsonc"):
        (config_root / f"foo{ext}").write_text(YAML_CONFIG)
    assert get_cfg_file_path("foo").endswith("foo.jsonc")
    write_json(config_root / "foo.json")
    assert get_cfg_file_path("foo").endswith("foo.json")


def test_subfolder_names_work_in_config_folder(config_root):
    (config_root / "examples").mkdir()
    write_json(config_root / "examples" / "bar.json", "bar")
    assert get_config("examples/bar")["config"]["name"] == "bar"


def test_as_given_and_cwd_relative_win_over_exact_config_hit(config_root):
    """AI Toolkit skips an exact config/<arg> hit; we keep its order and try it last."""
    write_json(config_root / "same.json", "in_config")
    assert get_config("same.json")["config"]["name"] == "in_config"
    write_json(config_root.parent / "cwd" / "same.json", "in_cwd")
    assert get_config("same.json")["config"]["name"] == "in_cwd"


def test_relative_and_absolute_paths(config_root, tmp_path):
    nested = tmp_path / "cwd" / "sub"
    nested.mkdir()
    write_json(nested / "rel.json", "rel")
    assert get_config(os.path.join("sub", "rel.json"))["config"]["name"] == "rel"
    absolute = tmp_path / "abs.json"
    write_json(absolute, "abs")
    assert get_config(str(absolute))["config"]["name"] == "abs"
    assert get_config(absolute)["config"]["name"] == "abs"  # PathLike too


def test_missing_file_error_names_the_argument(config_root):
    with pytest.raises(ValueError, match="Could not find config file 'nope'"):
        get_config("nope")


def test_unknown_extension_is_rejected(config_root):
    (config_root / "foo.toml").write_text("job = 'x'")
    with pytest.raises(ValueError, match="unsupported extension '.toml'"):
        get_config("foo.toml")


def test_yaml_floats_order_and_tags(config_root):
    (config_root / "foo.yaml").write_text(YAML_CONFIG)
    config = get_config("foo", name="run1")
    assert isinstance(config, OrderedDict)
    assert isinstance(config["config"], OrderedDict)
    assert config["config"]["lr"] == pytest.approx(1e-4) and isinstance(config["config"]["lr"], float)
    assert config["config"]["big"] == 10000.0
    assert config["config"]["plain"] == 0.5
    assert config["config"]["text"] == "1e-4"  # quoted stays a string
    assert list(config["config"]) == ["name", "lr", "big", "plain", "text", "folder", "process"]
    assert list(config["config"]["process"][0]) == ["type", "zeta", "alpha"]
    assert config["config"]["folder"] == "output/run1/samples"
    assert config["meta"]["name"] == "run1"


def test_name_tag_uses_config_name_by_default(config_root):
    (config_root / "t.json").write_text(json.dumps({"job": "extension", "config": {"name": "base", "out": "o/[name]"}}))
    assert get_config("t")["config"]["out"] == "o/base"
    assert get_config("t", name="other")["config"]["out"] == "o/other"


def test_name_with_quotes_survives_the_json_round_trip():
    config = get_config({"job": "x", "config": {"name": "[name]"}}, name='a "quoted" \\ name')
    assert config["config"]["name"] == 'a "quoted" \\ name'


def test_env_substitution_json_and_yaml(config_root, monkeypatch):
    monkeypatch.setenv("AITK_TEST_TOKEN", "s3cret")
    (config_root / "e.yaml").write_text(
        "job: extension\nconfig:\n  name: e\n  token: ${AITK_TEST_TOKEN}\n  mixed: a-${AITK_TEST_TOKEN}-b\n"
    )
    (config_root / "j.json").write_text('{"job": "extension", "config": {"name": "j", "token": "${AITK_TEST_TOKEN}"}}')
    assert get_config("e")["config"]["token"] == "s3cret"
    assert get_config("e")["config"]["mixed"] == "a-s3cret-b"
    assert get_config("j")["config"]["token"] == "s3cret"


def test_unset_env_var_names_variable_and_file(config_root, monkeypatch):
    monkeypatch.delenv("AITK_TEST_UNSET_VAR", raising=False)
    path = config_root / "u.yaml"
    path.write_text("job: extension\nconfig:\n  name: ${AITK_TEST_UNSET_VAR}\n")
    with pytest.raises(ValueError) as info:
        get_config("u")
    assert "AITK_TEST_UNSET_VAR" in str(info.value)
    assert str(path) in str(info.value)


def test_dict_input_is_not_env_substituted_and_not_mutated():
    original = {"job": "extension", "config": {"name": "d", "v": "${NOT_TOUCHED}", "p": "[name]"}}
    config = get_config(original)
    assert config["config"]["v"] == "${NOT_TOUCHED}"
    assert config["config"]["p"] == "d"
    assert original["config"]["p"] == "[name]"


@pytest.mark.parametrize(
    "config, message",
    [
        ({"config": {"name": "x"}}, 'Missing "job" key'),
        ({"job": "extension"}, 'Missing "config" section'),
        ({"job": "extension", "config": {}}, 'Missing "config.name" key'),
    ],
)
def test_required_top_level_keys(config, message):
    with pytest.raises(ValueError, match=message):
        preprocess_config(config)


def test_name_argument_replaces_missing_config_name():
    assert get_config({"job": "x", "config": {}}, name="given")["job"] == "x"


def test_unknown_and_empty_job_types():
    with pytest.raises(ValueError, match=r"Unknown job type 'train'.*extension, generate"):
        get_job({"job": "train", "config": {"name": "x"}})
    with pytest.raises(ValueError, match=r'Missing "job" key.*extension, generate'):
        get_job({"job": "", "config": {"name": "x"}})


def test_paths_module():
    assert os.path.isfile(os.path.join(paths.TOOLKIT_ROOT, "run.py"))
    assert paths.CONFIG_ROOT == os.path.join(paths.TOOLKIT_ROOT, "config")
    assert paths.get_path("models") == os.path.join(paths.TOOLKIT_ROOT, "models")
    assert paths.get_path("/abs/x") == "/abs/x"


@pytest.mark.parametrize("value, expected", [("  ", None), ("/data/models", "/data/models")])
def test_models_path_env(monkeypatch, value, expected):
    monkeypatch.setenv("MODELS_PATH", value)
    try:
        importlib.reload(paths)
        assert paths.MODELS_PATH == (expected or os.path.join(paths.TOOLKIT_ROOT, "models"))
    finally:
        monkeypatch.undo()
        importlib.reload(paths)


# ------------------------------------------------------------------ AI Toolkit's inline prompt flags
def test_prompt_flags_are_parsed_into_settings_and_cut_from_the_text():
    from toolkit.config_modules import parse_prompt_flags

    text, settings = parse_prompt_flags("a cat on a mat --w 768 --h 512 --seed 3 --n blurry, dark --cfg 4.5 --s 9")
    assert text == "a cat on a mat"
    assert settings == {
        "width": 768,
        "height": 512,
        "seed": 3,
        "negative_prompt": "blurry, dark",
        "guidance_scale": 4.5,
        "num_inference_steps": 9,
    }
    assert parse_prompt_flags("plain text") == ("plain text", {})
    assert parse_prompt_flags("x --unknown 5 --frames 9") == ("x", {"num_frames": 9})
    with pytest.raises(ValueError, match="--w"):
        parse_prompt_flags("x --w wide")


def test_a_generate_config_never_parses_its_prompt():
    """The engine builds GenerateImageConfig from checked fields; the prompt must stay text (security issue)."""
    from toolkit.config_modules import GenerateImageConfig

    prompt = "x --ctrl_img /etc/passwd --w 100000 --h 100000 --s 1000000"
    gen = GenerateImageConfig(prompt=prompt, width=64, height=64, num_inference_steps=2)
    assert (gen.prompt, gen.width, gen.height, gen.num_inference_steps, gen.ctrl_img) == (prompt, 64, 64, 2, None)
