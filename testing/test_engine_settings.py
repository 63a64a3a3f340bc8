"""``engine:`` settings (extensions_built_in/inference_engine/settings.py): one default per setting, the README's
"Engine settings" table agrees with it, and a job config's block is read as the job process reads it."""

import dataclasses
import os
import re
from pathlib import Path

import pytest
import yaml

from extensions_built_in.inference_engine.settings import EngineSettings
from toolkit.paths import MODELS_PATH

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^\| `([a-z_0-9]+)` \| `([^`]*)` \|")


def readme_table() -> dict:
    """``{setting: default}`` from README's "Engine settings" table, the default read as YAML."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Engine settings\n", 1)[1].split("\n## ", 1)[0]
    rows = [ROW.match(line) for line in section.splitlines() if line.startswith("| `")]
    assert rows and all(rows), "every row of the table names a setting and its default, both in backticks"
    table = {m.group(1): yaml.safe_load(m.group(2)) for m in rows}
    assert len(table) == len(rows), "a setting is listed twice"
    return table


def test_the_readme_table_lists_every_setting_with_its_default():
    table = readme_table()
    defaults = {f.name: f.default for f in dataclasses.fields(EngineSettings)}
    assert sorted(table) == sorted(defaults), (
        f"only in README: {sorted(set(table) - set(defaults))}; undocumented: {sorted(set(defaults) - set(table))}"
    )
    differing = {k: (table[k], defaults[k]) for k in defaults if table[k] != defaults[k]}
    assert not differing, f"README default vs EngineSettings default: {differing}"
    # Equal is not enough where a flag meets a number (`true == 1`): a flag's default is a flag in both.
    flags = {k for k in defaults if isinstance(defaults[k], bool) or isinstance(table[k], bool)}
    assert all(type(table[k]) is type(defaults[k]) for k in flags), {k: table[k] for k in flags}


def test_every_example_config_names_only_settings():
    """A misspelt key is ignored like any other (the cluster hands its whole block on): the shipped examples
    must at least spell theirs right."""
    names = {f.name for f in dataclasses.fields(EngineSettings)}
    seen = 0
    for path in sorted((ROOT / "config" / "examples").glob("*.yaml")):
        for process in yaml.safe_load(path.read_text())["config"].get("process", []):
            if "engine" in process:
                seen += 1
                assert set(process["engine"]) <= names, (path.name, set(process["engine"]) - names)
    assert seen >= 3


def test_a_config_block_is_read_as_the_job_config_always_was():
    settings = EngineSettings.from_config(
        {
            "max_queue": "8",
            "keep_resident_gb": 3,
            "vram_budget_gb": None,  # an explicit null is the default
            "memory": "off",
            "warm_up": 0,
            "lora_roots": [],  # an empty list too
            "max_download_gb": 50,
            "models": {"shapes": {"arch": "sd1", "name_or_path": "builtin:shapes"}},
            "not_a_setting": 1,  # ignored: the cluster hands its whole block on
        }
    )
    assert settings.max_queue == 8 and isinstance(settings.max_queue, int)
    assert settings.keep_resident_gb == 3.0 and isinstance(settings.keep_resident_gb, float)
    assert settings.vram_budget_gb == 0.0 and settings.memory == "off" and settings.warm_up is False
    assert settings.lora_roots is None and settings.max_download_gb == 50
    assert settings.models == {"shapes": {"arch": "sd1", "name_or_path": "builtin:shapes"}}
    assert settings.compile == "auto" and settings.prompt_cache == 16  # untouched: the defaults
    assert EngineSettings.from_config(None) == EngineSettings() == EngineSettings.from_config({})
    with pytest.raises(ValueError):
        EngineSettings.from_config({"max_queue": "many"})


def test_a_job_resolves_its_folders_and_lora_roots(tmp_path):
    training = str(tmp_path / "output")
    job = EngineSettings.from_config({}).for_job("demo", training)
    assert job.job_folder == os.path.join(training, "demo")
    assert job.output_folder == os.path.join(training, "demo", "outputs")
    assert job.assets_folder == os.path.join(training, "demo", "assets")
    assert job.lora_roots == [MODELS_PATH, training]  # AI Toolkit writes the LoRAs it trains there

    own = EngineSettings.from_config(
        {"job_folder": str(tmp_path / "j"), "output_folder": "rel_out", "lora_roots": [str(tmp_path / "l")]}
    ).for_job("demo", training)
    assert own.job_folder == str(tmp_path / "j") and own.assets_folder == str(tmp_path / "j" / "assets")
    assert own.output_folder == os.path.abspath("rel_out") and own.lora_roots == [str(tmp_path / "l")]
