#!/usr/bin/env bash
# The UI's tests: vitest (frame parser, projection, DB and worker units) and Playwright on Debian's chromium
# against the real stack (Next server + the Python engine started from the UI). Installs what it needs:
# npm packages (better-sqlite3 compiles from source) and, as root, the chromium Debian package.
# Usage: scripts/test_ui.sh LOG_DIR   (writes ui-vitest.log and ui-e2e.log there for the summary)
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${1:-$(mktemp -d)}

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = "0" ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
      || echo "could not install chromium with apt-get"
  else
    echo "Playwright needs /usr/bin/chromium: apt-get install chromium"
  fi
fi

bash scripts/ui_deps.sh || { echo "0 passed, 1 failed (npm ci)" > "$logs/ui-vitest.log"; exit 1; }
cd ui

export OMP_NUM_THREADS=1  # the engine the e2e starts runs next to Next, Chromium and the test runner on 2 cores
npx vitest run 2>&1 | tee "$logs/ui-vitest.log"
rc_unit=${PIPESTATUS[0]}
npm run test:e2e 2>&1 | tee "$logs/ui-e2e.log"
rc_e2e=${PIPESTATUS[0]}
[ "$rc_unit" -eq 0 ] && [ "$rc_e2e" -eq 0 ]
