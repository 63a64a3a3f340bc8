#!/usr/bin/env bash
# The whole test suite: Python (pytest), then the UI (vitest + Playwright on Debian's chromium) when ui/ exists.
# Installs what it needs first. Ends with one line "N passed, N failed, N skipped" summed over every runner
# (skips are counted out loud: a skip that hides a broken install or a vanished family must be seen).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "0 passed, 1 failed, 0 skipped"; exit 1; }

passed=0; failed=0; skipped=0
last() {  # last <log> <word> : the runner's final "N <word>" count
  grep -Eo "([0-9]+) $2" "$1" | tail -1 | grep -Eo '[0-9]+' || true
}
count() {  # count <log> : add a runner's passed / failed / skipped to the totals
  local p f s
  p=$(last "$1" passed); f=$(last "$1" failed); s=$(last "$1" skipped)
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
}
logs=$(mktemp -d)

.venv/bin/python -m pytest -q -p no:cacheprovider 2>&1 | tee "$logs/pytest.log"
rc=${PIPESTATUS[0]}
count "$logs/pytest.log"
[ "$rc" -ne 0 ] && ! grep -Eq '[0-9]+ failed' "$logs/pytest.log" && failed=$((failed + 1))  # crashed runner

if [ -f ui/package.json ] && [ -f scripts/test_ui.sh ]; then
  bash scripts/test_ui.sh "$logs" 2>&1 | tee "$logs/ui.log"
  rc_ui=${PIPESTATUS[0]}
  for f in "$logs"/ui-*.log; do [ -f "$f" ] && count "$f"; done
  [ "$rc_ui" -ne 0 ] && [ "$failed" -eq 0 ] && failed=$((failed + 1))
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
