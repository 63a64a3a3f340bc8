"""GET /loras: what a LoRA picker shows; GET /checkpoints: what the model picker shows. AI Toolkit's own layout
(<training folder>/<job>/<job>_<step>.safetensors beside config.yaml, training_info in the metadata) gives job,
step and family; files that are not LoRAs are left out; the route needs the token like every route but /health."""

import json

import pytest
import yaml

from testing.engine_harness import EngineHarness


def write_lora(path, metadata=None):
    import torch
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(
        {
            "unet.down_blocks.0.attentions.0.proj_in.lora_A.weight": torch.zeros(4, 32),
            "unet.down_blocks.0.attentions.0.proj_in.lora_B.weight": torch.zeros(32, 4),
        },
        str(path),
        metadata=metadata,
    )


@pytest.fixture()
def engine(tmp_path, tiny_cache):
    import torch
    from safetensors.torch import save_file

    training = tmp_path / "training"
    job = training / "my_sd_lora"
    write_lora(job / "my_sd_lora_000000250.safetensors")
    write_lora(
        job / "my_sd_lora.safetensors",
        {
            "training_info": json.dumps({"step": 1000, "epoch": 3}),
            "ss_base_model_version": "sd_1.5",
            "ss_output_name": "my_sd_lora",
        },
    )
    (job / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "job": "extension",
                "config": {"name": "my_sd_lora", "process": [{"type": "sd_trainer", "model": {"arch": "sdxl:base"}}]},
            }
        )
    )
    old = training / "old_flux_run"
    write_lora(old / "old_flux_run_000000500.safetensors")
    (old / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "config": {
                    "name": "old_flux_run",
                    "process": [{"model": {"name_or_path": "black-forest-labs/FLUX.1-dev", "is_flux": True}}],
                }
            }
        )
    )
    save_file({"conv_in.weight": torch.zeros(2, 2)}, str(job / "not_a_lora.safetensors"))
    (job / "broken.safetensors").write_bytes(b"\x00" * 16)
    write_lora(training / "a" / "b" / "c" / "too_deep.safetensors")
    h = EngineHarness(tmp_path / "engine", lora_roots=[str(training)])
    yield h
    h.close()


def test_the_catalog_names_job_step_and_family_and_leaves_out_what_is_not_a_lora(engine):
    listing = engine.client._json("GET", "/loras")
    by_name = {e["name"]: e for e in listing["loras"]}
    assert sorted(by_name) == [
        "my_sd_lora.safetensors",
        "my_sd_lora_000000250.safetensors",
        "old_flux_run_000000500.safetensors",
    ]
    final = by_name["my_sd_lora.safetensors"]
    assert (final["job"], final["step"], final["arch"], final["base_model"]) == ("my_sd_lora", 1000, "sdxl", "sd_1.5")
    assert (
        by_name["my_sd_lora_000000250.safetensors"]["step"],
        by_name["old_flux_run_000000500.safetensors"]["arch"],
    ) == (250, "flux")
    assert all(e["path"].startswith(e["root"]) for e in listing["loras"])


def test_the_catalog_needs_the_token(engine):
    import httpx

    assert httpx.get(f"{engine.url}/loras").status_code == 401


def test_checkpoints_lists_diffusers_folders_and_single_files_but_not_loras_or_component_files(tmp_path, tiny_cache):
    import shutil

    import torch
    from safetensors.torch import save_file

    from toolkit.models.tiny import tiny_checkpoint

    models = tmp_path / "models"
    shutil.copytree(tiny_checkpoint("sd1"), models / "my-sd15")
    save_file(
        {"model.diffusion_model.input_blocks.0.0.weight": torch.zeros(2)}, str(models / "dreamshaper.safetensors")
    )
    write_lora(models / "loras" / "style.safetensors")
    h = EngineHarness(tmp_path / "engine", model_roots=[str(models)])
    try:
        listing = h.client._json("GET", "/checkpoints")
    finally:
        h.close()
    found = {(e["name"], e["kind"]) for e in listing["checkpoints"]}
    assert found == {("my-sd15", "diffusers"), ("dreamshaper.safetensors", "single_file")}
    folder = next(e for e in listing["checkpoints"] if e["kind"] == "diffusers")
    assert folder["pipeline"] == "StableDiffusionPipeline" and listing["roots"] == [str(models)]
