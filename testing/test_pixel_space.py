"""Pixel-space families (toolkit/models/pixel_space.py): what their live preview streams is the image being made,
at 1/8 of its size, and Z-Image L2P's transformer loads a single file the way its published weights come.

test_models.py runs both through load -> hook -> cancel -> replay already; here: (1) the identity projection of
8x8 block means is the pipeline's own denormalisation of those pixels, (2) the last streamed preview is the
pipeline's final pixels pooled, (3) the L2P transformer from one .safetensors file, its shape from a latent
Z-Image config (AI Toolkit's extras, Z-Image-Turbo), with and without the trunk's dead final layer.
"""

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from extensions_built_in.inference_engine.latent_preview import project_rgb
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models import tiny
from toolkit.models.registry import ARCHS, get_model_class

PIXEL_SPACE = {"zimage_l2p", "prx_pixel"}
REGISTERED = sorted(PIXEL_SPACE & set(ARCHS))


@pytest.fixture(scope="module")
def models(tiny_cache):
    loaded = {}

    def load(arch):
        if arch not in loaded:
            model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
            model.load_model()
            loaded[arch] = model
        return loaded[arch]

    yield load
    loaded.clear()


def gen_config(arch, folder, **overrides):
    kw = dict(tiny.sample(arch), prompt="a red circle", num_inference_steps=2, guidance_scale=2.0, seed=3)
    return GenerateImageConfig(output_folder=str(folder), **dict(kw, **overrides))


def test_the_pixel_space_families_are_registered():
    assert REGISTERED == sorted(PIXEL_SPACE)


@pytest.mark.parametrize("arch", REGISTERED)
def test_the_preview_is_the_pipelines_own_image_pooled(arch, models, tmp_path):
    """Pixels inside [-1, 1] (where the pipeline's clamp does nothing): the identity factors with no bias turn their
    8x8 means into the means of the pipeline's own postprocessed image, to the rounding of one 8-bit step."""
    model = models(arch)
    latent = model.latent
    assert (latent.layout, latent.channels, latent.spatial_factor, latent.factors_source) == ("BCHW", 3, 8, "pixels")
    pixels = torch.rand((1, 3, 48, 64), generator=torch.Generator().manual_seed(0)) * 1.8 - 0.9
    gen = gen_config(arch, tmp_path, width=64, height=48)
    preview = model.unpack_latents(pixels, gen)
    assert tuple(preview.shape) == model.latent_shape(gen) == (1, 3, 6, 8)
    shown = project_rgb(preview.numpy(), latent.rgb_factors, latent.rgb_bias).astype(int)
    image = model.pipeline.image_processor.postprocess(pixels, output_type="np")[0]  # H x W x 3 in [0, 1]
    expected = np.rint(image.reshape(6, 8, 8, 8, 3).mean(axis=(1, 3)) * 255).astype(int)
    assert shown.shape == expected.shape == (6, 8, 3)
    assert np.abs(shown - expected).max() <= 1
    assert len(np.unique(shown)) > 20  # a picture, not a flat field the check above would pass anyway


@pytest.mark.parametrize("arch", REGISTERED)
def test_the_last_streamed_preview_is_the_final_image_pooled(arch, models, tmp_path):
    model = models(arch)
    seen = []
    model.sample_step_hook = lambda step: seen.append(step.latents())
    gen = gen_config(arch, tmp_path, width=64, height=32)
    try:
        model.generate_images([gen])
    finally:
        model.sample_step_hook = None
    assert len(seen) == gen.num_inference_steps and tuple(seen[-1].shape) == (1, 3, 4, 8)
    torch.manual_seed(gen.seed)
    with torch.inference_mode():
        final = model.pipeline(
            **model.pipeline_kwargs(gen), generator=torch.Generator().manual_seed(gen.seed), output_type="latent"
        ).images
    assert tuple(final.shape) == (1, 3, 32, 64)  # the pixels themselves: no VAE between them and the image
    torch.testing.assert_close(model.unpack_latents(final, gen), seen[-1])


# ------------------------------------------------------------------ Z-Image L2P from a single file
def _l2p_state(config_folder):
    """An L2P transformer's weights, its shape taken from a latent Z-Image config as the published file's is."""
    from toolkit.models.l2p import ZImageL2PTransformer2DModel

    config = ZImageL2PTransformer2DModel.load_config(config_folder, subfolder="transformer")
    assert (config["in_channels"], config["all_patch_size"]) == (3, [16])  # moved to pixels
    torch.manual_seed(0)
    return ZImageL2PTransformer2DModel.from_config(config).state_dict()


@pytest.mark.skipif("zimage_l2p" not in ARCHS, reason="zimage_l2p is not registered")
@pytest.mark.parametrize("dead_final_layer", [False, True])
def test_l2p_transformer_loads_from_one_file_with_a_latent_z_image_config(tmp_path, tiny_cache, dead_final_layer):
    from toolkit.models.components.loading import load_component

    zimage = tiny.tiny_checkpoint("zimage")  # a latent Z-Image folder: in_channels 16, 2x2 patches
    state = {k: v.clone() for k, v in _l2p_state(zimage).items()}
    assert any(k.startswith("local_decoder.") for k in state) and "all_x_embedder.16-1.weight" in state
    assert not any(k.startswith("all_final_layer.") for k in state)
    on_disk = dict(state)
    if dead_final_layer:  # the trunk's final layer, which L2P never runs
        on_disk["all_final_layer.2-1.linear.weight"] = torch.zeros(64, 32)
    path = tmp_path / "model-1k-merge.safetensors"
    save_file(on_disk, str(path))
    module = load_component(
        get_model_class("zimage_l2p").components["transformer"].cls,
        str(path),
        "transformer",
        dtype="float32",
        device="cpu",
        config_source=zimage,
    )
    loaded = module.state_dict()
    assert sorted(loaded) == sorted(state)
    assert all(torch.equal(loaded[k], state[k]) for k in state)


@pytest.mark.skipif("zimage_l2p" not in ARCHS, reason="zimage_l2p is not registered")
def test_l2p_transformer_refuses_a_file_of_another_model_naming_its_keys(tmp_path, tiny_cache):
    from toolkit.models.components.loading import load_component

    zimage = tiny.tiny_checkpoint("zimage")
    state = {k: v for k, v in _l2p_state(zimage).items() if not k.startswith("local_decoder.")}
    path = tmp_path / "latent-z-image.safetensors"
    save_file(state, str(path))
    with pytest.raises(ValueError, match=r"not a Z-Image L2P transformer: \d+ of its keys missing \['local_decoder"):
        load_component(
            get_model_class("zimage_l2p").components["transformer"].cls,
            str(path),
            "transformer",
            dtype="float32",
            device="cpu",
            config_source=zimage,
        )
