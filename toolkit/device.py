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
