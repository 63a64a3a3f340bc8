"""``engine.attention``: the SDPA kernel order a family's generation runs under. Which kernel is fastest is the GPU
bench's question (testing/bench/compile_bench.py); here: the setting's resolution, that the order really changes
inside a generation's attention calls, and that the engine reports it."""

import contextlib
import os

import pytest
import torch
from torch.nn.attention import SDPBackend

from testing.engine_harness import EngineHarness
from testing.stream_contract import body_for
from toolkit.models import attention
from toolkit.models.attention import (
    FA4_ADAPTER,
    FA4_IMPL,
    attention_kernels,
    check_attention,
    fa4_unavailable,
    flash_impl,
    resolve_attention,
    sdpa_cache_key,
)


def test_resolution_per_device_and_family(monkeypatch):
    monkeypatch.setattr(attention, "MEASURED", {"flux": "cudnn"})
    assert resolve_attention("auto", "flux", "cuda:0") == "cudnn"
    assert resolve_attention("auto", "sdxl", "cuda") is None  # not measured: PyTorch's order
    assert resolve_attention("efficient", "sdxl", "cuda") == "efficient"
    assert resolve_attention("default", "flux", "cuda") is None
    assert resolve_attention("cudnn", "flux", "cpu") is None  # fused GPU kernels only
    assert resolve_attention("fa4", "flux", "cuda") == "fa4"
    monkeypatch.setattr(attention, "MEASURED", {"flux": "fa4"})  # where FA4 is installed, auto takes it
    monkeypatch.setattr(attention, "fa4_unavailable", lambda device: None)
    assert resolve_attention("auto", "flux", "cuda") == "fa4"
    monkeypatch.setattr(attention, "fa4_unavailable", lambda device: "not installed")
    assert resolve_attention("auto", "flux", "cuda") is None  # elsewhere PyTorch's order, not a failed request
    assert resolve_attention("fa4", "flux", "cpu") is None
    with pytest.raises(ValueError, match="engine.attention must be one of auto, default, flash, cudnn, efficient, fa4"):
        resolve_attention("fa3", "flux", "cuda")


def test_the_chosen_kernel_goes_first_and_the_order_is_restored():
    before = torch._C._get_sdp_priority_order()
    with attention_kernels("cudnn"):
        order = torch._C._get_sdp_priority_order()
    assert order[0] == SDPBackend.CUDNN_ATTENTION.value
    assert SDPBackend.MATH.value in order  # a call no fused kernel takes still runs
    assert torch._C._get_sdp_priority_order() == before
    with attention_kernels(None):
        assert torch._C._get_sdp_priority_order() == before


def test_pytorchs_own_default_order_is_settled_before_the_first_order_is_set(monkeypatch, tmp_path):
    """On a Hopper GPU, PyTorch installs its default order (cuDNN first) at the process's first CUDA SDPA call, over
    an order set before it: the engine's first generation under ``flash`` ran cuDNN and compiled it. The engine now
    makes one call first, before it changes the order, once per process, and only where CUDA is."""
    calls = []
    monkeypatch.setattr(attention, "_settled", False)
    order = torch._C._get_sdp_priority_order
    monkeypatch.setattr(attention, "_first_cuda_sdpa_call", lambda device: calls.append((device, order())))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with attention_kernels("flash"):
        pass
    assert calls == []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    before = torch._C._get_sdp_priority_order()
    for first, kernel in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        with attention_kernels(first):
            assert torch._C._get_sdp_priority_order()[0] == kernel.value
    assert calls == [("cuda", before)]  # once, and under the order PyTorch had, not the engine's
    with attention_kernels(None):
        pass
    assert len(calls) == 1
    monkeypatch.setattr(attention, "_settled", False)  # an engine settles it at start-up, on its own GPU
    check_attention("flash", "cpu", str(tmp_path))
    check_attention("flash", "cuda:1", str(tmp_path))
    with attention_kernels("flash"):
        pass
    assert calls[1:] == [("cuda:1", before)]


class Handle:
    """What a flash-attention provider's registration returns; torch calls ``remove`` when it is replaced."""

    def __init__(self, log, name):
        self.log, self.name = log, name
        log.append(f"+{name}")

    def remove(self):
        self.log.append(f"-{self.name}")


@pytest.fixture
def fake_fa4(monkeypatch):
    """torch's real registry, with FA4's registration (which needs the flash-attn-4 package and a Hopper GPU)
    replaced by one that only records; no kernel is swapped, so SDPA on the CPU runs as before."""
    from torch.nn.attention import _registry

    log = []
    monkeypatch.setitem(_registry._FLASH_ATTENTION_IMPLS, FA4_IMPL, lambda: Handle(log, "FA4"))
    monkeypatch.setitem(_registry._FLASH_ATTENTION_IMPLS, "Other", lambda: Handle(log, "Other"))
    yield log
    _registry.restore_flash_attention_impl(_raise_warn=False)


def test_fa4_runs_inside_the_generation_and_the_previous_flash_kernel_comes_back(fake_fa4):
    from torch.nn.attention import activate_flash_attention_impl, current_flash_attention_impl

    assert current_flash_attention_impl() is None
    with attention_kernels("fa4"):
        assert current_flash_attention_impl() == FA4_IMPL
        assert torch._C._get_sdp_priority_order()[0] == SDPBackend.FLASH_ATTENTION.value
        q = torch.randn(1, 2, 8, 16)
        assert torch.nn.functional.scaled_dot_product_attention(q, q, q).shape == q.shape
    assert current_flash_attention_impl() is None and fake_fa4 == ["+FA4", "-FA4"]
    activate_flash_attention_impl("Other")  # another provider the user chose outside the engine
    with attention_kernels("fa4"):
        assert current_flash_attention_impl() == FA4_IMPL
    assert current_flash_attention_impl() == "Other"
    with attention_kernels("cudnn"):  # any other setting leaves the flash kernel alone
        assert current_flash_attention_impl() == "Other"


@pytest.fixture
def flash_attn_4(monkeypatch):
    """The flash-attn-4 package as its releases on the package index (4.0.0b36, b40) shape ``_flash_attn_fwd``:
    five values back. Its kernels need a Hopper GPU; this one adds one, so a call is seen to reach it."""
    import sys
    import types

    from torch.nn.attention import _fa4, _registry

    calls = []

    def forward(q, k, v, **kwargs):
        calls.append(kwargs)
        return q + 1, torch.zeros(q.shape[0], q.shape[2], q.shape[1]), None, None, None

    interface = types.ModuleType("flash_attn.cute.interface")
    interface._flash_attn_fwd, interface._flash_attn_bwd = forward, lambda *a, **k: None
    cute = types.ModuleType("flash_attn.cute")
    cute.interface = interface
    monkeypatch.setitem(sys.modules, "flash_attn", types.ModuleType("flash_attn"))
    monkeypatch.setitem(sys.modules, "flash_attn.cute", cute)
    monkeypatch.setitem(sys.modules, "flash_attn.cute.interface", interface)
    monkeypatch.delitem(sys.modules, FA4_ADAPTER, raising=False)
    _fa4._fa4_import_module.cache_clear()
    monkeypatch.setattr(_fa4, "_FA4_MODULE_PATH", _fa4._FA4_MODULE_PATH)
    monkeypatch.setattr(_fa4, "_fa4_register_kernels", lambda: None)  # no CUDA kernels to put in the dispatcher
    monkeypatch.delitem(_registry._FLASH_ATTENTION_IMPLS, FA4_IMPL, raising=False)
    yield calls
    _registry.restore_flash_attention_impl(_raise_warn=False)
    _fa4._fa4_import_module.cache_clear()


def test_fa4_calls_reach_flash_attn_4_through_the_adapter_not_torchs_stock_module(flash_attn_4):
    """On the H200 every FA4 call failed "too many values to unpack (expected 2)": torch's FA4 forward, the code
    its dispatcher runs, unpacks two values from a function that returns five. Driven here through that code."""
    import inspect

    from torch.nn.attention import _fa4, current_flash_attention_impl

    q = torch.randn(1, 8, 2, 16)
    needed = inspect.signature(_fa4._fa4_run_forward).parameters  # its arguments differ between torch releases
    call = {name: None for name, p in needed.items() if p.default is inspect.Parameter.empty}
    call.update(query=q, key=q, value=q, is_causal=False)

    _fa4.register_flash_attention_fa4()  # torch's own registration, which the engine does not use
    with pytest.raises(ValueError, match="too many values to unpack"):
        _fa4._fa4_run_forward(**call)
    with flash_impl(FA4_IMPL):
        assert current_flash_attention_impl() == FA4_IMPL and _fa4._FA4_MODULE_PATH == FA4_ADAPTER
        out, lse = _fa4._fa4_run_forward(**call)
    assert torch.equal(out, q + 1) and lse.shape == (1, 2, 8) and len(flash_attn_4) == 2


def test_fa4_says_what_is_missing(monkeypatch):
    import importlib

    real_import = importlib.import_module

    def no_fa4(name, *a):
        if name.startswith("flash_attn"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *a)

    monkeypatch.setattr(importlib, "import_module", no_fa4)
    assert "pip install --pre flash-attn-4" in fa4_unavailable("cuda:0")
    monkeypatch.setattr(importlib, "import_module", lambda name, *a: None)  # installed
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 6))
    assert fa4_unavailable("cuda:0") == "FA4 runs on compute capability 9.x or 10.x (Hopper, Blackwell); cuda:0 is 8.6"
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert fa4_unavailable("cuda:0") is None


def test_an_fa4_that_cannot_run_stops_the_engine_at_start_and_its_kernels_are_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.delenv("FLASH_ATTENTION_CUTE_DSL_CACHE_DIR", raising=False)
    monkeypatch.delenv("FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED", raising=False)
    monkeypatch.setattr(attention, "fa4_unavailable", lambda device: "cuda:0 is 8.6")
    with pytest.raises(ValueError, match="engine.attention: fa4 cannot run here: cuda:0 is 8.6"):
        check_attention("fa4", "cuda:0", str(tmp_path / "fa4"))
    assert os.environ["FLASH_ATTENTION_CUTE_DSL_CACHE_DIR"] == str(tmp_path / "fa4")
    assert os.environ["FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED"] == "1"
    monkeypatch.setattr(attention, "fa4_unavailable", lambda device: None)
    check_attention("fa4", "cuda:0", str(tmp_path / "fa4"))
    check_attention("fa4", "cpu", str(tmp_path / "fa4"))  # fused GPU kernels only: nothing to check on a CPU


def test_a_bad_setting_stops_the_engine_at_start(tmp_path):
    with pytest.raises(ValueError, match="engine.attention"):
        EngineHarness(tmp_path, attention="fastest")


def test_the_generations_attention_runs_under_the_resolved_order(tmp_path, tiny_cache, monkeypatch):
    """As on a GPU, where ``auto`` resolves to a measured kernel: every SDPA call of the request sees it first."""
    monkeypatch.setattr(
        "extensions_built_in.inference_engine.resident.resolve_attention", lambda mode, arch, device: "efficient"
    )
    seen = []
    original = torch.nn.functional.scaled_dot_product_attention

    def recording(*args, **kwargs):
        seen.append(torch._C._get_sdp_priority_order()[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording)
    h = EngineHarness(tmp_path, attention="efficient")
    try:
        assert h.client.generate_wait(body_for("flux", steps=2, seed=1))["http_status"] == 200
        assert seen and set(seen) == {SDPBackend.EFFICIENT_ATTENTION.value}
        assert h.client.health()["compile"]["attention"] == {"mode": "efficient", "first": "efficient"}
    finally:
        h.close()


def attention_ops(fn) -> list:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sorted({e.key for e in prof.key_averages() if "scaled_dot_product" in e.key or e.key == "aten::bmm"})


def test_a_graph_compiled_under_one_kernel_order_is_not_served_from_the_cache_under_another(tmp_path, monkeypatch):
    """Real inductor on this CPU with the engine's caches on. Inductor keys a cached graph by its code before
    SDPA becomes one kernel, so a graph compiled under one order came back, with its kernel, under another (on the
    H200 every compiled kernel measured like the first one compiled). Each order now has its own key."""
    import torch._dynamo.config as _dynamo_config
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    from torch.nn.attention import sdpa_kernel

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    q = torch.randn(1, 2, 32, 16)

    def attend(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q * 1.0, k, v)

    def compiled_ops(backend, keyed):
        torch._dynamo.reset()  # a fresh process as far as dynamo knows: only the on-disk caches remain
        fn = torch.compile(attend)
        with sdpa_kernel([backend]), sdpa_cache_key() if keyed else contextlib.nullcontext():
            fn(q, q, q)
            return attention_ops(lambda: fn(q, q, q))

    flash, math = "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::bmm"
    caches = dict(fx_graph_cache=True)
    with (
        inductor_config.patch(**caches),
        functorch_config.patch(enable_autograd_cache=True),
        _dynamo_config.patch(
            suppress_errors=False  # a compile that failed would run eager and show the generic op instead
        ),
    ):
        assert compiled_ops(SDPBackend.FLASH_ATTENTION, keyed=False) == [flash]
        assert compiled_ops(SDPBackend.MATH, keyed=False) == [flash]  # the bug: one key, the first order's kernel
        assert compiled_ops(SDPBackend.FLASH_ATTENTION, keyed=True) == [flash]
        assert compiled_ops(SDPBackend.MATH, keyed=True) == [math]
    tags = []
    for first in ("cudnn", "flash", "cudnn"):
        with attention_kernels(first):
            tags.append(torch.compiler.config.cache_key_tag)
    assert tags[0] != tags[1] and tags[0] == tags[2] and torch.compiler.config.cache_key_tag == ""
