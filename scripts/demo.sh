#!/usr/bin/env bash
# `make demo`: the Generate page on http://127.0.0.1:8675 with an engine on builtin:shapes (ui/scripts/demo.mjs).
# Builds the UI once (again only when its sources changed since the last build). Quiet: the build's output goes
# to a log file whose path is printed only if the build fails; Next's telemetry is off.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ui_deps.sh
export NEXT_TELEMETRY_DISABLED=1
export AITK_DEMO_LOG_DIR=${AITK_DEMO_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/aitk-demo-XXXXXX")}
build=ui/.next/BUILD_ID
if [ ! -f "$build" ] || [ -n "$(find ui/src ui/next.config.ts ui/package-lock.json -newer "$build" -print -quit)" ]; then
  echo "Building the UI (a few minutes the first time)…"
  log="$AITK_DEMO_LOG_DIR/build.log"
  if ! (cd ui && npm run build) >"$log" 2>&1; then
    echo "make demo: the UI build failed; its output: $log" >&2
    exit 1
  fi
fi
config=$(.venv/bin/python -c "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))" \
  config/examples/inference_engine_demo.yaml)
exec node ui/scripts/demo.mjs "$config"
