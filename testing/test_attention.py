"""``engine.attention``: the SDPA kernel order a family's generation runs under. Which kernel is fastest is the GPU
bench's question (testing/bench/compile_bench.py); here: the setting's resolution, that the order really changes
inside a generation's attention calls, and that the engine reports it."""

import pytest
import torch
from torch.nn.attention import SDPBackend

from testing.engine_harness import EngineHarness
from testing.test_inference_engine import body_for
from toolkit.models import attention
from toolkit.models.attention import attention_kernels, resolve_attention


def test_resolution_per_device_and_family(monkeypatch):
    monkeypatch.setattr(attention, "MEASURED", {"flux": "cudnn"})
    assert resolve_attention("auto", "flux", "cuda:0") == "cudnn"
    assert resolve_attention("auto", "sdxl", "cuda") is None  # not measured: PyTorch's order
    assert resolve_attention("efficient", "sdxl", "cuda") == "efficient"
    assert resolve_attention("default", "flux", "cuda") is None
    assert resolve_attention("cudnn", "flux", "cpu") is None  # fused GPU kernels only
    with pytest.raises(ValueError, match="engine.attention must be one of auto, default, flash, cudnn, efficient"):
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
