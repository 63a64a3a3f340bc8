#!/usr/bin/env bash
# A benchmark longer than one GPU call (10 minutes at most) runs in the background of the GPU machine, and each
# later call waits for it a while and brings back what it has written so far. By hand this went wrong once: a
# wait loop plus a final sleep ran past the call's limit, and that call's results never came back.
#
#   bash testing/bench/background.sh start NAME RESULTS -- python3 testing/bench/family_sweep.py --out RESULTS ...
#   bash testing/bench/background.sh wait NAME SECONDS      # returns early when the run ends; copies RESULTS to $OUT
#
# The run's output goes to /tmp/NAME.log (its last lines are printed by each wait); `wait` exits 0 once the run
# has ended (its exit code is in $OUT/NAME.rc), 3 while it still runs, and 4 at once when this machine never
# started it. Carry the wheels in every `wait` call too: each call lays the working tree down again, and a carried
# folder the call does not name was gone when a chained command started later (2026-12-02: its pip install found
# no wheels).
set -euo pipefail

state() { echo "/tmp/aitk_bg_$1"; }

# At most 8 files come back from a call ($OUT, the rc file included): the JSON first (the measurements; markdown
# is rendered from it), then the rest while there is room. On 2026-12-03 a copy of everything (JSON, markdown,
# stack samples of four runs) was cut, and Wan 2.2 14B's finished JSON never came back.
bring_back() {
    local from=$1 to=$2 out=$3 room f
    [ -d "$from" ] || return 0
    # JSON by content, not by name: load_bench.py and grid_bench.py write theirs to the queue entry's bare name, and
    # a grid's came after a run's stack samples and was left behind.
    : >/tmp/aitk_bg_files
    : >/tmp/aitk_bg_rest
    while read -r f; do
        if [ "$(head -c1 "$from/$f")" = "{" ]; then echo "$f" >>/tmp/aitk_bg_files; else echo "$f" >>/tmp/aitk_bg_rest; fi
    done < <(cd "$from" && find . -type f | sort)
    cat /tmp/aitk_bg_rest >>/tmp/aitk_bg_files
    room=$((7 - $(find "$out" -type f | wc -l)))  # one left for NAME.rc
    while read -r f && [ "$room" -gt 0 ]; do
        mkdir -p "$to/$(dirname "$f")" && cp "$from/$f" "$to/$f" && room=$((room - 1))
    done </tmp/aitk_bg_files
}

case "${1:-}" in
start)
    name=$2 results=$3
    shift 3
    [ "${1:-}" = "--" ] && shift
    mkdir -p "$(state "$name")" "$results"
    echo "$results" >"$(state "$name")/results"
    rm -f "$(state "$name")/rc"
    # setsid: the run outlives the call that started it; its exit code is kept for the waits.
    setsid nohup bash -c '"$@"; echo $? >"'"$(state "$name")"'/rc"' _ "$@" >"/tmp/$name.log" 2>&1 </dev/null &
    echo "started $name (log /tmp/$name.log)"
    ;;
wait)
    name=$2 seconds=$3 dir=$(state "$2")
    # No such run here: the held machine was taken back and this call got a fresh one (2026-12-04: a wait sat out
    # its 560 s on a bare machine, a third of the session's device time). Say so at once.
    if [ ! -f "$dir/results" ]; then
        echo "no run named $name on this machine (a fresh machine: the one that ran it was given back)"
        exit 4
    fi
    end=$((SECONDS + seconds))
    while [ ! -f "$dir/rc" ] && [ $SECONDS -lt $end ]; do sleep 2; done
    tail -n 5 "/tmp/$name.log" || true
    out=${OUT:-/tmp/aitk_bg_out}
    mkdir -p "$out/$name"
    bring_back "$(cat "$dir/results")" "$out/$name" "$out"
    if [ -f "$dir/rc" ]; then
        cp "$dir/rc" "$out/$name.rc"
        echo "$name ended: exit code $(cat "$dir/rc")"
        exit 0
    fi
    echo "$name still running"
    exit 3
    ;;
*)
    sed -n '2,10p' "$0"
    exit 2
    ;;
esac
