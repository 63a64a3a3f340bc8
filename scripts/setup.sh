#!/usr/bin/env bash
# Creates .venv with the CPU build of torch (or CUDA when AITK_TORCH_CUDA=1) and the project's requirements.
# Idempotent: a second run only checks. Used by `make demo`, `make test` and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.aitk-installed
want=$(cat requirements.txt requirements-dev.txt | sha1sum | cut -c1-12)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if [ "${AITK_TORCH_CUDA:-0}" = "1" ]; then
    .venv/bin/python -m pip install -q torch
  else
    # Here 2.13.0 resolves to the local CPU build (0.9 GB venv instead of 5 GB); tests need no GPU.
    .venv/bin/python -m pip install -q "torch==2.13.0"
  fi
fi
.venv/bin/python -m pip install -q -r requirements-dev.txt
echo "$want" > "$stamp"
