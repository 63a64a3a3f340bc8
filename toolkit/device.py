"""Device names from configs: ``auto`` picks the GPU when there is one; an unavailable GPU is a clear error."""


def resolve_device(name: str | None) -> str:
    import torch

    name = (name or "auto").strip()
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} was asked for but torch sees no CUDA GPU (use device: cpu or auto)")
    if name == "mps" and not torch.backends.mps.is_available():
        raise ValueError("device 'mps' was asked for but is not available")
    return name


def vram_stats() -> dict | None:
    """What /health reports about the GPU: ``used``/``total`` for the whole card (other processes included),
    ``allocated`` by this process's tensors now, and ``peak_allocated`` since the last ``reset_vram_peak``
    (the engine resets it when a request starts, so it is the peak of the latest request: what a user sizes
    resolution and batch against)."""
    import torch

    if not torch.cuda.is_available():
        return None
    free, total = torch.cuda.mem_get_info()
    return {
        "used": total - free,
        "total": total,
        "allocated": torch.cuda.memory_allocated(),
        "reserved": torch.cuda.memory_reserved(),  # above allocated by what the caching allocator holds unused
        "peak_allocated": max(_request_peak, torch.cuda.max_memory_allocated()),
        "budget": vram_budget("cuda"),
    }


_request_peak = 0  # the request's peak so far, folded in from each stage's (take_stage_peak resets CUDA's)


def reset_vram_peak() -> None:
    global _request_peak
    import torch

    _request_peak = 0
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()


def stage_peak() -> int:
    """The peak allocation of the stage running now (since ``take_stage_peak`` last reset it): what an
    out-of-memory in this stage had allocated at most, not an earlier stage's peak. 0 off CUDA."""
    import torch

    return torch.cuda.max_memory_allocated() if torch.cuda.is_available() else 0


def take_stage_peak() -> int | None:
    """The peak allocation since the last call (or the request's start), for the stage that just ended: what
    the memory plan's working-set estimates are checked against, per stage (encode, sample, decode). The
    request's own peak, which /health reports, keeps the maximum. None off CUDA."""
    global _request_peak
    import torch

    if not torch.cuda.is_available():
        return None
    peak = torch.cuda.max_memory_allocated()
    _request_peak = max(_request_peak, peak)
    torch.cuda.reset_peak_memory_stats()
    return peak


GIB = 1024**3
_budgets: dict[str, int] = {}  # "cuda:<index>" -> bytes this process may reserve on it


def _cuda_key(device: str) -> str:
    import torch

    index = torch.device(device).index
    return f"cuda:{torch.cuda.current_device() if index is None else index}"


def budget_fraction(budget_bytes: int, total_bytes: int) -> float:
    """The share of the card a budget is, for ``torch.cuda.set_per_process_memory_fraction``."""
    if budget_bytes <= 0 or total_bytes <= 0:
        raise ValueError(f"a VRAM budget must be positive (got {budget_bytes} bytes of {total_bytes})")
    return min(1.0, budget_bytes / total_bytes)


def set_vram_budget(device: str, gb: float) -> int | None:
    """``engine.vram_budget_gb``: cap what this process's caching allocator may reserve on ``device``, so the
    engine shares a card with a training job, or behaves as on a smaller card (an allocation past the cap is
    CUDA's own out-of-memory error, as on that card). The CUDA context (~0.5 GB) is not part of the cap, as
    on a real card it is not part of what a model can use either. Returns the cap in bytes; None off CUDA
    or without a budget."""
    if not gb or not str(device).startswith("cuda"):
        return None
    import torch

    key = _cuda_key(device)
    index = int(key.split(":")[1])
    budget = int(gb * GIB)
    torch.cuda.set_per_process_memory_fraction(
        budget_fraction(budget, torch.cuda.get_device_properties(index).total_memory), index
    )
    _budgets[key] = budget
    return budget


def vram_budget(device: str | None) -> int | None:
    if not device or not str(device).startswith("cuda") or not _budgets:
        return None
    return _budgets.get(_cuda_key(device))


def free_within_budget(card_free: int, budget: int | None, reserved: int) -> int:
    """What this process can still allocate: the card's free memory, and never more than its budget leaves."""
    return card_free if budget is None else max(0, min(card_free, budget - reserved))


def is_oom(e: BaseException) -> bool:
    """Out of GPU memory, as torch raises it or as a kernel's own message says it (some report a RuntimeError)."""
    import torch

    return isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower()
