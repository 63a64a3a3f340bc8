"""Single-file checkpoints in the layouts their authors ship (Stability's LDM UNets for SD 1.5 and SDXL, Wan-AI's
and ComfyUI's Wan files, Tongyi's Z-Image file) load through diffusers' converters and sample exactly as the same
weights in a diffusers folder. The files are written from the tiny checkpoints by
``testing/original_layouts.py``; the first test proves those writers are the converters' exact inverses."""
import numpy as np
import pytest

from testing.engine_harness import EngineHarness
from testing.original_layouts import ldm_unet_original, wan_original, z_image_original
from testing.test_inference_engine import body_for

# arch -> (denoiser subfolder, writer, diffusers converter, the converter's model class)
LAYOUTS = {
    "sd1": ("unet", lambda s: ldm_unet_original(s, unet_config("sd1")["layers_per_block"]),
            "convert_ldm_unet_checkpoint"),
    "sdxl": ("unet", lambda s: ldm_unet_original(s, unet_config("sdxl")["layers_per_block"]),
             "convert_ldm_unet_checkpoint"),
    "wan21": ("transformer", wan_original, "convert_wan_transformer_to_diffusers"),
    "zimage": ("transformer", z_image_original, "convert_z_image_transformer_checkpoint_to_diffusers"),
}


def denoiser_state(arch: str) -> dict:
    import os

    from safetensors.torch import load_file

    from toolkit.models.tiny import tiny_checkpoint

    folder = os.path.join(tiny_checkpoint(arch), LAYOUTS[arch][0])
    return load_file(os.path.join(folder, "diffusion_pytorch_model.safetensors"))


def unet_config(arch: str) -> dict:
    import json
    import os

    from toolkit.models.tiny import tiny_checkpoint

    with open(os.path.join(tiny_checkpoint(arch), LAYOUTS[arch][0], "config.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("arch", sorted(LAYOUTS))
def test_the_writers_are_the_diffusers_converters_inverse(arch, tiny_cache):
    import diffusers.loaders.single_file_utils as converters

    state = denoiser_state(arch)
    original = LAYOUTS[arch][1](state)
    assert set(original) != set(state)  # really another layout
    back = getattr(converters, LAYOUTS[arch][2])(dict(original), config=unet_config(arch))
    assert sorted(back) == sorted(state)
    assert all(np.array_equal(back[k].numpy(), state[k].numpy()) for k in state)


@pytest.fixture(scope="module")
def single_files(tmp_path_factory, tiny_cache):
    from safetensors.torch import save_file

    folder = tmp_path_factory.mktemp("single_files")
    files = {}
    for arch, (_, writer, _) in LAYOUTS.items():
        files[arch] = str(folder / f"{arch}_original.safetensors")
        save_file({k: v.contiguous() for k, v in writer(denoiser_state(arch)).items()}, files[arch])
    files["zimage_diffusers"] = str(folder / "zimage_diffusers.safetensors")  # diffusers' own layout, assigned
    save_file(denoiser_state("zimage"), files["zimage_diffusers"])
    save_file({"not.a.model.weight": __import__("torch").zeros(3)}, str(folder / "stranger.safetensors"))
    files["stranger"] = str(folder / "stranger.safetensors")
    return files


@pytest.fixture(scope="module")
def engine(tmp_path_factory, tiny_cache):
    h = EngineHarness(tmp_path_factory.mktemp("single_file_engine"))
    yield h
    h.close()


def final_latents(h, body) -> np.ndarray:
    frames = list(h.client.generate(body))
    errors = [f.header for f in frames if f.type == "error"]
    assert not errors, errors
    latents = [f for f in frames if f.type == "latent"]
    return np.asarray(latents[-1].array(), dtype=np.float32) if latents else None


def body(arch: str, name_or_path: str) -> dict:
    b = body_for(arch, steps=2)
    b["model"].update(name_or_path=name_or_path, extras_name_or_path=f"tiny:{arch}")
    b.setdefault("stream", {})["latents"] = "raw"
    return b


@pytest.mark.parametrize("arch,file", [(a, a) for a in sorted(LAYOUTS)] + [("zimage", "zimage_diffusers")])
def test_a_single_file_samples_as_its_diffusers_folder(engine, single_files, arch, file):
    folder = final_latents(engine, body(arch, f"tiny:{arch}"))
    single = final_latents(engine, body(arch, single_files[file]))
    assert folder is not None and np.abs(single - folder).max() <= 1e-3


def test_a_file_no_converter_reads_is_refused_naming_the_class(engine, single_files):
    out = engine.client.generate_wait(body("zimage", single_files["stranger"]))
    assert out["error"]["code"] == "load_failed", out
    assert "stranger.safetensors" in out["error"]["message"] and "ZImageTransformer2DModel" in out["error"]["message"]
    assert engine.client.generate_wait(body("zimage", "tiny:zimage"))["http_status"] == 200
