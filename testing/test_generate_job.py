"""``python run.py config/examples/generate_tiny*.yaml`` as a user runs it: real subprocess, real files."""

import json
import os
import subprocess
import sys

import pytest

from toolkit.config import get_config
from toolkit.media_probe import probe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name: str, tmp_path) -> list[dict]:
    """Run an example config unchanged except for its output folder, which goes to tmp_path."""
    config = get_config(os.path.join(ROOT, "config", "examples", name))
    for process in config["config"]["process"]:
        process["output_folder"] = str(tmp_path / "out")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    proc = subprocess.run([sys.executable, "run.py", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    files = sorted(p for p in (tmp_path / "out").iterdir() if p.is_file())
    assert not any((tmp_path / "out" / ".tmp").iterdir()), "temp files left behind"
    for f in files:
        assert (tmp_path / "out" / ".thumbs" / f"{f.name}.jpg").is_file()
    return [probe(str(f)) for f in files]


def test_generate_tiny_writes_images(tmp_path):
    infos = run_example("generate_tiny.yaml", tmp_path)
    assert len(infos) == 2
    assert all(i["kind"] == "image" and (i["width"], i["height"]) == (64, 64) for i in infos)


def test_generate_tiny_wan21_writes_mp4_and_animated_webp(tmp_path):
    infos = {i["ext"]: i for i in run_example("generate_tiny_wan21.yaml", tmp_path)}
    assert set(infos) == {"mp4", "webp"}
    for info in infos.values():
        assert info["kind"] == "video"
        assert (info["width"], info["height"], info["frames"]) == (64, 64, 9)


def test_generate_tiny_ace_step_writes_wav_and_mp3(tmp_path):
    infos = {i["ext"]: i for i in run_example("generate_tiny_ace_step_15.yaml", tmp_path)}
    assert set(infos) == {"wav", "mp3"}
    for info in infos.values():
        assert info["kind"] == "audio"
        assert info["sample_rate"] == 48000
        assert info["duration_s"] == pytest.approx(2.0, abs=0.05)


def test_generate_job_reports_a_bad_arch_and_exits_non_zero(tmp_path):
    config = {
        "job": "generate",
        "config": {
            "name": "bad",
            "process": [
                {
                    "type": "to_folder",
                    "output_folder": str(tmp_path),
                    "model": {"arch": "nope", "name_or_path": "tiny:nope"},
                    "generate": {"prompts": ["x"]},
                }
            ],
        },
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    proc = subprocess.run([sys.executable, "run.py", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "unknown arch 'nope'" in proc.stdout + proc.stderr


def test_prompt_flags_in_a_generate_config_override_that_prompt_only(tmp_path):
    """AI Toolkit's inline syntax works where the prompt comes from the user's own config file."""
    config = get_config(os.path.join(ROOT, "config", "examples", "generate_tiny.yaml"))
    process = config["config"]["process"][0]
    process["output_folder"] = str(tmp_path / "out")
    process["generate"]["prompts"] = ["a red circle --w 96 --h 48 --seed 7", "a blue square"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    proc = subprocess.run([sys.executable, "run.py", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "seed 7:" in proc.stdout
    sizes = sorted(
        (i["width"], i["height"]) for i in (probe(str(p)) for p in (tmp_path / "out").iterdir() if p.is_file())
    )
    assert sizes == [(64, 64), (96, 48)]
