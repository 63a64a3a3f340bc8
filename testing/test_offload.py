"""low_vram's moves through host copies (toolkit/models/offload.py). No GPU here: "the device" is the CPU too (a
move there is still a copy, so where a module's tensors are tells host from device), and host copies are
ordinary tensors instead of pinned ones."""

import weakref

import pytest
import torch

from toolkit.models.offload import PINNED_ATTR, _patch_hook, drop_host_copies, move_to_device, move_to_host


class Counter:
    def __init__(self):
        self.made = 0

    def __call__(self, tensors):
        self.made += len(tensors)
        return [torch.empty(t.shape, dtype=t.dtype) for t in tensors]


def module(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))


def test_the_first_move_to_the_host_copies_later_ones_only_point_back():
    m, made = module(), Counter()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    move_to_host(m, made)
    assert made.made == 4  # weight, bias, LayerNorm weight and bias
    copies = getattr(m, PINNED_ATTR)
    assert all(t.data.data_ptr() == copies[n].data_ptr() for n, t in m.named_parameters())
    move_to_device(m, "cpu")
    assert all(t.data.data_ptr() != copies[n].data_ptr() for n, t in m.named_parameters())  # a device copy
    move_to_host(m, made)
    assert made.made == 4  # no new copies: the weights are where they were
    assert all(t.data.data_ptr() == copies[n].data_ptr() for n, t in m.named_parameters())
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())


def test_an_added_tensor_gets_a_copy_of_its_own():
    """A LoRA adapter loaded since the last move adds parameters: only those are copied."""
    m, made = module(), Counter()
    move_to_host(m, made)
    m.register_parameter("adapter", torch.nn.Parameter(torch.ones(2)))
    move_to_host(m, made)
    assert made.made == 5 and torch.equal(getattr(m, PINNED_ATTR)["adapter"], torch.ones(2))


def test_patched_hooks_move_one_model_on_and_the_previous_one_back():
    from accelerate.hooks import CpuOffload, UserCpuOffloadHook

    from toolkit.models.offload import _on_host

    made = Counter()
    a, b = module(1), module(2)
    device = torch.device("cpu")
    hook_a = CpuOffload(execution_device=device)
    user_a = UserCpuOffloadHook(a, hook_a)
    hook_b = CpuOffload(execution_device=device, prev_module_hook=user_a)
    for hook in (hook_a, hook_b):
        _patch_hook(hook, made)
    hook_a.init_hook(a), hook_b.init_hook(b)
    assert _on_host(a) and _on_host(b)
    hook_a.pre_forward(a, torch.ones(1, 4))
    assert not _on_host(a) and _on_host(b)
    args, kwargs = hook_b.pre_forward(b, torch.ones(1, 4), scale=torch.ones(1))
    assert _on_host(a) and not _on_host(b)  # the previous model went back to its host copy
    assert torch.equal(args[0], torch.ones(1, 4)) and torch.equal(kwargs["scale"], torch.ones(1))
    assert made.made == 8  # one copy per tensor of each model, made once
    on_device = next(b.parameters()).data.data_ptr()
    hook_b.pre_forward(b, torch.ones(1, 4))
    assert next(b.parameters()).data.data_ptr() == on_device  # already there: not moved again
    torch.testing.assert_close(b(torch.ones(1, 4)), module(2)(torch.ones(1, 4)))  # the same weights


def test_eviction_drops_the_host_copies():
    m = module()
    move_to_host(m, Counter())
    assert drop_host_copies(m) is not None and not hasattr(m, PINNED_ATTR)
    assert drop_host_copies(m) is None


def test_low_vram_is_applied_only_on_cuda(monkeypatch):
    """On the CPU there is nothing to offload to: the pipeline is left as it is."""
    from toolkit.config_modules import ModelConfig
    from toolkit.models.archs.sd1 import SD1Model

    model = SD1Model("cpu", ModelConfig(name_or_path="tiny:sd1", low_vram=True))
    called = []
    monkeypatch.setattr("toolkit.models.offload.enable_low_vram", lambda *a: called.append(a))
    model.pipeline = object()
    model.plan = model.options_plan()
    assert set(model.plan.placements.values()) == {"gpu"}
    model.apply_offloading()
    assert called == []
    model.device = "cuda:0"
    model.plan = model.options_plan()
    model.apply_offloading()
    assert called and called[0][1] == "cuda:0" and called[0][2] == {"unet", "text_encoder", "vae"}


def test_a_model_on_cuda_0_counts_as_on_the_execution_device_cuda():
    """The engine's device is "cuda"; tensors report "cuda:0". With ``==`` every denoiser call moved the model
    onto the GPU again (found on the H200: 0.52 s/step instead of 0.17)."""
    from toolkit.models.offload import on_device

    assert on_device(torch.device("cuda:0"), torch.device("cuda"))
    assert on_device(torch.device("cuda:1"), "cuda:1") and not on_device(torch.device("cuda:1"), "cuda:0")
    assert not on_device(torch.device("cpu"), "cuda") and on_device(torch.device("cpu"), "cpu")


def test_low_vram_with_quantize_keeps_quantized_components_on_the_gpu(monkeypatch):
    """The issue's crash (low_vram + quantize: torchao tensors moved across devices): a quantized component is
    loaded onto the GPU and left there, a plain one goes to the host to be offloaded."""
    from toolkit.config_modules import ModelConfig
    from toolkit.models import base_model
    from toolkit.models.archs.sd1 import SD1Model

    seen = {}
    monkeypatch.setattr(
        base_model, "load_component", lambda cls, source, subfolder, **kw: seen.setdefault(subfolder, kw) and None
    )
    cfg = ModelConfig(name_or_path="tiny:sd1", low_vram=True, quantize=True, qtype="int8", quantize_te=False)
    model = SD1Model("cuda:0", cfg)
    model.plan = model.options_plan()
    for role in ("unet", "text_encoder", "vae"):
        model.load_component(role, model.components[role])
    assert (seen["unet"]["device"], seen["unet"]["qtype"]) == ("cuda:0", "int8")
    assert seen["text_encoder"]["device"] == seen["vae"]["device"] == "cpu"


def test_quantized_models_are_not_offloaded(tiny_cache):
    """enable_low_vram hooks only models of plain tensors; torchao's (int8 runs on this CPU) stay put."""
    from toolkit.models.components.loading import load_component
    from toolkit.models.components.pool import ComponentPool, active_pool
    from toolkit.models.offload import _plain

    with active_pool(ComponentPool()):
        plain = load_component("diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bfloat16", device="cpu")
        quantized = load_component(
            "diffusers.UNet2DConditionModel", "tiny:sd1", "unet", dtype="bfloat16", device="cpu", qtype="int8"
        )
    assert _plain(plain) and not _plain(quantized)


def test_an_8_bit_model_visits_through_host_copies_of_its_quantized_tensors():
    """torchao's quantized weights cannot be re-pointed with ``.data`` across devices (the `low_vram` +
    `quantize` crash of issue #13); the parameter is rebuilt around host copies of its payload and scales, and
    around device copies on the way back. Same output before and after, copies made once."""
    pytest.importorskip("torchao")
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    from toolkit.models.offload import _on_host

    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64)).to(torch.bfloat16)
    quantize_(m, Int8WeightOnlyConfig())
    quantized = type(m[0].weight)
    assert quantized is not torch.nn.Parameter and quantized is not torch.Tensor
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    before = m(x)
    made = Counter()
    move_to_host(m, made)
    assert made.made == 2 * 3 + 2  # payload, scale, zero point per weight; the two biases
    assert _on_host(m) and type(m[0].weight) is quantized
    with torch.inference_mode():  # the offload hooks move models inside the pipeline's inference mode
        move_to_device(m, "cpu")
        assert not _on_host(m) and type(m[0].weight) is quantized and isinstance(m[0].weight, torch.nn.Parameter)
        assert torch.equal(m(x), before)
        move_to_host(m, made)
        assert made.made == 8 and _on_host(m)  # no new copies
        assert torch.equal(m(x), before)


def test_moving_an_8_bit_block_runs_none_of_torchaos_python_dispatch(monkeypatch):
    """A streamed block moves twice per step, on a step whose CPU is its bottleneck (eager 8-bit layers). Asking
    ``t.data`` of a torchao tensor, or wrapping one in ``nn.Parameter``, is a detach through its Python dispatch:
    84 of them per round trip of a small Qwen-Image block made its move ~10x slower than a bf16 block's (the 24
    GiB runs of 2026-12-02 streamed 8-bit transformers at 1.3-1.4x their resident step, docs/BENCHMARKS.md)."""
    pytest.importorskip("torchao")
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64)).to(torch.bfloat16)
    quantize_(m, Int8WeightOnlyConfig())
    quantized = type(m[0].weight)
    move_to_host(m)  # the host copies are made once: not a move
    calls = Counter()
    for hook in ("__torch_function__", "__torch_dispatch__"):
        original = getattr(quantized, hook)

        def counted(cls, *args, _original=original, **kwargs):
            calls.made += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(quantized, hook, classmethod(counted))
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    with torch.inference_mode():
        for _ in range(3):
            move_to_device(m, "cpu")
            move_to_host(m)
        moves = calls.made
        move_to_device(m, "cpu")
        m(x)  # the layers themselves do go through it: the counter counts
    assert moves == 0
    assert calls.made > 0
    assert isinstance(m[0].weight, torch.nn.Parameter) and not m[0].weight.requires_grad


class Blocks(torch.nn.Module):
    """Four blocks between an embedding and a head; records after each block which blocks are off the host."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(32, 64)
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU()) for _ in range(4)
        )
        self.head = torch.nn.Linear(64, 16)
        self.seen: list = []

    def forward(self, x):
        from toolkit.models.offload import _on_host

        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
            self.seen.append(sorted(j for j, b in enumerate(self.blocks) if not _on_host(b)))
        return self.head(x)


def test_an_8_bit_model_streams_block_by_block_with_the_same_output():
    """8-bit streaming (toolkit/models/streaming.py): each block arrives from its host copies just before it
    runs and leaves right after; at most the running block and the next are off the host; what lies outside
    the block lists comes for the call and leaves with it. Here "the device" is the CPU too: a block's weights
    are host copies or device copies, told apart by address."""
    pytest.importorskip("torchao")
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    from toolkit.models.offload import _on_host
    from toolkit.models.streaming import BlockStream, block_lists

    torch.manual_seed(0)
    model = Blocks().to(torch.bfloat16)
    quantize_(model, Int8WeightOnlyConfig())
    x = torch.randn(3, 32, dtype=torch.bfloat16)
    before = model(x)
    assert [name for name, _ in block_lists(model)] == ["blocks"]
    stream = BlockStream(model, "cpu", allocate=Counter())
    assert all(_on_host(b) for b in model.blocks)
    model.seen.clear()
    with torch.inference_mode():  # as inside a pipeline call, where no parameter can be made
        for _ in range(2):  # a second call starts from block 0 again (prefetched at the end of the first)
            assert torch.equal(model(x), before)
    # after block i has run it is back on its host copies, and only block i+1 (prefetched meanwhile) is not;
    # the last block prefetches block 0 for the next call, which the call's end sends back with the rest
    assert model.seen == [[1], [2], [3], [0]] * 2
    assert all(_on_host(b) for b in model.blocks)  # the call's end sends everything back
    assert type(model.embed.weight) is type(model.blocks[0][0].weight)  # still quantized after the trips
    stream.remove()


def test_a_streamed_models_block_moves_are_timed_per_step():
    """The result's ``stream_ms``: CPU time per step that the streams' hooks took (on a step that waits for its
    CPU, it adds to the step), next to the engine hook's ``hook_ms``; none where nothing streamed."""
    from toolkit.models.streaming import BlockStream
    from toolkit.step_clock import StepClock

    model = Blocks()
    x = torch.randn(3, 32)
    idle = StepClock("cpu")
    model(x)
    idle.hooks += [0.001, 0.003]
    assert idle.timings()["hook_ms"] == 2.0 and idle.timings()["stream_ms"] is None
    stream = BlockStream(model, "cpu", allocate=Counter())
    clock = StepClock("cpu")
    for _ in range(2):
        model(x)
        clock.hooks.append(0.0)
    assert clock.timings()["stream_ms"] > 0
    stream.remove()


@pytest.mark.parametrize("qtype", [None, "int8"], ids=["bf16", "int8"])
def test_the_load_funnel_streams_a_denoiser_and_it_runs_as_the_resident_one(qtype, tiny_cache):
    """``offload="blocks"`` (a plan's ``stream`` or ``quantized_stream`` denoiser): the tiny Flux transformer,
    bf16 or int8, streamed block by block over both its block lists, gives the same output as the same
    transformer left in place."""
    if qtype:
        pytest.importorskip("torchao")
    from toolkit.models.components.loading import load_component
    from toolkit.models.streaming import STREAM_ATTR

    def load(offload):
        return load_component(
            "diffusers.FluxTransformer2DModel",
            "tiny:flux",
            "transformer",
            dtype="bfloat16",
            device="cpu",
            qtype=qtype,
            offload=offload,
            onload_device="cpu",
        )

    resident, streamed = load(None), load("blocks")
    assert resident is not streamed  # the offload is part of the pool's identity
    stream = getattr(streamed, STREAM_ATTR)
    assert len(stream.blocks) == len(streamed.transformer_blocks) + len(streamed.single_transformer_blocks)
    torch.manual_seed(0)
    cfg = resident.config
    inputs = dict(
        hidden_states=torch.randn(1, 16, cfg.in_channels, dtype=torch.bfloat16),
        encoder_hidden_states=torch.randn(1, 8, cfg.joint_attention_dim, dtype=torch.bfloat16),
        pooled_projections=torch.randn(1, cfg.pooled_projection_dim, dtype=torch.bfloat16),
        timestep=torch.tensor([0.5]),
        img_ids=torch.zeros(16, 3),
        txt_ids=torch.zeros(8, 3),
        guidance=torch.tensor([3.5]) if cfg.guidance_embeds else None,
        return_dict=False,
    )
    with torch.inference_mode():
        assert torch.equal(streamed(**inputs)[0], resident(**inputs)[0])


def test_a_partial_move_keeps_the_other_tensors_host_copies():
    """``only`` (8-bit streaming moves a model's non-block tensors for each call): the copies of the tensors it
    leaves out are kept, or their next move would copy them again."""
    m, made = module(), Counter()
    move_to_host(m, made)
    move_to_device(m, "cpu", only=lambda name: name.startswith("0."))
    move_to_host(m, made, only=lambda name: name.startswith("0."))
    assert made.made == 4 and set(getattr(m, PINNED_ATTR)) == {"0.weight", "0.bias", "1.weight", "1.bias"}


@pytest.mark.parametrize("quantized", [False, True], ids=["bf16", "int8"])
def test_a_streamed_model_keeps_the_blocks_its_plan_gives_room_for(quantized, monkeypatch):
    """``BlockStream.keep``: the first blocks that fit the budget stay on the device through every call, the
    others stream as before (the next streamed block prefetched while a kept one runs), the output is the same,
    and ``keep(0)`` gives the memory back. ``kept_bytes`` is what the next plan may count on as the engine's."""
    from toolkit.models import streaming
    from toolkit.models.streaming import BlockStream, kept_bytes, module_bytes

    torch.manual_seed(0)
    model = Blocks().to(torch.bfloat16)
    if quantized:
        pytest.importorskip("torchao")
        from torchao.quantization import Int8WeightOnlyConfig, quantize_

        quantize_(model, Int8WeightOnlyConfig())
    x = torch.randn(3, 32, dtype=torch.bfloat16)
    before = model(x)
    monkeypatch.setattr(streaming, "_live", weakref.WeakSet())  # streams other tests left are collected any time
    stream = BlockStream(model, "cpu", allocate=Counter())
    two = module_bytes(model.blocks[0]) + module_bytes(model.blocks[1])
    assert stream.keep(two + module_bytes(model.blocks[2]) - 1) == two and kept_bytes("cpu") == two
    model.seen.clear()
    with torch.inference_mode():
        for _ in range(2):
            assert torch.equal(model(x), before)
    # blocks 0 and 1 never leave; block 2 arrives while they run, 3 while 2 runs, and 2 again for the next call
    assert model.seen == [[0, 1, 2], [0, 1, 2], [0, 1, 3], [0, 1, 2]] * 2
    assert stream.keep(0) == 0 and kept_bytes("cpu") == 0
    from toolkit.models.offload import _on_host

    assert all(_on_host(b) for b in model.blocks)
    with torch.inference_mode():
        assert torch.equal(model(x), before)  # all four stream again
    stream.keep(10**12)  # everything kept: nothing streams, nothing is prefetched
    model.seen.clear()
    with torch.inference_mode():
        assert torch.equal(model(x), before)
    assert model.seen == [[0, 1, 2, 3]] * 4
    stream.remove()
    assert kept_bytes("cpu") == 0 and all(_on_host(b) for b in model.blocks)


def test_a_streamed_denoisers_embeddings_and_head_stay_until_it_is_released(monkeypatch):
    """``rest_stays`` (a denoiser): what lies outside its block lists is small and runs every step, so it stays
    on the device between calls (counted in ``kept_bytes``) instead of moving twice per step; ``release`` sends
    it back with the kept blocks. An encoder's rest still comes and goes with each call."""
    from toolkit.models import streaming
    from toolkit.models.offload import _on_host
    from toolkit.models.streaming import BlockStream, kept_bytes, module_bytes

    def rest_on_host(m):  # the rest's host copies are the model's own (named "embed.weight", ...)
        copies = getattr(m, PINNED_ATTR)
        return all(
            t.data_ptr() == copies[f"{name}.weight"].data_ptr()
            for name, t in (("embed", m.embed.weight), ("head", m.head.weight))
        )

    torch.manual_seed(0)
    model = Blocks()
    x = torch.randn(3, 32)
    before = model(x)
    monkeypatch.setattr(streaming, "_live", weakref.WeakSet())  # streams other tests left are collected any time
    stream = BlockStream(model, "cpu", allocate=Counter(), rest_stays=True)
    rest = module_bytes(model.embed) + module_bytes(model.head)
    assert not rest_on_host(model) and kept_bytes("cpu") == rest
    with torch.inference_mode():
        assert torch.equal(model(x), before)
    assert not rest_on_host(model) and all(_on_host(b) for b in model.blocks)
    assert stream.keep(module_bytes(model.blocks[0])) > 0 and kept_bytes("cpu") == rest + stream.sizes[0]
    stream.release()
    assert rest_on_host(model) and all(_on_host(b) for b in model.blocks)
    assert kept_bytes("cpu") == 0
    with torch.inference_mode():  # a call after a release brings the rest again
        assert torch.equal(model(x), before)
    encoder = Blocks()
    BlockStream(encoder, "cpu", allocate=Counter())
    with torch.inference_mode():
        encoder(x)
    assert rest_on_host(encoder)


def test_a_tensor_added_to_a_streamed_block_streams_with_it():
    """PEFT adds a LoRA's weights to a block that is waiting on the host: its first move to the device makes
    their host copies (it raised KeyError, the copies being looked up by name)."""
    from toolkit.models.offload import _on_host
    from toolkit.models.streaming import BlockStream

    torch.manual_seed(0)
    model = Blocks()
    x = torch.randn(3, 32)
    stream = BlockStream(model, "cpu", allocate=Counter())
    model.blocks[2].add_module("lora", torch.nn.Linear(64, 64))  # runs after the block's GELU (a Sequential)
    reference = Blocks()
    reference.load_state_dict(model.state_dict(), strict=False)
    reference.blocks[2].add_module("lora", torch.nn.Linear(64, 64))
    reference.blocks[2].lora.load_state_dict(model.blocks[2].lora.state_dict())
    with torch.inference_mode():
        assert torch.allclose(model(x), reference(x)) and torch.allclose(model(x), reference(x))
    assert "2.lora.weight" not in getattr(model.blocks, PINNED_ATTR, {})  # copies live on each block
    assert "lora.weight" in getattr(model.blocks[2], PINNED_ATTR) and _on_host(model.blocks[2])
    stream.remove()


def test_a_kept_block_changed_in_place_keeps_the_change_when_it_goes_back_to_streaming(monkeypatch):
    """A compiled streamed denoiser takes LoRAs into hot-swappable slots: a swap writes the new weights into the
    tensors where they are. A kept block's (and the rest's) live on the device, so when the plan keeps less (or
    the holder is released) they must go back to their host copies with the change, or the next arrival brings
    the previous LoRA back."""
    from toolkit.models import streaming
    from toolkit.models.streaming import BlockStream

    torch.manual_seed(0)
    model = Blocks()
    x = torch.randn(3, 32)
    monkeypatch.setattr(streaming, "_live", weakref.WeakSet())
    stream = BlockStream(model, "cpu", allocate=Counter(), rest_stays=True)
    stream.keep(10**12)  # every block kept
    with torch.no_grad():
        model.blocks[1][0].weight.mul_(-1.0)  # in place, where it is: the device copy
        model.head.bias.add_(1.0)
        changed = model(x)
    stream.keep(0)  # back to streaming: block 1 now arrives from its host copy
    with torch.no_grad():
        assert torch.equal(model(x), changed)
    stream.release()  # the rest goes back too, and returns for the next call
    with torch.no_grad():
        assert torch.equal(model(x), changed)
    stream.remove()


def stream_out_of_memory_at(block: int, monkeypatch):
    """A streamed ``Blocks`` model (its output before streaming, and its stream) whose call ran out of memory
    as ``block`` was about to run (after the stream's hook had brought it and started the next one's copy)."""
    from toolkit.models import streaming
    from toolkit.models.streaming import BlockStream

    torch.manual_seed(0)
    model = Blocks()
    x = torch.randn(3, 32)
    before = model(x)
    monkeypatch.setattr(streaming, "_live", weakref.WeakSet())
    stream = BlockStream(model, "cpu", allocate=Counter())

    def out_of_memory(module, args):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected)")

    handle = model.blocks[block].register_forward_pre_hook(out_of_memory)
    with torch.inference_mode(), pytest.raises(torch.cuda.OutOfMemoryError):
        model(x)
    handle.remove()
    return model, x, before, stream


def test_a_call_that_ran_out_of_memory_leaves_nothing_on_the_device_once_released(monkeypatch):
    """An encoder's call ended in an out-of-memory error half-way (FLUX.2-dev's Mistral at 24 GiB on the H200):
    the hook that sends the running and the prefetched block back never ran. ``release`` (the engine drops the
    failed plan's holder) sends them back, the rest too, so the re-plan's memory is all free; the next call runs
    as before."""
    from toolkit.models.offload import _on_host

    model, x, before, stream = stream_out_of_memory_at(2, monkeypatch)
    assert sorted(stream.on_device) == [2, 3] and not _on_host(model.blocks[2]) and stream.rest_here
    stream.release()
    assert not stream.on_device and all(_on_host(b) for b in model.blocks) and not stream.rest_here
    assert _on_host(model.embed) and _on_host(model.head)
    with torch.inference_mode():
        assert torch.equal(model(x), before)
    stream.remove()


def test_after_a_failed_call_the_holder_ends_a_streamed_modules_call_instead_of_moving_it(monkeypatch):
    """``generate_media`` puts each component back where it was when a call raised (a cancel). It did so with
    ``module.to``: on the H200, FLUX.2-dev's Mistral encoder ran out of memory at its first layer with its
    rest and two blocks on the GPU (its first parameter had been on the host), went ``.to("cpu")`` whole, and the
    stream, which still counted those blocks as on the device, ran the re-plan's first layer with CPU weights.
    A streamed module's call is ended by its stream: what it brought goes back to the host copies. The device
    here is the CPU, so the placement the holder remembers names another one (``.to`` would fail outright)."""
    from types import SimpleNamespace

    from toolkit.models.base_model import BaseModel
    from toolkit.models.offload import _on_host

    model, x, before, stream = stream_out_of_memory_at(0, monkeypatch)
    assert sorted(stream.on_device) == [0, 1] and stream.rest_here
    holder = SimpleNamespace(parts={"text_encoder": model})
    BaseModel.release_scratch(holder)  # generate_media's except, then its finally:
    BaseModel._restore_placement(holder, {"text_encoder": "cuda:0"})
    assert not stream.on_device and not stream.rest_here
    assert all(_on_host(b) for b in model.blocks) and _on_host(model.embed) and _on_host(model.head)
    with torch.inference_mode():
        assert torch.equal(model(x), before)
    stream.remove()
