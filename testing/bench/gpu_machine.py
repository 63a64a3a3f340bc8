"""The GPU machine has torch and transformers but not diffusers, the HTTP stack, torchao or soundfile: the
wheels ``testing/bench/fetch_gpu_wheels.sh`` downloads here travel with the tree and are installed there."""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def install_wheels(folders: str) -> None:
    """The GPU machine has torch and transformers but not diffusers/fastapi/uvicorn: install the carried wheels.
    ``folders`` is comma-separated (``.whl_engine,/tmp/whl_av``); a wheel too large to travel with the tree comes
    in parts (``fetch_gpu_wheels.sh --av``), joined here."""
    site = "/tmp/aitk_site"
    wheels = []
    for folder in folders.split(","):
        wheels += glob.glob(os.path.join(folder, "*.whl")) + join_parts(folder, "/tmp/aitk_joined_wheels")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--upgrade",
            "--target",
            site,
            *wheels,
        ],
        check=True,
    )
    sys.path.insert(0, site)
    os.environ["PYTHONPATH"] = os.pathsep.join([site, str(ROOT), os.environ.get("PYTHONPATH", "")])


def join_parts(folder: str, into: str) -> list:
    """Each ``NAME.whl.part-aa``, ``-ab``, ... set in ``folder`` (``split`` cut the wheel to fit a call) joined as
    ``into/NAME.whl``."""
    joined = []
    for first in sorted(glob.glob(os.path.join(folder, "*.whl.part-aa"))):
        name = os.path.basename(first)[: -len(".part-aa")]
        os.makedirs(into, exist_ok=True)
        with open(os.path.join(into, name), "wb") as out:
            for part in sorted(glob.glob(os.path.join(folder, name + ".part-*"))):
                out.write(Path(part).read_bytes())
        joined.append(os.path.join(into, name))
    return joined


def install_fa4(parts: str, site: str = "/tmp/aitk_fa4_site") -> None:
    """FlashAttention 4 from the parts ``fetch_gpu_wheels.sh --fa4`` cut (carried one call at a time, gathered
    in ``parts``): checked against their sum, unpacked, and put on the path of this process and of the engines it
    starts. The CuTe DSL finds its packages through a ``.pth`` file, which only a site directory reads, not
    PYTHONPATH: its folder goes on the path by name."""
    import hashlib

    pieces = sorted(glob.glob(os.path.join(parts, "fa4.tar.xz.*")))
    archive = b"".join(Path(p).read_bytes() for p in pieces)
    expected = Path(parts, "fa4.sha256").read_text().strip()
    if hashlib.sha256(archive).hexdigest() != expected:
        raise SystemExit(f"--fa4: {len(pieces)} parts in {parts} do not add up to the packed FlashAttention 4")
    os.makedirs(site, exist_ok=True)
    subprocess.run(["tar", "-C", site, "-xJf", "-"], input=archive, check=True)
    paths = [site, os.path.join(site, "nvidia_cutlass_dsl", "dsl_packages")]
    sys.path[:0] = paths
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])


def bench_parser(doc: str, work: str) -> argparse.ArgumentParser:
    """The arguments every GPU benchmark takes: where results go (``$OUT``), the carried wheels, where real-size
    checkpoints and engine job folders live, and ``--tiny`` for the script's CPU smoke run."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--wheels", help="folder of wheels to install first (testing/bench/fetch_gpu_wheels.sh)")
    parser.add_argument("--models", default="/tmp/aitk_models")
    parser.add_argument("--work", default=work, help="engine job folders (outputs, logs)")
    parser.add_argument("--tiny", action="store_true", help="small models on CPU: a smoke test of this script")
    parser.add_argument("--fa4", help="folder of FlashAttention 4's carried parts (fetch_gpu_wheels.sh --fa4)")
    return parser


def parse_bench_args(parser: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    args = parser.parse_args(argv)
    if args.wheels:
        install_wheels(args.wheels)
    if args.fa4:
        install_fa4(args.fa4)
    return args


def micro_bench_setup(args) -> tuple:
    """Device, dtype, results folder and the run's description, as the kernel micro-benchmarks record them (bf16
    on the GPU; float32 on the CPU of a ``--tiny`` smoke run)."""
    import time

    import torch

    device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "dtype": str(dtype),
        "repeats": args.repeats,
        "tiny": args.tiny,
    }
    return device, dtype, out, meta


def image_quality(reference, image) -> dict:
    """PSNR (dB) and SSIM against the lossless image of the same seed (torchmetrics' implementations)."""
    import torch
    from torchmetrics.functional.image import peak_signal_noise_ratio, structural_similarity_index_measure

    def batch(array):  # an image (H, W, 3) or a video's frames (F, H, W, 3) as (N, 3, H, W)
        frames = torch.from_numpy(array).float()
        return (frames[None] if frames.ndim == 3 else frames).permute(0, 3, 1, 2)

    a, b = batch(reference), batch(image)
    return {
        "psnr_db": round(float(peak_signal_noise_ratio(b, a, data_range=1.0)), 2),
        "ssim": round(float(structural_similarity_index_measure(b, a, data_range=1.0)), 4),
    }
