"""The offload chain (toolkit/models/offload.py ``enable_low_vram``) when a model that stays on the GPU is streamed
by diffusers' group offloading, as a memory plan's streamed encoder is. On CUDA, group offloading on streams adds a
lazy prefetch hook that removes itself after the model's first call and, doing so, puts ``forward`` back as it was
before accelerate wrapped it. No GPU here: the hook is added by hand, as diffusers adds it with ``use_stream``."""

import torch

from toolkit.models import tiny
from toolkit.models.offload import SENDS_BACK_ATTR, _on_host, drop_host_copies, enable_low_vram, move_to_host


def host(tensors):
    return [torch.empty(t.shape, dtype=t.dtype) for t in tensors]


def streamed_as_on_cuda(encoder) -> None:
    """``toolkit/models/components/loading.py`` ``_group_offload`` at leaf level, plus the lazy prefetch hook that
    ``use_stream=True`` adds there (diffusers ``hooks/group_offloading.py``)."""
    from diffusers.hooks import apply_group_offloading
    from diffusers.hooks.group_offloading import (
        _GROUP_ID_LAZY_LEAF,
        _GROUP_OFFLOADING,
        ModuleGroup,
        _apply_lazy_group_offloading_hook,
    )

    cpu = torch.device("cpu")
    move_to_host(encoder, host)
    apply_group_offloading(encoder, onload_device=cpu, offload_device=cpu, offload_type="leaf_level")
    config = next(
        m._diffusers_hook.get_hook(_GROUP_OFFLOADING).config for m in encoder.modules() if hasattr(m, "_diffusers_hook")
    )
    group = ModuleGroup(
        modules=[],
        offload_device=cpu,
        onload_device=cpu,
        offload_leader=encoder,
        onload_leader=encoder,
        onload_self=True,
        group_id=_GROUP_ID_LAZY_LEAF,
    )
    _apply_lazy_group_offloading_hook(encoder, group, config=config)


def test_the_visitor_before_a_streamed_encoder_leaves_on_every_request_the_first_included():
    """SD3 on a 16 GiB budget (H200, 2026-12-04): CLIP-G visits, T5 streams. On the first request CLIP-G stayed on
    the GPU through sampling (1.29 GiB; that request peaked 1.7 GiB over the later ones): after T5's first call
    (the prompt) accelerate's wrapper was gone, and its second (the negative prompt) sent nothing back."""
    pipe = tiny.recipe_builder("sd3")()
    streamed_as_on_cuda(pipe.text_encoder_3)
    enable_low_vram(pipe, "cpu", visitors={"text_encoder_2", "vae"}, allocate=host)
    seen = []
    pipe.text_encoder_3.register_forward_hook(lambda m, a, o: seen.append(("t5", _on_host(pipe.text_encoder_2))))
    pipe.transformer.register_forward_pre_hook(lambda m, a: seen.append(("dit", _on_host(pipe.text_encoder_2))))
    for prompt in ("a cat", "a dog"):
        seen.clear()
        pipe(prompt=prompt, num_inference_steps=1, height=64, width=64, guidance_scale=7.0, output_type="np")
        assert seen[:3] == [("t5", True), ("t5", True), ("dit", True)], prompt
        # nothing wraps T5's forward: a wrapper kept the removed prefetch hook running on every later call
        assert not hasattr(pipe.text_encoder_3, "_old_forward")


def test_eviction_removes_the_pre_hook_that_holds_the_previous_model():
    pipe = tiny.recipe_builder("sd3")()
    enable_low_vram(pipe, "cpu", visitors={"text_encoder_2"}, allocate=host)
    transformer = pipe.transformer
    assert transformer._forward_pre_hooks and SENDS_BACK_ATTR in transformer.__dict__
    drop_host_copies(transformer)
    assert not transformer._forward_pre_hooks and SENDS_BACK_ATTR not in transformer.__dict__
