"""The stream contract every family meets, as helpers the tests and testing/test_inference_engine.py's CLI share:
a request body for a tiny checkpoint (``body_for``), one generation checked frame by frame (``check_arch``), a
control image uploaded as a user would (``upload_test_image``), cancel-then-replay and a swap across families."""

from __future__ import annotations

import os
import time
from pathlib import Path

MEDIA_EXTS = {"image": ("png", "jpg", "webp"), "video": ("mp4", "webp"), "audio": ("wav", "mp3", "flac")}


def body_for(arch: str, steps: int = 3, seed: int = 7, **sample) -> dict:
    from toolkit.models import tiny

    return {
        "model": {"arch": arch, "name_or_path": f"tiny:{arch}", "dtype": "float32"},
        "sample": {
            "prompt": "a red circle on a blue background",
            "num_inference_steps": steps,
            "seed": seed,
            **tiny.sample(arch),
            **sample,
        },
    }


def check_arch(client, arch: str, controls: int | None = None) -> dict:
    """One generation, asserting the stream contract; returns a report row (raises AssertionError on a FAIL).
    ``controls``: control images to upload (default: as many as the family needs; flex2's is optional)."""
    import numpy as np

    from toolkit.media_probe import probe
    from toolkit.models.registry import get_model_class

    body = body_for(arch)
    for i in range(get_model_class(arch).control_images if controls is None else controls):
        body["sample"]["ctrl_img" if i == 0 else f"ctrl_img_{i + 1}"] = upload_test_image(client, seed=i)["id"]
    t0 = time.monotonic()
    frames = list(client.generate(body))
    elapsed = time.monotonic() - t0
    types = [f.type for f in frames]
    assert types[0] == "start" and types[-1] == "end", types
    assert frames[-1].header["ok"] is True, [f.header for f in frames if f.type == "error"]
    seqs = [f.seq for f in frames]
    assert all(b > a for a, b in zip(seqs, seqs[1:])), seqs
    start = frames[0].header
    latents = [f for f in frames if f.type == "latent"]
    assert any(t == "progress" for t in types) and latents
    # "sampling" is announced once, as the denoiser starts (before step 1's progress), after encoding
    # (a heartbeat repeats the current status when a stage goes a second without a frame: a slow CI step)
    stages = [
        (i, f.header["stage"]) for i, f in enumerate(frames) if f.type == "status" and not f.header.get("heartbeat")
    ]
    sampling = [i for i, stage in stages if stage == "sampling"]
    encoding = [i for i, stage in stages if stage == "encoding"]
    assert len(sampling) == 1 and encoding and encoding[-1] < sampling[0] < types.index("progress"), stages
    for f in latents:
        assert f.header["shape"] == start["latent"]["shape"], (f.header["shape"], start["latent"]["shape"])
        assert f.header["layout"] == start["latent"]["layout"] and f.header["dtype"] == "float16"
        assert np.isfinite(f.array().astype("float32")).all()
    [result] = [f.header for f in frames if f.type == "result"]
    kind = get_model_class(arch).modality
    assert result["kind"] == kind == start["output"]["kind"] and result["ext"] in MEDIA_EXTS[kind]
    assert os.path.isfile(result["path"]) and os.path.getsize(result["path"]) > 1024
    assert result["path"].endswith("." + result["ext"]) and probe(result["path"])["kind"] == kind
    return {
        "arch": arch,
        "status": "PASS",
        "seconds": round(elapsed, 2),
        "kind": kind,
        "ext": result["ext"],
        "latent_shape": start["latent"]["shape"],
        "latent_frames": len(latents),
        "path": result["path"],
        "timings": result["timings"],
    }


def upload_test_image(client, seed: int = 0, size=(64, 64)) -> dict:
    """A small coloured gradient as a control image, uploaded through /assets like a user's."""
    import tempfile

    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    pixels = (rng.random((size[1], size[0], 3)) * 255).astype("uint8")
    with tempfile.NamedTemporaryFile(suffix=".png", delete=False) as f:
        Image.fromarray(pixels).save(f, format="PNG")
    try:
        return client.upload_asset(f.name)
    finally:
        os.unlink(f.name)


def cancel_and_replay(client, arch: str = "sd1", steps: int = 40) -> dict:
    """Uncancelled run, a run cancelled mid-way, then the uncancelled run again: the two files are identical."""
    body = body_for(arch, steps=steps, seed=99)
    first = next(f.header for f in client.generate(body) if f.type == "result")
    cancelled_frames = []
    for frame in client.generate(body):
        cancelled_frames.append(frame)
        if frame.type == "progress" and frame.header["step"] == 3:
            client.cancel(frame.request_id)
    errors = [f.header for f in cancelled_frames if f.type == "error"]
    assert errors and errors[0]["code"] == "cancelled", errors
    assert cancelled_frames[-1].type == "end" and cancelled_frames[-1].header["ok"] is False
    last_step = max(f.header["step"] for f in cancelled_frames if f.type == "progress")
    assert last_step < steps, "the cancelled run went to the end"
    replay = next(f.header for f in client.generate(body) if f.type == "result")
    assert Path(first["path"]).read_bytes() == Path(replay["path"]).read_bytes()
    return {"arch": arch, "status": "PASS", "cancelled_at_step": last_step}


def swap_sequence(client, archs: list[str]) -> list[dict]:
    """Requests one after the other; per step the pool's hits/misses and what stayed resident.

    Asserts the pool contract: after each request only its own components are resident (keep_resident_gb 0),
    and repeating the last config is a holder fast path with no loads."""
    rows = []
    for arch in archs:
        before = client.health()
        out = client.generate_wait(body_for(arch))
        assert out["http_status"] == 200, out
        after = client.health()
        delta = {k: after["counters"][k] - before["counters"][k] for k in ("hits", "misses", "evictions")}
        kept = {e["key"] for e in before["pool"]} & {e["key"] for e in after["pool"]}
        stale = [e["key"] for e in after["pool"] if not e["in_use"]]
        assert not stale, f"after {arch}: components of an earlier model stayed resident: {stale}"
        rows.append(
            {
                "arch": arch,
                **delta,
                "shared": sorted(kept),
                "resident": len(after["pool"]),
                "resident_mb": round(after["resident_bytes"] / 2**20, 2),
            }
        )
    before = client.health()["counters"]
    client.generate_wait(body_for(archs[-1], seed=8))
    after = client.health()["counters"]
    assert after["misses"] == before["misses"] and after["holder_reuses"] == before["holder_reuses"] + 1
    return rows
