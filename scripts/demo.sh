#!/usr/bin/env bash
# `make demo`: the Generate page on http://127.0.0.1:8675 with an engine on builtin:shapes (ui/scripts/demo.mjs).
# Builds the UI once (again only when its sources changed since the last build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ui_deps.sh
build=ui/.next/BUILD_ID
if [ ! -f "$build" ] || [ -n "$(find ui/src ui/next.config.ts ui/package-lock.json -newer "$build" -print -quit)" ]; then
  (cd ui && npm run build)
fi
config=$(.venv/bin/python -c "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))" \
  config/examples/inference_engine_demo.yaml)
exec node ui/scripts/demo.mjs "$config"
