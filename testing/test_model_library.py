"""The model library (``GET /checkpoints``): every checkpoint under the model roots with its family read from
its JSON or its safetensors header alone, per family on real files (the tiny checkpoints, and single files in the
layouts their authors ship), its size, the defaults that fit it on this engine (its config's training size, float32
on a CPU engine), its newest result as thumbnail, Hugging Face cache models by hub id, and each family's published
checkpoint. The detection imports no torch."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from toolkit.models.checkpoint_arch import arch_of_file, arch_of_folder, arch_of_header, pipeline_archs

# Families whose tiny folder says its own name; the others share a pipeline class with one listed first and
# nothing in their configs tells them apart (ssd and vega are SDXL UNets, ltx2.3/ltx2.5 LTX-2's classes, …).
FOLDER_FAMILIES = [
    "sd1", "sd2", "sdxl", "sd3", "flux", "flex2", "flux2", "flux2_klein_4b", "flux_kontext", "chroma",
    "chroma_radiance", "zimage", "zimage_l2p", "qwen_image", "qwen_image_edit", "qwen_image_edit_plus", "lumina2",
    "cogview4", "auraflow", "pixart", "pixart_sigma", "hidream", "wan21", "wan21_i2v", "wan22_5b", "wan22_14b",
    "wan22_14b_i2v", "ltx", "ltx2", "hunyuan_video", "hunyuan_video15", "stable_audio", "ace_step_15",
]  # fmt: skip

# A denoiser saved alone in diffusers' layout: the family its tensor names point to.
FILE_FAMILIES = {
    "sd1": "sd1", "sd2": "sd2", "sdxl": "sdxl", "sd3": "sd3", "flux": "flux", "flux2": "flux2", "chroma": "chroma",
    "chroma_radiance": "chroma_radiance", "zimage": "zimage", "qwen_image": "qwen_image", "lumina2": "lumina2",
    "cogview4": "cogview4", "auraflow": "auraflow", "pixart": "pixart", "hidream": "hidream", "wan21": "wan21",
    "wan21_i2v": "wan21_i2v", "wan22_5b": "wan22_5b", "ltx": "ltx", "ltx2": "ltx2", "hunyuan_video": "hunyuan_video",
}  # fmt: skip


def denoiser_file(arch: str) -> str:
    from toolkit.models.tiny import tiny_checkpoint

    folder = tiny_checkpoint(arch)
    sub = "unet" if os.path.isdir(os.path.join(folder, "unet")) else "transformer"
    names = sorted(n for n in os.listdir(os.path.join(folder, sub)) if n.endswith(".safetensors"))
    return os.path.join(folder, sub, names[0])


@pytest.mark.parametrize("arch", FOLDER_FAMILIES)
def test_a_diffusers_folder_is_its_family(arch, tiny_cache):
    from toolkit.models.tiny import tiny_checkpoint

    assert arch_of_folder(tiny_checkpoint(arch), pipeline_archs()) == arch


@pytest.mark.parametrize("arch", sorted(FILE_FAMILIES))
def test_a_single_denoiser_file_in_diffusers_layout_is_its_family(arch, tiny_cache):
    assert arch_of_file(denoiser_file(arch)) == FILE_FAMILIES[arch]


def original_state(arch: str) -> dict:
    """The tiny denoiser in the layout its authors ship it (testing/original_layouts.py)."""
    from safetensors.torch import load_file

    from testing import original_layouts as layouts
    from toolkit.models.tiny import tiny_checkpoint

    state = load_file(denoiser_file(arch))
    if arch in ("sd1", "sdxl"):
        with open(os.path.join(tiny_checkpoint(arch), "unet", "config.json")) as f:
            return layouts.ldm_unet_original(state, json.load(f)["layers_per_block"])
    return {
        "flux": layouts.flux_bfl_original,
        "wan21": layouts.wan_original,
        "wan21_i2v": layouts.wan_original,
        "zimage": layouts.z_image_original,
    }[arch](state)


@pytest.mark.parametrize("arch", ["sd1", "sdxl", "flux", "wan21", "wan21_i2v", "zimage"])
def test_a_file_in_its_authors_layout_is_its_family(arch, tmp_path, tiny_cache):
    from safetensors.torch import save_file

    path = tmp_path / f"{arch}.safetensors"
    save_file({k: v.contiguous() for k, v in original_state(arch).items()}, str(path))
    assert arch_of_file(str(path)) == arch


def test_whole_file_signatures_name_the_text_encoder_family():
    def header(*keys, shape=(4, 4)):
        return {k: {"dtype": "F16", "shape": list(shape), "data_offsets": [0, 0]} for k in keys}

    unet = "model.diffusion_model.input_blocks.1.1.proj_in.weight"
    assert arch_of_header(header(unet, "cond_stage_model.transformer.text_model.embeddings.x")) == "sd1"
    assert arch_of_header(header(unet, "cond_stage_model.model.transformer.resblocks.0.x")) == "sd2"
    assert arch_of_header(header(unet, "conditioner.embedders.1.model.x")) == "sdxl"
    assert arch_of_header(header(unet, shape=(320, 320, 1, 1))) == "sd1"  # a UNet alone: 1×1 convolutions
    assert arch_of_header(header(unet, shape=(320, 320))) == "sd2"  # linear projections
    assert arch_of_header(header("first_stage_model.decoder.conv_in.weight")) is None  # a VAE alone


def test_the_detection_imports_no_torch(tmp_path, tiny_cache):
    from toolkit.models.tiny import tiny_checkpoint

    code = (
        "import sys; from extensions_built_in.inference_engine.catalog import list_checkpoints;"
        f"e = list_checkpoints([{str(os.path.dirname(tiny_checkpoint('sd1')))!r}]);"
        "assert any(x['arch'] == 'sd1' for x in e), e; assert 'torch' not in sys.modules, 'torch imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture()
def library(tmp_path, tiny_cache):
    from safetensors.torch import save_file

    from testing.engine_harness import EngineHarness
    from toolkit.models.tiny import tiny_checkpoint

    models = tmp_path / "models"
    shutil.copytree(tiny_checkpoint("sd1"), models / "my-sd15")
    save_file(original_state("flux"), str(models / "flux1-dev.safetensors"))
    snapshot = models / "models--someone--tiny-sdxl" / "snapshots" / "0123abcd"
    shutil.copytree(tiny_checkpoint("sdxl"), snapshot)
    h = EngineHarness(tmp_path / "engine", model_roots=[str(models)])
    yield h, models
    h.close()


def test_get_checkpoints_is_a_library_with_families_defaults_and_thumbnails(library):
    h, models = library
    listing = h.client._json("GET", "/checkpoints")
    assert (listing["device"], listing["dtype"]) == ("cpu", "float32")
    by_name = {e["name"]: e for e in listing["checkpoints"]}
    assert set(by_name) == {"my-sd15", "flux1-dev.safetensors", "someone/tiny-sdxl"}
    folder, single, cached = by_name["my-sd15"], by_name["flux1-dev.safetensors"], by_name["someone/tiny-sdxl"]
    assert (folder["arch"], folder["kind"], single["arch"], single["kind"]) == (
        "sd1",
        "diffusers",
        "flux",
        "single_file",
    )
    assert (cached["arch"], cached["kind"], cached["path"]) == ("sdxl", "hub_cache", "someone/tiny-sdxl")
    with open(models / "my-sd15" / "unet" / "config.json") as f:
        native = json.load(f)["sample_size"] * 8  # the tiny UNet's latent size times the VAE's factor
    assert folder["defaults"] == {"dtype": "float32", "width": native, "height": native}
    assert single["defaults"] == {"dtype": "float32", "width": 1024, "height": 1024}  # the family's
    assert folder["bytes"] == sum(
        os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(models / "my-sd15") for n in names
    )
    assert folder["thumbnail"] is None
    hub = {(e["value"], e["hub_id"]) for e in listing["hub"]}
    assert ("sd1", "stable-diffusion-v1-5/stable-diffusion-v1-5") in hub and (
        "zimage:turbo",
        "Tongyi-MAI/Z-Image-Turbo",
    ) in hub

    body = {
        "model": {"arch": "sd1", "name_or_path": str(models / "my-sd15"), "dtype": "float32"},
        "sample": {"prompt": "a fox", "width": 64, "height": 64, "num_inference_steps": 2, "seed": 3},
    }
    out = h.client.generate_wait(body)
    assert out["http_status"] == 200, out
    again = {e["name"]: e for e in h.client._json("GET", "/checkpoints?refresh=1")["checkpoints"]}
    thumb = again["my-sd15"]["thumbnail"]
    assert thumb["name"] == os.path.basename(out["result"]["path"]) and thumb["ext"] == "png"
    assert again["flux1-dev.safetensors"]["thumbnail"] is None


def test_a_bad_refresh_is_a_422_naming_it(library):
    import httpx

    h, _ = library
    response = httpx.get(f"{h.url}/checkpoints?refresh=maybe", headers={"Authorization": f"Bearer {h.TOKEN}"})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", "refresh"]
