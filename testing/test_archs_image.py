"""Image families beyond what test_models checks for every arch: preview factors, unpacking, control images.

test_models.py already runs every registered arch through load -> hook -> cancel -> replay on its tiny
checkpoint. Here: (1) each family's declared RGB factors are ComfyUI's (comfy/latent_formats.py) and project
a hand-made latent to the pixels computed by hand from those numbers; (2) packed families hand the hook the
layout the pipeline itself decodes; (3) edit families' outputs depend on their control images.
"""

import numpy as np
import pytest
import torch
from PIL import Image

from extensions_built_in.inference_engine.latent_preview import project_rgb
from testing.test_pixel_space import PIXEL_SPACE
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models import tiny
from toolkit.models.registry import ARCHS, get_model_class
from toolkit.models.tiny_recipes import _parts as tiny_parts

# ------------------------------------------------------------------ (1) RGB factors
# Rows transcribed from ComfyUI's comfy/latent_formats.py, not from the family files.
ANCHOR_ROWS = {
    "SD15": {0: (0.3512, 0.2297, 0.3227), 2: (-0.2829, 0.1762, 0.2721), 3: (-0.2120, -0.2616, -0.7177)},
    "SDXL": {0: (0.3651, 0.4232, 0.4341), 1: (-0.2533, -0.0042, 0.1068), 3: (-0.3165, -0.2492, -0.2188)},
    "SD3": {
        0: (-0.0922, -0.0175, 0.0749),
        2: (0.1994, 0.0927, 0.0458),
        7: (-0.0042, 0.1038, 0.1358),
        15: (-0.1448, -0.1463, -0.1189),
    },
    "Flux": {
        0: (-0.0346, 0.0244, 0.0681),
        9: (0.1008, 0.0755, -0.0421),
        13: (-0.1264, -0.0522, -0.1103),
        15: (-0.1262, -0.0982, -0.0778),
    },
    "Wan21": {
        0: (-0.1299, -0.1692, 0.2932),
        2: (0.3568, 0.2548, 0.1747),
        6: (-0.3477, -0.4059, -0.2925),
        15: (0.1984, 0.0913, 0.1861),
    },
    "Flux2": {
        0: (0.0058, 0.0113, 0.0073),
        3: (0.2144, 0.3009, 0.3652),
        8: (-0.3527, -0.2712, -0.1666),
        23: (0.0000, -0.0077, -0.0049),
        31: (-0.0111, -0.0460, -0.0614),
    },
}
ANCHOR_BIAS = {
    "SD15": None,  # ComfyUI's SD15 format has no bias row
    "SDXL": (0.1084, -0.0175, -0.0011),
    "SD3": (0.2394, 0.2135, 0.1925),
    "Flux": (-0.0329, -0.0718, -0.0851),
    "Wan21": (-0.1835, -0.0868, -0.3360),
    "Flux2": (-0.0329, -0.0718, -0.0851),
}
ANCHOR_CHANNELS = {"SD15": 4, "SDXL": 4, "SD3": 16, "Flux": 16, "Wan21": 16, "Flux2": 32}

# Which ComfyUI format each family's streamed latent space is (comfy/supported_models.py), and the pixels a
# one-hot latent projects to: round(clip(((F[k] + bias) + 1) / 2) * 255) per channel k, worked out by hand from
# the rows above, plus the all-zero latent (bias only). e.g. SDXL k=0, R: (0.3651 + 0.1084 + 1) / 2 * 255 = 187.9.
FAMILY_FORMAT = {
    "sd1": "SD15",
    "sd2": "SD15",
    "pixart": "SD15",
    "sdxl": "SDXL",
    "ssd": "SDXL",
    "vega": "SDXL",
    "auraflow": "SDXL",
    "pixart_sigma": "SDXL",
    "sd3": "SD3",
    "zimage": "Flux",
    "chroma": "Flux",
    "lumina2": "Flux",
    "hidream": "Flux",
    "flux_kontext": "Flux",
    "flex2": "Flux",
    "qwen_image": "Wan21",
    "qwen_image_edit": "Wan21",
    "qwen_image_edit_plus": "Wan21",
    "flux2_klein_4b": "Flux2",
    "flux2_klein_9b": "Flux2",
    "flux2": "Flux2",
    "ernie_image": "Flux2",
    "krea2": "Wan21",
    "nucleus_image": "Wan21",
    "ideogram4": "Flux2",
    "anima": "Wan21",
}
EXPECTED_PIXELS = {  # format: ((k1, rgb), (k2, rgb), zero-latent rgb)
    "SD15": ((0, (172, 157, 169)), (3, (100, 94, 36)), (128, 128, 128)),  # no bias: zero is (0 + 1) / 2 * 255
    "SDXL": ((0, (188, 179, 183)), (3, (101, 93, 99)), (141, 125, 127)),
    "SD3": ((2, (183, 167, 158)), (15, (140, 136, 137)), (158, 155, 152)),
    "Flux": ((9, (136, 128, 111)), (13, (107, 112, 103)), (123, 118, 117)),
    "Wan21": ((2, (150, 149, 107)), (6, (60, 65, 47)), (104, 116, 85)),
    "Flux2": ((3, (151, 157, 163)), (8, (78, 84, 95)), (123, 118, 117)),
}
NO_FACTORS = {"cogview4"}  # no ComfyUI format has factors for its VAE


def _registered(archs):
    """Families these tests name must exist: one dropped from the registry fails here, never goes quietly green."""
    missing = sorted(a for a in archs if a not in ARCHS)
    assert not missing, f"not in the registry: {missing}"
    return sorted(archs)


def test_every_image_family_is_covered_here():
    image_archs = {a for a in ARCHS if get_model_class(a).modality == "image"} - {"sd1", "flux"}
    assert image_archs <= set(FAMILY_FORMAT) | NO_FACTORS | PIXEL_SPACE  # pixel space: testing/test_pixel_space.py


@pytest.mark.parametrize("arch", _registered(FAMILY_FORMAT))
def test_declared_factors_are_the_anchor_table(arch):
    fmt = FAMILY_FORMAT[arch]
    latent = get_model_class(arch).latent
    assert latent.layout == "BCHW" and latent.channels == ANCHOR_CHANNELS[fmt]
    assert len(latent.rgb_factors) == latent.channels
    for row, rgb in ANCHOR_ROWS[fmt].items():
        assert tuple(latent.rgb_factors[row]) == rgb, (arch, row)
    assert (tuple(latent.rgb_bias) if latent.rgb_bias else None) == ANCHOR_BIAS[fmt]
    assert latent.factors_source == f"ComfyUI {fmt}"


@pytest.mark.parametrize("arch", _registered(FAMILY_FORMAT))
def test_one_hot_latents_project_to_hand_computed_pixels(arch):
    fmt = FAMILY_FORMAT[arch]
    latent = get_model_class(arch).latent
    (k1, rgb1), (k2, rgb2), zero = EXPECTED_PIXELS[fmt]
    x = np.zeros((1, latent.channels, 2, 2), dtype=np.float32)
    x[0, k1, 0, 0] = 1.0
    x[0, k2, 0, 1] = 1.0
    img = project_rgb(x, latent.rgb_factors, latent.rgb_bias)
    assert img.shape == (2, 2, 3) and img.dtype == np.uint8
    assert tuple(img[0, 0]) == rgb1
    assert tuple(img[0, 1]) == rgb2
    assert tuple(img[1, 0]) == tuple(img[1, 1]) == zero


@pytest.mark.parametrize("arch", _registered(NO_FACTORS))
def test_families_without_a_factor_table_declare_none(arch):
    latent = get_model_class(arch).latent
    assert latent.rgb_factors is None and latent.rgb_bias is None and latent.factors_source is None


# ------------------------------------------------------------------ loading helpers
_loaded = {}


def load(arch):
    if arch not in _loaded:
        model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
        model.load_model()
        _loaded[arch] = model
    return _loaded[arch]


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


# ------------------------------------------------------------------ (2) packed families
FLUX_PACKED = {
    "flux": "FluxPipeline",
    "chroma": "ChromaPipeline",
    "flux_kontext": "FluxKontextPipeline",
    "flex2": "FluxPipeline",
}
QWEN_PACKED = {
    "qwen_image": "QwenImagePipeline",
    "qwen_image_edit": "QwenImageEditPipeline",
    "qwen_image_edit_plus": "QwenImageEditPlusPipeline",
}
FLUX2_PACKED = {
    "flux2_klein_4b": "Flux2KleinPipeline",
    "flux2_klein_9b": "Flux2KleinPipeline",
    "flux2": "Flux2Pipeline",
}


@pytest.mark.parametrize("arch", _registered(FLUX_PACKED))
@pytest.mark.parametrize("size", [(64, 64), (96, 48), (48, 96)])
def test_flux_packed_unpack_is_the_pipelines_own(arch, size, tmp_path):
    import diffusers

    pipe_cls = getattr(diffusers, FLUX_PACKED[arch])
    model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))  # no weights needed
    gen = gen_config(model, tmp_path, width=size[0], height=size[1])
    shape = model.latent_shape(gen)
    assert shape == (1, 16, size[1] // 8, size[0] // 8)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    packed = pipe_cls._pack_latents(x, 1, 16, shape[2], shape[3])
    assert packed.shape == (1, shape[2] * shape[3] // 4, 64)
    unpacked = model.unpack_latents(packed, gen)
    assert tuple(unpacked.shape) == shape
    assert torch.equal(unpacked, x)  # round trip through the pipeline's own packing
    assert torch.equal(unpacked, pipe_cls._unpack_latents(packed, size[1], size[0], 8))


@pytest.mark.parametrize("arch", _registered(QWEN_PACKED))
@pytest.mark.parametrize("size", [(64, 64), (96, 48)])
def test_qwen_packed_unpack_is_the_pipelines_own_without_the_frame_axis(arch, size, tmp_path):
    import diffusers

    pipe_cls = getattr(diffusers, QWEN_PACKED[arch])
    model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
    gen = gen_config(model, tmp_path, width=size[0], height=size[1])
    shape = model.latent_shape(gen)
    assert shape == (1, 16, size[1] // 8, size[0] // 8)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    packed = pipe_cls._pack_latents(x.unsqueeze(2), 1, 16, shape[2], shape[3])  # B,C,1,H,W as the pipeline has it
    unpacked = model.unpack_latents(packed, gen)
    assert tuple(unpacked.shape) == shape
    assert torch.equal(unpacked, x)
    assert torch.equal(unpacked, pipe_cls._unpack_latents(packed, size[1], size[0], 8)[:, :, 0])


@pytest.mark.parametrize("arch", _registered(FLUX2_PACKED))
def test_flux2_unpack_round_trips_the_pipelines_packing_and_normalisation(arch, tmp_path):
    import diffusers

    pipe_cls = getattr(diffusers, FLUX2_PACKED[arch])
    model = load(arch)
    bn = model.parts["vae"].bn
    assert not torch.allclose(bn.running_var, torch.ones_like(bn.running_var))  # the denormalisation matters
    gen = gen_config(model, tmp_path, width=96, height=64)
    shape = model.latent_shape(gen)
    assert shape == (1, 32, 8, 12)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    std = torch.sqrt(bn.running_var.view(1, -1, 1, 1) + model.parts["vae"].config.batch_norm_eps)
    packed = pipe_cls._pack_latents((pipe_cls._patchify_latents(x) - bn.running_mean.view(1, -1, 1, 1)) / std)
    assert packed.shape == (1, 4 * 6, 128)
    torch.testing.assert_close(model.unpack_latents(packed, gen), x)


def test_flux2_unpack_keeps_batches_apart_and_the_latents_dtype_and_device():
    """A batch of two unpacks each item with its own ids; bfloat16 latents stay bfloat16 (the BatchNorm
    statistics are float32 and must follow the latents' dtype)."""
    import diffusers

    from toolkit.models.archs.flux2_klein import unpack_flux2_latents

    pipe_cls, vae = diffusers.Flux2KleinPipeline, load("flux2_klein_4b").parts["vae"]
    x = torch.randn((2, 32, 8, 12), generator=torch.Generator().manual_seed(1))
    std = torch.sqrt(vae.bn.running_var.view(1, -1, 1, 1) + vae.config.batch_norm_eps)
    packed = pipe_cls._pack_latents((pipe_cls._patchify_latents(x) - vae.bn.running_mean.view(1, -1, 1, 1)) / std)
    torch.testing.assert_close(unpack_flux2_latents(pipe_cls, vae, packed, 64, 96), x)
    half = unpack_flux2_latents(pipe_cls, vae, packed.to(torch.bfloat16), 64, 96)
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.float(), x, atol=0.1, rtol=0.05)


@pytest.mark.parametrize("arch", _registered(FLUX2_PACKED))
def test_flux2_last_streamed_latent_is_what_the_pipeline_decodes(arch, tmp_path):
    """Flux2KleinPipeline's output_type='latent' returns the unpacked, denormalised 32-channel map it decodes;
    Flux2Pipeline's returns the packed tokens (then the family's unpacking must agree with the hook's)."""
    model = load(arch)
    seen = []
    model.sample_step_hook = lambda s: seen.append(s.latents())
    gen = gen_config(model, tmp_path, width=96, height=64)
    try:
        model.generate_images([gen])
    finally:
        model.sample_step_hook = None
    assert len(seen) == gen.num_inference_steps and tuple(seen[-1].shape) == model.latent_shape(gen)
    torch.manual_seed(gen.seed)
    with torch.inference_mode():
        out = model.pipeline(
            **model.pipeline_kwargs(gen), generator=torch.Generator().manual_seed(gen.seed), output_type="latent"
        ).images
    if arch == "flux2":
        assert out.shape == (1, 4 * 6, 128)
        out = model.unpack_latents(out, gen)
    assert torch.allclose(out, seen[-1], atol=1e-6)


# ------------------------------------------------------------------ (3) control images
EDIT_FAMILIES = _registered(["flux_kontext", "qwen_image_edit", "qwen_image_edit_plus"])


def _png(path, seed, size=(80, 56)):
    rng = np.random.RandomState(seed)
    Image.fromarray((rng.rand(size[1], size[0], 3) * 255).astype("uint8")).save(path)
    return str(path)


def _bytes(result):
    with open(result["path"], "rb") as f:
        return f.read()


@pytest.mark.parametrize("arch", EDIT_FAMILIES)
def test_edit_family_declares_one_control_image(arch):
    assert get_model_class(arch).control_images == 1
    assert get_model_class(arch).describe()["control_images"] == 1


@pytest.mark.parametrize("arch", EDIT_FAMILIES)
def test_control_image_changes_the_output(arch, tmp_path):
    model = load(arch)
    a, b = _png(tmp_path / "a.png", 1), _png(tmp_path / "b.png", 2)
    ra = model.generate_images([gen_config(model, tmp_path / "a", ctrl_img=a)])[0]
    rb = model.generate_images([gen_config(model, tmp_path / "b", ctrl_img=b)])[0]
    ra2 = model.generate_images([gen_config(model, tmp_path / "a2", ctrl_img=a)])[0]
    assert (ra["width"], ra["height"]) == (64, 64)
    assert _bytes(ra) != _bytes(rb)
    assert _bytes(ra) == _bytes(ra2)  # same control image, same seed: same output


@pytest.mark.parametrize("arch", EDIT_FAMILIES)
def test_missing_control_image_is_a_clear_error(arch, tmp_path):
    model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))  # fails before sampling
    with pytest.raises(ValueError, match="control image 1"):
        model.pipeline_kwargs(gen_config(model, tmp_path))


def test_edit_plus_uses_every_reference_image(tmp_path):
    model = load("qwen_image_edit_plus")
    a, b = _png(tmp_path / "a.png", 1), _png(tmp_path / "b.png", 2, size=(48, 64))
    gen = gen_config(model, tmp_path / "two", ctrl_img_1=a, ctrl_img_2=b)
    images = model.pipeline_kwargs(gen)["image"]
    assert [im.size for im in images] == [(64, 64), (64, 64)]
    one = model.generate_images([gen_config(model, tmp_path / "one", ctrl_img_1=a)])[0]
    two = model.generate_images([gen])[0]
    assert _bytes(one) != _bytes(two)


# ------------------------------------------------------------------ sizes the pipelines would otherwise override
def test_hidream_keeps_the_requested_size(tmp_path):
    """HiDreamImagePipeline rescales every request to 1 MP; the family keeps the (snapped) requested size."""
    model = load("hidream")
    seen = []
    model.sample_step_hook = lambda s: seen.append(tuple(s.latents().shape))
    try:
        result = model.generate_images([gen_config(model, tmp_path, width=96, height=48)])[0]
    finally:
        model.sample_step_hook = None
    assert (result["width"], result["height"]) == (96, 48)
    assert seen == [(1, 16, 6, 12)] * 2
    assert model.pipeline.default_sample_size == 128  # put back after the call


# ------------------------------------------------------------------ processors that avoid torchvision
def test_mistral_text_processor_loads_a_pixtral_processor_folder(tmp_path):
    """FLUX.2 [dev]'s tokenizer folder is a PixtralProcessor's; the text-only class reads it and ignores the rest."""
    import json

    from toolkit.models.components.loading import load_component

    tiny_parts.mistral_text_processor().save_pretrained(tmp_path)
    (tmp_path / "processor_config.json").write_text(
        json.dumps(
            {
                "processor_class": "PixtralProcessor",
                "patch_size": 14,
                "spatial_merge_size": 2,
                "image_token": "[IMG]",
                "image_break_token": "[IMG_BREAK]",
                "image_end_token": "[IMG_END]",
            }
        )
    )
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"image_processor_type": "PixtralImageProcessor"}))
    proc = load_component("toolkit.models.processors.MistralTextProcessor", str(tmp_path))
    messages = [
        [
            {"role": "system", "content": [{"type": "text", "text": "sys"}]},
            {"role": "user", "content": [{"type": "text", "text": "a cat"}]},
        ]
    ]
    ids = proc.apply_chat_template(
        messages,
        add_generation_prompt=False,
        tokenize=True,
        return_dict=True,
        return_tensors="pt",
        padding="max_length",
        truncation=True,
        max_length=24,
    )
    tok = proc.tokenizer
    expected = (
        [tok.bos_token_id, tok.convert_tokens_to_ids("[SYSTEM_PROMPT]")]
        + tok.encode("sys", add_special_tokens=False)
        + [tok.convert_tokens_to_ids("[/SYSTEM_PROMPT]"), tok.convert_tokens_to_ids("[INST]")]
        + tok.encode("a cat", add_special_tokens=False)
        + [tok.convert_tokens_to_ids("[/INST]")]
    )
    assert ids["input_ids"][0, : len(expected)].tolist() == expected
    assert ids["input_ids"].shape == (1, 24) and int(ids["attention_mask"].sum()) == len(expected)


def test_qwen_vl_image_processor_loads_a_folder_with_a_video_processor_config(tmp_path):
    import json

    from toolkit.models.components.loading import load_component

    tiny_parts.qwen2_vl_processor(tiny_parts.qwen2_tokenizer()).save_pretrained(tmp_path)
    (tmp_path / "video_preprocessor_config.json").write_text(
        json.dumps({"video_processor_type": "Qwen2VLVideoProcessor"})
    )
    proc = load_component("toolkit.models.processors.QwenVLImageProcessor", str(tmp_path))
    out = proc(
        text=["<|vision_start|><|image_pad|><|vision_end|>edit"],
        images=Image.new("RGB", (96, 64)),
        padding=True,
        return_tensors="pt",
    )
    merged = int(out["image_grid_thw"].prod()) // 4  # 2x2 patch merge
    assert (out["input_ids"] == proc.image_token_id).sum() == merged
