#!/usr/bin/env bash
# One GPU session's benchmarks, one after another, in the background of the GPU machine (background.sh starts it):
# each session wrote this loop anew, and one lost two LTX-2 runs to a wheel it forgot to carry. QUEUE is a file
# of lines "NAME SCRIPT ARGS..." (blank lines and # comments skipped); each runs as
#   python3 testing/bench/SCRIPT --out RESULTS/NAME ARGS...
# after the carried wheels are installed once (WHEELS, comma-separated folders: .whl_engine,.whl_av), with the
# checkpoints of the one before deleted (the disk holds one family), and its exit code appended to
# RESULTS/rc.txt, so a cut session keeps every stage that finished. TINY=1 runs the queue on CPU with --tiny.
# SKIP="NAME ..." leaves out stages whose results already came back (a machine taken back mid-queue: start the
# queue again on the fresh one without running what finished). KEEP_MODELS=1 keeps the checkpoints for the next
# stage (a queue of one family: each stage would build the same one again, Flux.1-dev in 23 s); a line "NAME -"
# clears them between two families of such a queue.
#
#   bash testing/bench/background.sh start q /tmp/R -- bash testing/bench/gpu_queue.sh QUEUE /tmp/R .whl_engine,.whl_av
#   TINY=1 bash testing/bench/gpu_queue.sh QUEUE /tmp/R                                     # here: a smoke run
set -uo pipefail
cd "$(dirname "$0")/../.."
queue=$1 results=$2 wheels=${3:-.whl_engine}
mkdir -p "$results"
if [ "${TINY:-0}" = 1 ]; then
  python=${PYTHON:-.venv/bin/python} extra=(--tiny)
else
  python3 -c "import sys; sys.path.insert(0, '.'); from testing.bench.gpu_machine import install_wheels; install_wheels('$wheels')" || exit 1
  export PYTHONPATH=/tmp/aitk_site:$PWD
  python=python3 extra=()
fi
models=${MODELS:-/tmp/aitk_models}
# The loop reads a copy: bash reads its input by byte offset as it goes, and each GPU call lays the working tree
# down again, so a queue file changed meanwhile ran a stage named by half a line, then the first stage again.
snapshot=$(mktemp) && cp "$queue" "$snapshot" || exit 1
# The card's clocks, power and temperature every half second beside the whole queue: a request slower than the one
# before it is either the card (power or heat) or the engine, and only these rows tell which (2026-12-06).
if [ "${TINY:-0}" != 1 ] && command -v nvidia-smi >/dev/null; then
  fields=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu
  nvidia-smi --query-gpu=$fields,clocks_event_reasons.active --format=csv >/dev/null 2>&1 && fields=$fields,clocks_event_reasons.active
  nvidia-smi --query-gpu=$fields --format=csv -lms 500 >"$results/gpu_clocks.csv" 2>&1 &
  sampler=$!
fi
while read -r name script args; do
  case "$name" in "" | "#"*) continue ;; esac
  case " ${SKIP:-} " in *" $name "*) echo "=== $name skipped (SKIP)" && continue ;; esac
  # "NAME -": no script, the checkpoints kept so far go (KEEP_MODELS=1 across families outgrows the disk)
  [ "$script" = "-" ] && echo "=== $name: checkpoints cleared" && rm -rf "${models:?}"/* && continue
  echo "=== $name $(date +%T)"
  # shellcheck disable=SC2086  # ARGS is a list of words on purpose
  "$python" "testing/bench/$script" --out "$results/$name" --models "$models" "${extra[@]}" $args
  echo "$name rc=$? $(date +%T)" >>"$results/rc.txt"
  [ "${KEEP_MODELS:-0}" = 1 ] || rm -rf "${models:?}"/*
  rm -rf /tmp/aitk_sweep
done <"$snapshot"
rm -f "$snapshot"
[ -n "${sampler:-}" ] && kill "$sampler"
echo "queue done"
