"""Single-file checkpoints in the layouts their authors ship (Stability's LDM UNets for SD 1.5 and SDXL, Wan-AI's
and ComfyUI's Wan files, Tongyi's Z-Image file) load through diffusers' converters and sample exactly as the same
weights in a diffusers folder. The files are written from the tiny checkpoints by
``testing/original_layouts.py``; the first test proves those writers are the converters' exact inverses."""

import numpy as np
import pytest

from testing.engine_harness import EngineHarness
from testing.original_layouts import flux_bfl_original, ldm_unet_original, wan_original, z_image_original
from testing.stream_contract import body_for

# arch -> (denoiser subfolder, writer, diffusers converter, the converter's model class)
LAYOUTS = {
    "sd1": (
        "unet",
        lambda s: ldm_unet_original(s, unet_config("sd1")["layers_per_block"]),
        "convert_ldm_unet_checkpoint",
    ),
    "sdxl": (
        "unet",
        lambda s: ldm_unet_original(s, unet_config("sdxl")["layers_per_block"]),
        "convert_ldm_unet_checkpoint",
    ),
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


@pytest.fixture(scope="module")
def flux_3072(tmp_path_factory, tiny_cache):
    """The tiny Flux checkpoint with a transformer 3072 wide (24 heads of 128; one double and one single block,
    531 M parameters in bfloat16): diffusers' Flux converter splits the single blocks' fused tensors at FLUX.1's
    real width, so a narrower transformer cannot make the round trip."""
    import shutil

    import torch
    from diffusers import FluxTransformer2DModel
    from safetensors.torch import save_file

    from toolkit.models.tiny import tiny_checkpoint

    folder = tmp_path_factory.mktemp("flux_3072") / "flux"
    shutil.copytree(tiny_checkpoint("flux"), folder)
    config = FluxTransformer2DModel.load_config(folder, subfolder="transformer")
    config.update(num_attention_heads=24, attention_head_dim=128, axes_dims_rope=[16, 56, 56])
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        model = FluxTransformer2DModel.from_config(config)
    finally:
        torch.set_default_dtype(previous)
    shutil.rmtree(folder / "transformer")
    model.save_pretrained(folder / "transformer")
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    del model
    single = folder.parent / "flux1-dev.safetensors"
    save_file(flux_bfl_original(state), str(single))
    return str(folder), str(single)


@pytest.mark.timeout(600)  # half a billion parameters written twice and loaded twice: minutes on a two-core machine
def test_a_flux_file_in_black_forest_labs_layout_samples_as_its_diffusers_folder(engine, flux_3072):
    import diffusers.loaders.single_file_utils as converters
    from safetensors.torch import load_file

    folder, single = flux_3072
    original = load_file(single)
    assert "double_blocks.0.img_attn.qkv.weight" in original and "single_blocks.0.linear1.weight" in original
    diffusers_state = load_file(f"{folder}/transformer/diffusion_pytorch_model.safetensors")
    back = converters.convert_flux_transformer_checkpoint_to_diffusers(original)
    assert sorted(back) == sorted(diffusers_state) and all(
        np.array_equal(back[k].float().numpy(), diffusers_state[k].float().numpy()) for k in diffusers_state
    )
    del back, diffusers_state

    def flux_body(name_or_path):
        b = body("flux", name_or_path)
        b["model"].update(extras_name_or_path=folder)  # float32 on the CPU: its bfloat16 matmuls are slower
        return b

    reference = final_latents(engine, flux_body(folder))
    assert np.abs(final_latents(engine, flux_body(single)) - reference).max() <= 1e-3
