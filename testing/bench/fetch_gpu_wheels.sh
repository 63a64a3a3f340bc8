#!/usr/bin/env bash
# Downloads (here, where PyPI is reachable) the wheels the GPU machine lacks, into .whl_engine/ (git-ignored via
# .git/info/exclude). That machine has Python 3.12, torch 2.11, transformers 5.17, huggingface-hub 1.33, httpx,
# numpy, pillow, safetensors, accelerate, peft; it lacks diffusers, the HTTP stack (prometheus-client for /metrics
# included), torchao and the media libraries (soundfile for wav; PyAV, 36 MB, would not fit the 64 MiB carried with
# the tree: video is written as animated WebP through Pillow). torchsde (and its trampoline) for Stable Audio's
# CosineDPMSolverMultistepScheduler (its build failed without it on the H200). torchmetrics (PSNR, SSIM) and cache-dit
# (a peer) for testing/bench/compile_bench.py. ~17 MB in all.
#   bash testing/bench/fetch_gpu_wheels.sh && run: python3 testing/bench/gpu_suite.py --out $OUT --wheels .whl_engine
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx "/.whl_engine/" .git/info/exclude 2>/dev/null || echo "/.whl_engine/" >> .git/info/exclude
mkdir -p .whl_engine
for pkg in diffusers==0.42.1 fastapi==0.165.0 starlette==1.10.0 uvicorn==0.54.0 httptools==0.9.0 python-multipart==0.0.34 \
           pydantic==2.14.4 pydantic-core==2.50.5 annotated-types typing-inspection annotated-doc \
           opentelemetry-api importlib-metadata lazy-importer typing-extensions torchao==0.18.0 \
           soundfile==0.14.0 cffi==2.1.1 pycparser==3.12 torchsde==0.2.6 trampoline==0.1.2 \
           prometheus-client==0.26.0 torchmetrics==1.9.0 lightning-utilities==0.15.3 cache-dit==1.5.3; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl_engine "$pkg"
done
ls .whl_engine
# --av: PyAV (LTX-2's mp4 with audio) into .whl_av. With the tree and .whl_engine it is over the 64 MiB a call
# carries, so a second call on the still-warm machine carries it (docs/BENCHMARKS.md, fifth sweep).
if [ "${1:-}" = "--av" ]; then
  grep -qx "/.whl_av/" .git/info/exclude || echo "/.whl_av/" >> .git/info/exclude
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl_av av==18.1.0  # what av>=14 is here
  ls .whl_av
fi
