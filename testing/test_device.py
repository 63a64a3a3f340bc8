"""engine.vram_budget_gb: the cap set on CUDA's caching allocator, and the free memory the pool plans with.
This machine has no GPU: torch.cuda's calls are stood in for by recorders, the arithmetic and the wiring are real."""

import pytest

from toolkit import device as device_module
from toolkit.device import GIB, budget_fraction, free_within_budget, set_vram_budget, vram_budget


@pytest.mark.parametrize(
    "budget,total,fraction",
    [(24 * GIB, 141 * GIB, 24 / 141), (16 * GIB, 16 * GIB, 1.0), (200 * GIB, 141 * GIB, 1.0), (1, 4, 0.25)],
)
def test_budget_fraction(budget, total, fraction):
    assert budget_fraction(budget, total) == pytest.approx(fraction)


@pytest.mark.parametrize("budget,total", [(0, 10), (-1, 10), (5, 0)])
def test_budget_fraction_refuses_nonsense(budget, total):
    with pytest.raises(ValueError, match="positive"):
        budget_fraction(budget, total)


@pytest.mark.parametrize(
    "card_free,budget,reserved,free",
    [
        (100 * GIB, None, 50 * GIB, 100 * GIB),  # no budget: the card's free memory
        (100 * GIB, 24 * GIB, 20 * GIB, 4 * GIB),  # the budget binds
        (3 * GIB, 24 * GIB, 10 * GIB, 3 * GIB),  # a neighbour binds
        (100 * GIB, 24 * GIB, 30 * GIB, 0),  # over budget already: nothing, never negative
    ],
)
def test_free_within_budget(card_free, budget, reserved, free):
    assert free_within_budget(card_free, budget, reserved) == free


def test_no_budget_off_cuda_or_when_unset():
    assert set_vram_budget("cpu", 24) is None and set_vram_budget("cuda", 0) is None
    assert vram_budget("cpu") is None


class FakeCuda:
    def __init__(self, total):
        self.total, self.fractions = total, []

    def current_device(self):
        return 0

    def get_device_properties(self, index):
        return type("Props", (), {"total_memory": self.total})()

    def set_per_process_memory_fraction(self, fraction, index):
        self.fractions.append((fraction, index))

    def mem_get_info(self, device=None):
        return 100 * GIB, self.total

    def memory_reserved(self, device=None):
        return 20 * GIB


def test_a_budget_caps_the_allocator_and_the_pool_plans_within_it(monkeypatch):
    import torch

    from toolkit.models.components.pool import free_device_bytes

    fake = FakeCuda(141 * GIB)
    monkeypatch.setattr(torch, "cuda", fake)
    monkeypatch.setattr(device_module, "_budgets", {})
    assert set_vram_budget("cuda", 24) == 24 * GIB
    assert fake.fractions == [(pytest.approx(24 / 141), 0)]
    assert vram_budget("cuda:0") == vram_budget("cuda") == 24 * GIB
    assert free_device_bytes("cuda:0") == 4 * GIB  # 24 budget - 20 reserved, though the card has 100 free
    monkeypatch.setattr(device_module, "_budgets", {})
    assert free_device_bytes("cuda:0") == 100 * GIB  # without a budget: the card's free memory


def test_stage_peaks_fold_into_the_request_peak(monkeypatch):
    """Each stage's peak is read and reset (the memory plan's estimates are checked per stage); /health's
    ``peak_allocated`` is still the whole request's."""
    import torch

    from toolkit import device

    peaks = iter([5 * 2**30, 9 * 2**30, 3 * 2**30])
    current = {"peak": 0}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda *a: current.update(peak=0))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a: current["peak"])
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (10, 100))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a: 1)
    device.reset_vram_peak()
    stages = []
    for _ in range(3):
        current["peak"] = next(peaks)
        stages.append(device.take_stage_peak())
    assert stages == [5 * 2**30, 9 * 2**30, 3 * 2**30] and current["peak"] == 0
    assert device.vram_stats()["peak_allocated"] == 9 * 2**30
    device.reset_vram_peak()
    assert device.vram_stats()["peak_allocated"] == 0
