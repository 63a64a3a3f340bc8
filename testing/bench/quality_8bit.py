"""What the 8-bit denoiser costs in pixels, per family: the same seed and prompt at the family's own step count,
with the denoiser in bf16 and quantized as the engine quantizes it (torchao, ``toolkit/models/components/loading.py``:
``float8`` weight-only, ``float8dq`` weights and activations, ``int8`` weight-only where a card has no float8),
each result against the bf16 one in PSNR (dB) and SSIM. These are the figures each arch file gives as its measured
8-bit quality, so the memory plan's choice of 8 bits has a number beside it.

family_sweep.py runs it (``--quality float8,float8dq``) in the full card's engine once that engine's own figures
are kept, on the checkpoint it built. Only the denoiser differs between requests (``quantize`` with
``quantize_te: false``: text encoders stay as they are). The variant ``bf16`` asks for the reference again: equal
files say the run is deterministic, so the other variants' dB are the 8-bit cost alone. Each variant's row is
saved as soon as it is measured. Videos are read back from their file: animated WebP is lossy (quality 80), so a
video's figures include the container's loss of both files, a lower bound of the denoiser's own.
"""

from __future__ import annotations

QUANTIZED = ("float8", "int8", "int4", "8-bit")  # how a plan summary names a quantized component


def variant_model(model: dict, variant: str) -> dict:
    """The model config of one variant: ``bf16`` is the reference's own, any other name the denoiser's qtype."""
    if variant == "bf16":
        return dict(model)
    return model | {"quantize": True, "qtype": variant, "quantize_te": False}


def read_pixels(path: str):
    """An image as (H, W, 3), a video's frames as (F, H, W, 3): float32 in [0, 1], as ``image_quality`` takes them."""
    import numpy as np
    from PIL import Image, ImageSequence

    with Image.open(path) as media:
        frames = [np.asarray(frame.convert("RGB"), dtype=np.float32) / 255 for frame in ImageSequence.Iterator(media)]
    return frames[0] if len(frames) == 1 else np.stack(frames)


def compared(reference, reference_sha: str, row: dict, path: str) -> dict:
    """PSNR and SSIM of one variant's file against the reference; equal files are said to be equal (infinite
    PSNR has no JSON number)."""
    from testing.bench.gpu_machine import image_quality

    if row.get("sha256") == reference_sha:
        return {"identical": True, "psnr_db": None, "ssim": 1.0}
    return {"identical": False} | image_quality(reference, read_pixels(path))


def request(client, body: dict) -> tuple[dict, str | None]:
    """One generation: its figures and the plan it ran on (a reference whose plan quantized is no bf16 reference),
    and the file's path."""
    from testing.bench.budget_probe import timed_request

    got = timed_request(client, body, keep_path=True)
    row = {k: got[k] for k in ("total_s", "sha256", "error", "http_status") if k in got}
    row["step_s"] = (got.get("timings") or {}).get("step_s")
    plan = ((client.health().get("memory") or {}).get("plan") or {}).get("summary")
    row["plan"] = plan
    row["plan_quantized"] = any(word in (plan or "") for word in QUANTIZED)
    return row, got.get("path")


def measure(client, body: dict, variants: list[str], into: dict, save) -> dict:
    """The reference, then each variant, into ``into`` (``save()`` after each); returns ``into``."""
    into["steps"] = body["sample"].get("num_inference_steps")
    into["reference"], path = request(client, body)
    save()
    if path is None:
        return into
    reference = read_pixels(path)
    for variant in variants:
        row, path = request(client, body | {"model": variant_model(body["model"], variant)})
        if path is not None:
            row.update(compared(reference, into["reference"]["sha256"], row, path))
        into[variant] = row
        save()
    return into


def summary(quality: dict) -> str:
    """One cell: each variant's dB and SSIM (a video's against its lossy file), or why it has none."""
    cells = []
    for variant, row in quality.items():
        if not isinstance(row, dict) or variant == "reference":
            continue
        if row.get("identical"):
            cells.append(f"{variant}: identical")
        elif row.get("psnr_db") is not None:
            cells.append(f"{variant}: {row['psnr_db']} dB, SSIM {row['ssim']}")
        else:
            cells.append(f"{variant}: {str(row.get('error'))[:80]}")
    return "; ".join(cells)
