"""AI Toolkit's newer image families (ERNIE-Image, Krea 2, Nucleus-Image, Ideogram 4, Anima) beyond what the
ARCHS-parametrized tests check for every family: each streams latents in the layout its pipeline decodes, after
undoing the packing and normalisation the pipeline samples in, and each family-specific setting reaches the
pipeline. test_archs_image.py checks their preview factors against ComfyUI's tables."""

import numpy as np
import pytest
import torch

from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models import tiny
from toolkit.models.registry import ARCHS, get_model_class

_loaded = {}


def load(arch, variant=None):
    """``arch`` (``family:tag`` too) on its family's tiny checkpoint, or on the ``variant`` sibling of it."""
    key = (arch, variant)
    if key not in _loaded:
        family = arch.partition(":")[0]
        assert family in ARCHS, f"{family} is not in the registry"
        name = f"tiny:{family}" + (f"/{variant}" if variant else "")
        model = get_model_class(arch)("cpu", ModelConfig(name_or_path=name, arch=arch))
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


# ------------------------------------------------------------------ Krea 2
def test_krea2_streams_the_unpacked_normalised_latent_without_the_frame_axis(tmp_path):
    model = load("krea2")
    gen = gen_config(model, tmp_path, width=96, height=64)
    seen, tokens = streamed_and_decoded(model, gen)
    assert tokens.shape == (1, 4 * 6, 64)  # packed 2x2 tokens of 16 channels
    assert len(seen) == 2 and tuple(seen[-1].shape) == model.latent_shape(gen) == (1, 16, 8, 12)
    torch.testing.assert_close(seen[-1], model.pipeline._unpack_latents(tokens, 64, 96)[:, :, 0])


def test_krea2_guidance_is_ai_toolkit_s_cfg_scale(tmp_path):
    """AI Toolkit's 1 (no CFG) is Krea 2's 0; its 5.5 is the card's 4.5. Without CFG no negative prompt is
    encoded."""
    model = load("krea2")
    off = model.pipeline_kwargs(gen_config(model, tmp_path, guidance_scale=1.0, negative_prompt="blurry"))
    assert off["guidance_scale"] == 0.0 and off["negative_prompt"] is None
    on = model.pipeline_kwargs(gen_config(model, tmp_path, guidance_scale=5.5))
    assert on["guidance_scale"] == 4.5 and on["negative_prompt"] == ""


def _sigmas_of_a_run(model, tmp_path, steps=3):
    model.generate_images([gen_config(model, tmp_path, num_inference_steps=steps)])
    return model.pipeline.scheduler.sigmas[:-1].double()


def _fixed_shift(steps, mu=1.15):
    import math

    s = torch.linspace(1.0, 1.0 / steps, steps, dtype=torch.float64)
    return math.exp(mu) / (math.exp(mu) + (1 / s - 1))


def test_krea2_turbo_checkpoint_samples_with_its_fixed_time_shift(tmp_path):
    """Krea-2-Turbo's model_index.json says is_distilled: its sigmas use mu 1.15 whatever the size; the base
    checkpoint's follow the resolution (a 64x64 image is 16 tokens, far below mu 1.15's 6400)."""
    turbo, base = load("krea2", variant="turbo"), load("krea2")
    assert turbo.pipeline.config.is_distilled and not base.pipeline.config.is_distilled
    torch.testing.assert_close(_sigmas_of_a_run(turbo, tmp_path / "t"), _fixed_shift(3), atol=1e-5, rtol=0)
    assert not torch.allclose(_sigmas_of_a_run(base, tmp_path / "b"), _fixed_shift(3), atol=1e-3)


def test_krea2_turbo_tag_decides_where_the_checkpoint_says_nothing(tmp_path):
    """A checkpoint without model_index.json (a folder of components): the :turbo tag sets the fixed shift, and
    the taps are the pipeline's defaults, the release's (so not the tiny checkpoint's own)."""
    import shutil

    from toolkit.models.tiny import tiny_checkpoint
    from toolkit.models.tiny_recipes.krea2 import TAPS

    folder = tmp_path / "krea2_components"
    shutil.copytree(tiny_checkpoint("krea2"), folder, ignore=shutil.ignore_patterns("model_index.json"))
    for arch, distilled in (("krea2:turbo", True), ("krea2", False)):
        model = get_model_class(arch)("cpu", ModelConfig(name_or_path=str(folder), arch=arch))
        model.plan = model.options_plan()
        model.parts = {role: model.load_component(role, c) for role, c in model.components.items()}
        pipe = model.build_pipeline()
        assert pipe.config.is_distilled is distilled, arch
        assert pipe.text_encoder_select_layers == (2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35) != TAPS


# ------------------------------------------------------------------ Nucleus-Image
def test_nucleus_image_streams_the_unpacked_normalised_latent(tmp_path):
    from diffusers import NucleusMoEImagePipeline

    model = load("nucleus_image")
    gen = gen_config(model, tmp_path, width=96, height=64)
    seen, tokens = streamed_and_decoded(model, gen)
    assert tokens.shape == (1, 4 * 6, 64)
    assert len(seen) == 2 and tuple(seen[-1].shape) == model.latent_shape(gen) == (1, 16, 8, 12)
    torch.testing.assert_close(seen[-1], NucleusMoEImagePipeline._unpack_latents(tokens, 64, 96, 2, 8)[:, :, 0])


def test_nucleus_image_plan_counts_every_expert_and_keeps_them_16_bit_under_8_bit(tmp_path):
    """All experts are resident whichever a token routes to: the transformer's size counts every expert stack, and
    an 8-bit placement shrinks only the rest (torchao quantizes nn.Linear weights; the stacks are 3-D parameters)."""
    from toolkit.memory_plan import QUANTIZED_RATIO, resident_bytes

    model = load("nucleus_image")
    transformer = model.parts["transformer"]
    blocks = [b for b in transformer.transformer_blocks if hasattr(b.img_mlp, "experts")]
    assert blocks and all(b.img_mlp.experts.gate_up_proj.shape[0] == 4 for b in blocks)  # MoE blocks, 4 experts
    size = lambda params: sum(p.numel() * p.element_size() for p in params)  # noqa: E731
    experts = size(p for n, p in transformer.named_parameters() if ".experts." in n)
    [part] = [p for p in model.memory_parts() if p.role == "transformer"]
    assert part.bytes == size(transformer.parameters()) and part.unquantized == experts > 0
    assert part.largest == max(p.numel() * p.element_size() for p in transformer.parameters())
    quantized = resident_bytes(part, "quantized")
    assert quantized == int((part.bytes - experts) * QUANTIZED_RATIO["denoiser"]) + experts
    assert quantized > int(part.bytes * QUANTIZED_RATIO["denoiser"])  # more than a dense denoiser's estimate


def test_qwen_vl_text_processor_loads_a_qwen3_vl_processor_folder(tmp_path):
    """Nucleus-Image's processor folder is a Qwen3VLProcessor's (image and video processors beside the tokenizer);
    the text-only class reads it, ignores the rest, and formats and tokenises as the pipeline asks."""
    import json

    from toolkit.models.components.loading import load_component

    folder = tmp_path / "processor"
    load("nucleus_image").pipeline.processor.save_pretrained(folder)
    (folder / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen3VLProcessor"}))
    (folder / "preprocessor_config.json").write_text(json.dumps({"image_processor_type": "Qwen2VLImageProcessorFast"}))
    (folder / "video_preprocessor_config.json").write_text(
        json.dumps({"video_processor_type": "Qwen3VLVideoProcessor"})
    )
    proc = load_component("toolkit.models.processors.QwenVLTextProcessor", str(folder))
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "a cat"}]},
    ]
    text = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\na cat<|im_end|>\n<|im_start|>assistant\n"
    out = proc(text=[text, "a"], padding="longest", pad_to_multiple_of=8, return_tensors="pt")
    assert out["input_ids"].shape[1] % 8 == 0 and out["attention_mask"][1].sum() < out["attention_mask"][0].sum()


# ------------------------------------------------------------------ Ideogram 4
def test_ideogram4_streams_the_latent_its_vae_decodes(tmp_path):
    """The loop's tokens are BatchNorm-normalised in a packed (row, column, channel) order of its own; decoding the
    streamed map with the VAE must give the pipeline's own image."""
    model = load("ideogram4")
    gen = gen_config(model, tmp_path, width=96, height=64, num_inference_steps=2)
    seen, tokens = streamed_and_decoded(model, gen)
    assert tokens.shape == (1, 4 * 6, 128)
    assert len(seen) == 2 and tuple(seen[-1].shape) == model.latent_shape(gen) == (1, 32, 8, 12)
    torch.testing.assert_close(seen[-1], model.unpack_latents(tokens, gen))
    torch.manual_seed(gen.seed)
    with torch.inference_mode():
        image = model.pipeline(
            **model.pipeline_kwargs(gen), generator=torch.Generator().manual_seed(gen.seed), output_type="pt"
        ).images
        decoded = model.pipeline.vae.decode(seen[-1], return_dict=False)[0]
    expected = model.pipeline.image_processor.postprocess(decoded.float(), output_type="pt")
    torch.testing.assert_close(image, expected)


@pytest.mark.parametrize(
    "steps, guidance, mu, std, schedule",
    [
        (48, 7.0, 0.0, 1.5, [7.0] * 45 + [3.0] * 3),  # "4.0 Quality 48", diffusers' defaults
        (20, 7.0, 0.0, 1.75, [7.0] * 18 + [3.0] * 2),  # "4.0 Default 20"
        (12, 7.0, 0.5, 1.75, [7.0] * 11 + [3.0]),  # "4.0 Turbo 12"
        (20, 2.0, 0.0, 1.75, [2.0] * 20),  # the polish steps never raise a lower guidance
        (30, 5.0, 0.0, 1.75, [5.0] * 30),  # other counts: a constant guidance, as AI Toolkit samples
    ],
)
def test_ideogram4_samples_with_the_official_presets(steps, guidance, mu, std, schedule, tmp_path):
    model = get_model_class("ideogram4")("cpu", ModelConfig(name_or_path="tiny:ideogram4", arch="ideogram4"))
    kwargs = model.pipeline_kwargs(gen_config(model, tmp_path, num_inference_steps=steps, guidance_scale=guidance))
    assert (kwargs["mu"], kwargs["std"], kwargs["guidance_schedule"]) == (mu, std, schedule)
    assert kwargs["guidance_scale"] is None  # the pipeline takes one of the two


def test_ideogram4_runs_its_unconditional_network_every_step(tmp_path):
    model = load("ideogram4")
    assert model.parts["unconditional_transformer"] is not model.parts["transformer"]
    calls = {"transformer": 0, "unconditional_transformer": 0}
    handles = [
        model.parts[role].register_forward_pre_hook(lambda m, a, role=role: calls.__setitem__(role, calls[role] + 1))
        for role in calls
    ]
    try:
        model.generate_images([gen_config(model, tmp_path, num_inference_steps=3)])
    finally:
        for h in handles:
            h.remove()
    assert calls == {"transformer": 3, "unconditional_transformer": 3}


# ------------------------------------------------------------------ Anima (a modular pipeline)
def test_anima_modular_pipeline_streams_the_latent_it_decodes(tmp_path):
    """The engine's step hook wraps ``pipeline.scheduler.step``; the modular denoise loop steps the same scheduler,
    so every step streams, and the last streamed latent is what the decode block receives."""
    model = load("anima")
    gen = gen_config(model, tmp_path, width=96, height=64)
    seen = []
    model.sample_step_hook = lambda s: seen.append(s.latents())
    try:
        model.generate_images([gen])
    finally:
        model.sample_step_hook = None
    torch.manual_seed(gen.seed)
    model.pipeline.guider.guidance_scale = gen.guidance_scale
    with torch.inference_mode():
        latents = model.pipeline(
            **model.pipeline_kwargs(gen), generator=torch.Generator().manual_seed(gen.seed), output="latents"
        )
    assert latents.shape == (1, 16, 1, 8, 12)
    assert len(seen) == 2 and tuple(seen[-1].shape) == model.latent_shape(gen) == (1, 16, 8, 12)
    torch.testing.assert_close(seen[-1], latents[:, :, 0])


@pytest.mark.parametrize("guidance, passes", [(4.0, 2), (1.0, 1)])
def test_anima_guidance_reaches_its_guider(guidance, passes, tmp_path):
    """CFG lives in the modular pipeline's guider component: each request sets its scale (two DiT passes a step),
    and 1 turns it off (one pass)."""
    model = load("anima")
    calls = []
    handle = model.parts["transformer"].register_forward_pre_hook(lambda m, a: calls.append(1))
    try:
        model.generate_images([gen_config(model, tmp_path, guidance_scale=guidance, num_inference_steps=2)])
    finally:
        handle.remove()
    assert model.pipeline.guider.guidance_scale == guidance and len(calls) == 2 * passes


def test_anima_takes_an_ai_toolkit_lora_on_the_dit_and_its_adapter(tmp_path):
    """AI Toolkit saves Anima LoRAs with the original names under ``diffusion_model.`` (the LLM adapter's under
    ``diffusion_model.llm_adapter.``); diffusers' Anima loader on the modular pipeline converts both."""
    from safetensors.torch import save_file

    torch.manual_seed(0)
    lora = {
        "diffusion_model.blocks.0.self_attn.q_proj.lora_A.weight": torch.randn(4, 32),
        "diffusion_model.blocks.0.self_attn.q_proj.lora_B.weight": torch.randn(32, 4),
        "diffusion_model.llm_adapter.blocks.0.self_attn.q_proj.lora_A.weight": torch.randn(4, 32),
        "diffusion_model.llm_adapter.blocks.0.self_attn.q_proj.lora_B.weight": torch.randn(32, 4),
    }
    path = tmp_path / "anima_lora.safetensors"
    save_file(lora, str(path))
    plain = load("anima")
    with_lora = get_model_class("anima")(
        "cpu", ModelConfig(name_or_path="tiny:anima", arch="anima", lora_path=str(path))
    )
    with_lora.load_model()
    assert "transformer" in with_lora.pipeline.get_list_adapters()
    assert "text_conditioner" in with_lora.pipeline.get_list_adapters()
    a = plain.generate_media(gen_config(plain, tmp_path / "a"))
    b = with_lora.generate_media(gen_config(with_lora, tmp_path / "b"))
    assert not np.array_equal(a.image, b.image)
