"""The GPU machine has torch and transformers but not diffusers, the HTTP stack, torchao or soundfile: the
wheels ``testing/bench/fetch_gpu_wheels.sh`` downloads here travel with the tree and are installed there."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def install_wheels(folder: str) -> None:
    """The GPU machine has torch and transformers but not diffusers/fastapi/uvicorn: install the carried wheels."""
    site = "/tmp/aitk_site"
    wheels = glob.glob(os.path.join(folder, "*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--upgrade", "--target", site, *wheels], check=True)
    sys.path.insert(0, site)
    os.environ["PYTHONPATH"] = os.pathsep.join([site, str(ROOT), os.environ.get("PYTHONPATH", "")])
