#!/usr/bin/env bash
# Downloads (here, where PyPI is reachable) the wheels the GPU machine lacks, into .whl_engine/ (git-ignored via
# .git/info/exclude). That machine has Python 3.12, torch 2.11, transformers 5.17, huggingface-hub 1.33, httpx,
# numpy, pillow, safetensors, accelerate, peft; it lacks diffusers, the HTTP stack (prometheus-client for /metrics
# included), torchao and the media libraries (soundfile for wav; PyAV, 36 MB, would not fit the 64 MiB carried with
# the tree: video is written as animated WebP through Pillow). torchsde (and its trampoline) for Stable Audio's
# CosineDPMSolverMultistepScheduler (its build failed without it on the H200). torchmetrics (PSNR, SSIM) and cache-dit
# (a peer) for testing/bench/compile_bench.py; fpng (and its lazy-loader) for PNG stills. ~17 MB in all.
#   bash testing/bench/fetch_gpu_wheels.sh && run: python3 testing/bench/gpu_suite.py --out $OUT --wheels .whl_engine
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx "/.whl_engine/" .git/info/exclude 2>/dev/null || echo "/.whl_engine/" >> .git/info/exclude
mkdir -p .whl_engine
for pkg in diffusers==0.42.1 fastapi==0.165.0 starlette==1.10.0 uvicorn==0.54.0 httptools==0.9.0 python-multipart==0.0.34 \
           pydantic==2.14.4 pydantic-core==2.50.5 annotated-types typing-inspection annotated-doc \
           opentelemetry-api importlib-metadata lazy-importer typing-extensions torchao==0.18.0 \
           soundfile==0.14.0 cffi==2.1.1 pycparser==3.12 torchsde==0.2.6 trampoline==0.1.2 \
           prometheus-client==0.26.0 torchmetrics==1.9.0 lightning-utilities==0.15.3 cache-dit==1.5.3 \
           fpng==0.1.0 lazy-loader==0.6; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl_engine "$pkg"
done
ls .whl_engine
# --av: PyAV (LTX-2's mp4 with audio), 34 MiB, cut into two parts in .whl_av: with the 30 MiB tree one wheel is
# over the 64 MiB a call carries. Each part goes in its own call on the still-warm machine, copied to /tmp/whl_av;
# the bench then takes --wheels .whl_engine,/tmp/whl_av, which joins them (testing/bench/gpu_machine.py).
if [ "${1:-}" = "--av" ]; then
  grep -qx "/.whl_av/" .git/info/exclude || echo "/.whl_av/" >> .git/info/exclude
  rm -rf .whl_av
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl_av av==18.1.0  # what av>=14 is here
  for wheel in .whl_av/*.whl; do split -b 18M "$wheel" "$wheel.part-" && rm "$wheel"; done
  ls -la .whl_av
fi
# --fa4: FlashAttention 4 (engine.attention: fa4; toolkit/models/attention.py) and its CUDA 13 CuTe DSL, unpacked
# for Python 3.12 here, packed with xz and cut into 30 MiB parts in .whl_fa4: the DSL's compiler library alone is
# 92 MB as a wheel, over what one call carries with the tree. Each part goes in its own call on the still-warm
# machine, which copies it to /tmp/aitk_fa4_parts; the last call's bench takes --fa4 /tmp/aitk_fa4_parts, checks
# the sum and unpacks (testing/bench/gpu_machine.py).
if [ "${1:-}" = "--fa4" ]; then
  grep -qx "/.whl_fa4/" .git/info/exclude || echo "/.whl_fa4/" >> .git/info/exclude
  site=$(mktemp -d)
  python3 -m pip install -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
    --target "$site" flash-attn-4==4.0.0b36 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 \
    nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 cuda-bindings==13.5.0 \
    cuda-pathfinder==1.9.1 apache-tvm-ffi==0.1.15.post2 torch-c-dlpack-ext==0.1.5 quack-kernels==0.6.5 \
    einops==0.8.1  # and protobuf, which the GPU machine has (onnx needs it)
  rm -rf "$site"/nvidia_cutlass_dsl/cu13/lib/stubs  # aarch64 and QNX stubs
  rm -rf .whl_fa4 && mkdir -p .whl_fa4
  tar -C "$site" -cf - . | xz -T2 -7 | split -b 30M - .whl_fa4/fa4.tar.xz.
  cat .whl_fa4/fa4.tar.xz.* | sha256sum | cut -d' ' -f1 > .whl_fa4/fa4.sha256
  rm -rf "$site"
  ls -la .whl_fa4
fi
