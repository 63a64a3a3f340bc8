"""Pixel-space families (toolkit/models/pixel_space.py): what their live preview streams is the image being made,
at 1/8 of its size, and the transformers we write ourselves load single files the way their published weights come.

test_models.py runs each through load -> hook -> cancel -> replay already; here: (1) an image held as its pipeline
holds it while sampling (the pixels; Chroma Radiance's packed tokens) previews, through the identity projection of
8x8 block means, as the pipeline's own decode and denormalisation of it, (2) the last streamed preview is the
pipeline's final latents unpacked, (3) the L2P transformer from one .safetensors file, its shape from a latent
Z-Image config (AI Toolkit's extras, Z-Image-Turbo), with and without the trunk's dead final layer, (4) the
Chroma Radiance transformer from a file in the original layout, its shape from a latent Chroma config.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from extensions_built_in.inference_engine.latent_preview import project_rgb
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models import tiny
from toolkit.models.registry import ARCHS, get_model_class

PIXEL_SPACE = {"zimage_l2p", "prx_pixel", "chroma_radiance"}
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


def held_while_sampling(model, pixels):
    """``pixels`` as the family's pipeline holds them between steps, and its own decode of that back to pixels."""
    pipe = model.pipeline
    if model.arch != "chroma_radiance":
        decoded = pipe.vae.decode(pixels, return_dict=False)[0] if getattr(pipe, "vae", None) is not None else pixels
        return pixels, decoded
    b, _, h, w = pixels.shape
    folded = F.pixel_unshuffle(pixels, 8)  # what PixelDecoder(8).decode's pixel_shuffle undoes
    tokens = pipe._pack_latents(folded, b, folded.shape[1], h // 8, w // 8)
    return tokens, pipe.vae.decode(pipe._unpack_latents(tokens, h, w, pipe.vae_scale_factor), return_dict=False)[0]


@pytest.mark.parametrize("arch", REGISTERED)
def test_the_preview_is_the_pipelines_own_image_pooled(arch, models, tmp_path):
    """Pixels inside [-1, 1] (where the pipeline's clamp does nothing): the identity factors with no bias turn their
    8x8 means into the means of the pipeline's own decoded and postprocessed image, to one 8-bit step."""
    model = models(arch)
    latent = model.latent
    assert (latent.layout, latent.channels, latent.spatial_factor, latent.factors_source) == ("BCHW", 3, 8, "pixels")
    pixels = torch.rand((1, 3, 48, 64), generator=torch.Generator().manual_seed(0)) * 1.8 - 0.9
    gen = gen_config(arch, tmp_path, width=64, height=48)
    latents, decoded = held_while_sampling(model, pixels)
    assert torch.equal(decoded, pixels)  # the pipeline's decode gives the image back exactly
    preview = model.unpack_latents(latents, gen)
    assert tuple(preview.shape) == model.latent_shape(gen) == (1, 3, 6, 8)
    shown = project_rgb(preview.numpy(), latent.rgb_factors, latent.rgb_bias).astype(int)
    image = model.pipeline.image_processor.postprocess(decoded, output_type="np")[0]  # H x W x 3 in [0, 1]
    expected = np.rint(image.reshape(6, 8, 8, 8, 3).mean(axis=(1, 3)) * 255).astype(int)
    assert shown.shape == expected.shape == (6, 8, 3)
    assert np.abs(shown - expected).max() <= 1
    assert len(np.unique(shown)) > 20  # a picture, not a flat field the check above would pass anyway


@pytest.mark.parametrize("arch", REGISTERED)
def test_the_last_streamed_preview_is_the_final_latents_unpacked(arch, models, tmp_path):
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


# ------------------------------------------------------------------ Chroma Radiance from a single file
def _radiance_module(config_folder):
    """A radiance transformer shaped by a latent Chroma config (the published file has none of its own)."""
    from toolkit.models.chroma_radiance import ChromaRadianceTransformer2DModel

    config = ChromaRadianceTransformer2DModel.load_config(config_folder, subfolder="transformer")
    assert config["in_channels"] == 768 and "patch_size" not in config  # 16x16 RGB patches, one token each
    torch.manual_seed(0)
    return ChromaRadianceTransformer2DModel.from_config(config)


def _original_layout(sd: dict, prefix: str = "") -> dict:
    """The module's weights under the published (original, Black Forest Labs) names, fused as that layout keeps
    them: what AI Toolkit's Chroma class in extensions_built_in/diffusion_models/chroma/src/radiance.py loads."""
    out, cat = {}, lambda *keys: torch.cat([sd[k] for k in keys])  # noqa: E731
    for key in sd:
        if key.startswith(
            ("img_in_patch.", "nerf_", "distilled_guidance_layer.in_proj.", "distilled_guidance_layer.out_proj.")
        ):
            out[key] = sd[key]
    out["txt_in.weight"], out["txt_in.bias"] = sd["context_embedder.weight"], sd["context_embedder.bias"]
    layers = {int(k.split(".")[2]) for k in sd if k.startswith("distilled_guidance_layer.layers.")}
    for i in layers:
        src, dst = f"distilled_guidance_layer.layers.{i}.", f"distilled_guidance_layer.layers.{i}."
        for p in ("weight", "bias"):
            out[f"{dst}in_layer.{p}"], out[f"{dst}out_layer.{p}"] = sd[f"{src}linear_1.{p}"], sd[f"{src}linear_2.{p}"]
        out[f"distilled_guidance_layer.norms.{i}.scale"] = sd[f"distilled_guidance_layer.norms.{i}.weight"]
    for i in {int(k.split(".")[1]) for k in sd if k.startswith("transformer_blocks.")}:
        a, o = f"transformer_blocks.{i}.", f"double_blocks.{i}."
        for p in ("weight", "bias"):
            out[f"{o}img_attn.qkv.{p}"] = cat(*(f"{a}attn.to_{x}.{p}" for x in "qkv"))
            out[f"{o}txt_attn.qkv.{p}"] = cat(*(f"{a}attn.add_{x}_proj.{p}" for x in "qkv"))
            out[f"{o}img_attn.proj.{p}"], out[f"{o}txt_attn.proj.{p}"] = (
                sd[f"{a}attn.to_out.0.{p}"],
                sd[f"{a}attn.to_add_out.{p}"],
            )
            out[f"{o}img_mlp.0.{p}"], out[f"{o}img_mlp.2.{p}"] = sd[f"{a}ff.net.0.proj.{p}"], sd[f"{a}ff.net.2.{p}"]
            out[f"{o}txt_mlp.0.{p}"], out[f"{o}txt_mlp.2.{p}"] = (
                sd[f"{a}ff_context.net.0.proj.{p}"],
                sd[f"{a}ff_context.net.2.{p}"],
            )
        out[f"{o}img_attn.norm.query_norm.scale"], out[f"{o}img_attn.norm.key_norm.scale"] = (
            sd[f"{a}attn.norm_q.weight"],
            sd[f"{a}attn.norm_k.weight"],
        )
        out[f"{o}txt_attn.norm.query_norm.scale"], out[f"{o}txt_attn.norm.key_norm.scale"] = (
            sd[f"{a}attn.norm_added_q.weight"],
            sd[f"{a}attn.norm_added_k.weight"],
        )
    for i in {int(k.split(".")[1]) for k in sd if k.startswith("single_transformer_blocks.")}:
        a, o = f"single_transformer_blocks.{i}.", f"single_blocks.{i}."
        for p in ("weight", "bias"):
            out[f"{o}linear1.{p}"] = cat(*(f"{a}attn.to_{x}.{p}" for x in "qkv"), f"{a}proj_mlp.{p}")
            out[f"{o}linear2.{p}"] = sd[f"{a}proj_out.{p}"]
        out[f"{o}norm.query_norm.scale"], out[f"{o}norm.key_norm.scale"] = (
            sd[f"{a}attn.norm_q.weight"],
            sd[f"{a}attn.norm_k.weight"],
        )
    assert sum(v.numel() for v in out.values()) == sum(v.numel() for v in sd.values())  # every weight, once
    return {prefix + k: v.clone() for k, v in out.items()}


def _load_radiance(path, config_folder):
    from toolkit.models.components.loading import load_component

    return load_component(
        get_model_class("chroma_radiance").components["transformer"].cls,
        str(path),
        "transformer",
        dtype="float32",
        device="cpu",
        config_source=config_folder,
    )


@pytest.mark.skipif("chroma_radiance" not in ARCHS, reason="chroma_radiance is not registered")
@pytest.mark.parametrize("prefix", ["", "model.diffusion_model."])  # as published; as ComfyUI saves it
def test_radiance_transformer_loads_a_file_in_the_original_layout(tmp_path, tiny_cache, prefix):
    chroma = tiny.tiny_checkpoint("chroma")  # a latent Chroma folder (Chroma1-HD's shape, in small)
    state = _radiance_module(chroma).state_dict()
    original = _original_layout(state, prefix)
    assert {"img_in_patch.weight", "double_blocks.0.img_attn.qkv.weight", "single_blocks.0.linear1.weight"} <= {
        k.removeprefix(prefix) for k in original
    }
    path = tmp_path / "Chroma1-Radiance.safetensors"
    save_file(original, str(path))
    loaded = _load_radiance(path, chroma).state_dict()
    assert sorted(loaded) == sorted(state)
    assert all(torch.equal(loaded[k], state[k]) for k in state)


@pytest.mark.skipif("chroma_radiance" not in ARCHS, reason="chroma_radiance is not registered")
def test_radiance_transformer_refuses_a_latent_chroma_file_naming_its_keys(tmp_path, tiny_cache):
    chroma = tiny.tiny_checkpoint("chroma")
    original = _original_layout(_radiance_module(chroma).state_dict())
    latent_only = {k: v for k, v in original.items() if not k.startswith(("img_in_patch.", "nerf_"))}
    path = tmp_path / "chroma1-hd.safetensors"
    save_file(latent_only, str(path))
    with pytest.raises(ValueError, match=r"not a Chroma Radiance transformer: \d+ of its keys missing \['img_in_patch"):
        _load_radiance(path, chroma)
