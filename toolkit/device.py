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
    return {"used": total - free, "total": total, "allocated": torch.cuda.memory_allocated(),
            "peak_allocated": torch.cuda.max_memory_allocated()}


def reset_vram_peak() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
