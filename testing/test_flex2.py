"""Flex.2 (toolkit/models/archs/flex2.py) beyond what every family's tests check: its 132 conditioning channels
reach the transformer (without an image: zeros and an inpaint mask of ones, as AI Toolkit's sampler gives; an RGB
image's latents in the control slot; an image with transparent pixels as masked latents and a mask in the inpaint
slot), each changes the result, the noise is FLUX.1's for a seed, and the pre-hook that appends the channels is
gone after every request, a cancelled one included."""

import numpy as np
import pytest
import torch
from PIL import Image

from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models.archs.flex2 import Flex2Model
from toolkit.sample_step_hook import GenerationCancelled

STEPS = 2
TOKENS = 16  # 64x64 pixels: 8x8 latents packed 2x2
LATENTS, INPAINT, MASK, CONTROL = slice(0, 64), slice(64, 128), slice(128, 132), slice(132, 196)


@pytest.fixture(scope="module")
def flex2(tiny_cache):
    model = Flex2Model("cpu", ModelConfig(name_or_path="tiny:flex2", arch="flex2"))
    model.load_model()
    return model


def gen(tmp_path, **sample):
    return GenerateImageConfig(
        prompt="a red circle",
        width=64,
        height=64,
        num_inference_steps=STEPS,
        guidance_scale=4.0,
        seed=5,
        output_folder=str(tmp_path),
        **sample,
    )


def run(model, tmp_path, **sample):
    """The image, and what the transformer's first layer was given at each step (its whole input)."""
    seen = []
    layer = model.pipeline.transformer.x_embedder
    handle = layer.register_forward_pre_hook(lambda module, args: seen.append(args[0].clone()))
    try:
        media = model.generate_media(gen(tmp_path, **sample))
    finally:
        handle.remove()
    return media.image, seen


def write_image(path, seed, alpha=None):
    rgb = (np.random.default_rng(seed).random((64, 64, 3)) * 255).astype("uint8")
    if alpha is None:
        Image.fromarray(rgb).save(path)
    else:
        Image.fromarray(np.concatenate([rgb, alpha[..., None]], axis=2), "RGBA").save(path)
    return str(path)


def unpack(channels):
    """(1, 16 tokens, C x 4) -> (1, C, 8, 8), as FluxPipeline unpacks latents."""
    from diffusers import FluxPipeline

    return FluxPipeline._unpack_latents(channels, 64, 64, 8)


def test_without_an_image_the_slots_are_zeros_and_a_mask_of_ones(flex2, tmp_path):
    _, seen = run(flex2, tmp_path)
    assert len(seen) == STEPS
    for x in seen:
        assert tuple(x.shape) == (1, TOKENS, 196) == (1, TOKENS, flex2.pipeline.transformer.config.in_channels)
        assert torch.equal(x[..., INPAINT], torch.zeros(1, TOKENS, 64))
        assert torch.equal(x[..., MASK], torch.ones(1, TOKENS, 4))
        assert torch.equal(x[..., CONTROL], torch.zeros(1, TOKENS, 64))
    assert not torch.equal(seen[0][..., LATENTS], seen[1][..., LATENTS])  # the latents step; the rest stays


def test_a_control_image_fills_the_control_slot_and_changes_the_result(flex2, tmp_path):
    a, b = write_image(tmp_path / "a.png", 1), write_image(tmp_path / "b.png", 2)
    plain, _ = run(flex2, tmp_path)
    with_a, seen = run(flex2, tmp_path, ctrl_img=a)
    with_b, _ = run(flex2, tmp_path, ctrl_img=b)
    again, _ = run(flex2, tmp_path, ctrl_img=a)
    x = seen[0]
    assert x[..., CONTROL].abs().max() > 0.1
    assert torch.equal(x[..., INPAINT], torch.zeros(1, TOKENS, 64)) and torch.equal(
        x[..., MASK], torch.ones(1, TOKENS, 4)
    )
    assert torch.equal(seen[1][..., CONTROL], x[..., CONTROL])  # the same conditioning every step
    assert not np.array_equal(plain, with_a) and not np.array_equal(with_a, with_b)
    assert np.array_equal(with_a, again)


def test_an_image_with_transparent_pixels_is_inpainted_where_it_is_clear(flex2, tmp_path):
    alpha = np.full((64, 64), 255, dtype=np.uint8)
    alpha[:, :32] = 0  # repaint the left half
    source = write_image(tmp_path / "inpaint.png", 3, alpha)
    opaque = write_image(tmp_path / "opaque.png", 3)
    inpainted, seen = run(flex2, tmp_path, ctrl_img=source)
    as_control, _ = run(flex2, tmp_path, ctrl_img=opaque)
    x = seen[0]
    assert torch.equal(x[..., CONTROL], torch.zeros(1, TOKENS, 64))
    slot = unpack(x[..., 64:132])  # 16 masked latent channels, then the mask (1 = repaint)
    mask, latents = slot[:, 16], slot[:, :16]
    assert torch.equal(mask[..., :4], torch.ones(1, 8, 4)) and torch.equal(mask[..., 4:], torch.zeros(1, 8, 4))
    assert torch.equal(latents[..., :4], torch.zeros(1, 16, 8, 4)) and latents[..., 4:].abs().max() > 0.1
    assert not np.array_equal(inpainted, as_control)


def test_the_noise_is_flux_pipelines_own_draw_for_the_seed(flex2, tmp_path):
    from diffusers import FluxPipeline

    pipe = flex2.pipeline
    ours = flex2.noise(pipe, gen(tmp_path), torch.Generator().manual_seed(5))
    dtype = pipe.text_encoder_2.dtype
    theirs, _ = FluxPipeline.prepare_latents(pipe, 1, 16, 64, 64, dtype, "cpu", torch.Generator().manual_seed(5))
    assert tuple(ours.shape) == (1, TOKENS, 64) and torch.equal(ours, theirs)


def test_the_conditioning_hook_is_gone_after_a_request_and_after_a_cancel(flex2, tmp_path):
    transformer = flex2.pipeline.transformer
    run(flex2, tmp_path, ctrl_img=write_image(tmp_path / "c.png", 4))
    assert not transformer._forward_pre_hooks

    def cancel(step):
        assert len(transformer._forward_pre_hooks) >= 1  # the conditioning hook is on while it samples
        raise GenerationCancelled()

    flex2.sample_step_hook = cancel
    try:
        with pytest.raises(GenerationCancelled):
            flex2.generate_media(gen(tmp_path))
    finally:
        flex2.sample_step_hook = None
    assert not transformer._forward_pre_hooks
    # the pooled transformer is plain again: a 196-channel input passes through untouched
    seen = []
    handle = transformer.x_embedder.register_forward_pre_hook(lambda module, args: seen.append(args[0].shape[-1]))
    try:
        with torch.inference_mode():
            transformer(
                hidden_states=torch.zeros(1, TOKENS, 196),
                encoder_hidden_states=torch.zeros(1, 4, transformer.config.joint_attention_dim),
                pooled_projections=torch.zeros(1, transformer.config.pooled_projection_dim),
                timestep=torch.ones(1),
                guidance=torch.ones(1),
                img_ids=torch.zeros(TOKENS, 3),
                txt_ids=torch.zeros(4, 3),
            )
    finally:
        handle.remove()
    assert seen == [196]


def test_the_stream_contract_with_a_control_image(engine_server):
    from testing.stream_contract import check_arch

    row = check_arch(engine_server.client, "flex2", controls=1)
    assert row["status"] == "PASS" and row["latent_shape"] == [1, 16, 8, 8]
