#!/usr/bin/env bash
# The UI's npm packages, installed when package-lock.json changed since the last install (better-sqlite3
# compiles from source: a minute or two the first time). Used by scripts/test_ui.sh and scripts/demo.sh.
# npm's "added N packages" goes nowhere, so `make demo` on a fresh clone says no more than its own notes;
# errors still reach stderr.
set -euo pipefail
cd "$(dirname "$0")/../ui"
stamp=node_modules/.aitk-lock
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
  cp package-lock.json "$stamp"
fi
