"""Where the memory plan's streamed and group-offloaded components wait and how they move: encoders leaf by leaf
and denoisers block by block, exact-size host copies, every group offloaded again after a failed call, and the two
largest tensors a stream must hold (the plan's placements as the model layer carries them out)."""

import pytest

from testing.test_memory_plan import PLENTY_OF_RAM, QWEN_IMAGE, flux_work, gib
from toolkit.config_modules import ModelConfig
from toolkit.memory_plan import Part, plan_memory


def test_a_streamed_encoder_goes_leaf_by_leaf_and_a_denoiser_block_by_block(monkeypatch, tiny_cache):
    """Block-level group offloading looks for block lists at a module's top; a Qwen2.5-VL encoder has none, so
    it became one 15 GiB group, onloaded at once (the 24 GiB Qwen-Image run on the H200: `oom` before step 1).
    The denoiser streams through BlockStream, which can keep part of it on the GPU."""
    from toolkit.models import base_model
    from toolkit.models.archs.qwen_image import QwenImageModel
    from toolkit.models.components.loading import load_component

    seen = {}
    monkeypatch.setattr(base_model, "load_component", lambda cls, src, sub, **kw: seen.setdefault(sub, kw))
    model = QwenImageModel("cuda", ModelConfig(name_or_path="tiny:qwen_image", arch="qwen_image"))
    model.plan = plan_memory("qwen_image", QWEN_IMAGE, gib(8), flux_work(1328), PLENTY_OF_RAM, qtype=None)
    assert model.plan.placements["transformer"] == model.plan.placements["text_encoder"] == "stream"
    for role in ("transformer", "text_encoder"):
        model.load_component(role, model.components[role])
    assert (seen["transformer"]["offload"], seen["text_encoder"]["offload"]) == ("blocks", "group:leaf")
    assert seen["transformer"]["device"] == seen["text_encoder"]["device"] == "cpu"  # they wait on the host

    def groups(offload):
        te = load_component(
            "transformers.Qwen2_5_VLForConditionalGeneration",
            "tiny:qwen_image",
            "text_encoder",
            dtype="float32",
            device="cpu",
            offload=offload,
            onload_device="cpu",
        )
        return [n for n, m in te.named_modules() if getattr(m, "_diffusers_hook", None) and m._diffusers_hook.hooks]

    assert groups("group:block") == [""]  # the whole encoder, one group
    assert len(groups("group:leaf")) > 20


def test_a_group_offloaded_encoder_waits_in_exact_size_host_copies():
    """diffusers' group offloading pins each tensor through torch's power-of-two allocator unless it is pinned
    already: the encoder's weights go into one of ``empty_like_all``'s blocks first, and the output is unchanged."""
    import torch

    from toolkit.models.components.loading import load_component
    from toolkit.models.offload import PINNED_ATTR

    kwargs = dict(dtype="float32", device="cpu", onload_device="cpu")
    te = load_component("transformers.T5EncoderModel", "tiny:flux", "text_encoder_2", offload="group:leaf", **kwargs)
    plain = load_component("transformers.T5EncoderModel", "tiny:flux", "text_encoder_2", **kwargs)
    copies = getattr(te, PINNED_ATTR)
    assert set(copies) == {n for n, _ in te.named_parameters()} | {n for n, _ in te.named_buffers()}
    assert len({c.untyped_storage().data_ptr() for c in copies.values()}) == 1  # one block, exact size
    ids = torch.tensor([[5, 6, 7, 1]])
    with torch.inference_mode():
        torch.testing.assert_close(te(ids).last_hidden_state, plain(ids).last_hidden_state)


def test_after_a_failed_call_a_group_offloaded_encoder_offloads_every_group(monkeypatch):
    """A call that raised half-way through an encoder under diffusers' group offloading never ran the hooks
    that offload the running and the prefetched group; after a failed generation every group is offloaded (a
    pointer swap to its host copy on CUDA), once each. The encoder then runs as before."""
    from types import SimpleNamespace

    import torch
    from diffusers.hooks.group_offloading import ModuleGroup

    from toolkit.models.base_model import BaseModel
    from toolkit.models.components.loading import load_component

    kwargs = dict(dtype="float32", device="cpu", onload_device="cpu")
    te = load_component("transformers.T5EncoderModel", "tiny:flux", "text_encoder_2", offload="group:leaf", **kwargs)
    ids = torch.tensor([[5, 6, 7, 1]])
    with torch.inference_mode():
        before = te(ids).last_hidden_state

    def out_of_memory(module, args):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected)")

    handle = te.encoder.block[1].register_forward_pre_hook(out_of_memory)
    with torch.inference_mode(), pytest.raises(torch.cuda.OutOfMemoryError):
        te(ids)
    handle.remove()
    offloaded = []
    original = ModuleGroup.offload_
    monkeypatch.setattr(ModuleGroup, "offload_", lambda group: offloaded.append(group) or original(group))
    holder = SimpleNamespace(parts={"text_encoder_2": te})
    BaseModel.release_scratch(holder)  # generate_media's except, then its finally:
    BaseModel._restore_placement(holder, {"text_encoder_2": "cpu"})
    groups = {
        id(m._diffusers_hook.get_hook("group_offloading").group)
        for m in te.modules()
        if hasattr(m, "_diffusers_hook") and m._diffusers_hook.get_hook("group_offloading")
    }
    assert len(groups) > 2 and {id(g) for g in offloaded} == groups and len(offloaded) == len(groups)
    with torch.inference_mode():
        torch.testing.assert_close(te(ids).last_hidden_state, before)


def test_streaming_holds_at_least_two_of_the_largest_tensor():
    """An encoder's embedding table is streamed as one leaf: the window is never less than two of them."""
    from toolkit.memory_plan import running_bytes

    te = Part("text_encoder", "encoder", gib(15.45), largest=gib(1.09))
    assert running_bytes(te, "stream") == 2 * gib(1.09)
    assert running_bytes(Part("transformer", "denoiser", gib(38), largest=gib(0.07)), "stream") == int(gib(38) * 0.1)
