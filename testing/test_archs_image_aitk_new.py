"""AI Toolkit's newer image families (ERNIE-Image, Krea 2, Nucleus-Image, Ideogram 4, Anima) beyond what the
ARCHS-parametrized tests check for every family: each streams latents in the layout its pipeline decodes, after
undoing the packing and normalisation the pipeline samples in, and each family-specific setting reaches the
pipeline. test_archs_image.py checks their preview factors against ComfyUI's tables."""

import pytest
import torch

from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models import tiny
from toolkit.models.registry import ARCHS, get_model_class

_loaded = {}


def load(arch, **config):
    key = (arch, tuple(sorted(config.items())))
    if key not in _loaded:
        assert arch.partition(":")[0] in ARCHS, f"{arch} is not in the registry"
        model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch.partition(':')[0]}", arch=arch))
        model.load_model()
        _loaded[key] = model
    return _loaded[key]


@pytest.fixture(scope="module", autouse=True)
def _free_models():
    yield
    _loaded.clear()


def gen_config(model, folder, **overrides):
    kw = dict(
        tiny.sample(model.arch),
        prompt="a red circle on a blue background",
        num_inference_steps=2,
        guidance_scale=4.0,
        seed=5,
        output_folder=str(folder),
    )
    kw.update(overrides)
    return GenerateImageConfig(**kw)


def streamed_and_decoded(model, gen):
    """The hook's last latents, and what the pipeline hands its VAE for the same seed (``output_type='latent'``)."""
    seen = []
    model.sample_step_hook = lambda s: seen.append(s.latents())
    try:
        model.generate_images([gen])
    finally:
        model.sample_step_hook = None
    torch.manual_seed(gen.seed)
    with torch.inference_mode():
        out = model.pipeline(
            **model.pipeline_kwargs(gen), generator=torch.Generator().manual_seed(gen.seed), output_type="latent"
        ).images
    return seen, out


# ------------------------------------------------------------------ ERNIE-Image
def test_ernie_image_streams_the_denormalised_unpatchified_flux2_latent(tmp_path):
    """The loop samples B, 128, H/16, W/16 normalised by the VAE's BatchNorm; the pipeline de-normalises with a
    fixed 1e-5 epsilon and un-patchifies before decoding. The stream must be that 32-channel map."""
    from diffusers import ErnieImagePipeline

    model = load("ernie_image")
    bn = model.parts["vae"].bn
    assert not torch.allclose(bn.running_var, torch.ones_like(bn.running_var))  # the de-normalisation matters
    gen = gen_config(model, tmp_path, width=96, height=64)
    seen, loop_latents = streamed_and_decoded(model, gen)
    assert loop_latents.shape == (1, 128, 4, 6)
    assert len(seen) == 2 and tuple(seen[-1].shape) == model.latent_shape(gen) == (1, 32, 8, 12)
    std = torch.sqrt(bn.running_var.view(1, -1, 1, 1) + 1e-5)
    expected = ErnieImagePipeline._unpatchify_latents(loop_latents * std + bn.running_mean.view(1, -1, 1, 1))
    torch.testing.assert_close(seen[-1], expected)


def test_ernie_image_never_runs_the_prompt_enhancer(tmp_path):
    """The release's optional prompt enhancer would rewrite the request's prompt; the family turns it off."""
    model = load("ernie_image")
    assert model.pipeline_kwargs(gen_config(model, tmp_path))["use_pe"] is False
