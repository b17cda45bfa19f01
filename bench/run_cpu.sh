#!/usr/bin/env bash
# Benchmark (not a test): the CPU of one node's full run, a baseline binary
# against another, alternating so that both see the same load. Runs each as
# `ip netns exec NS BIN --config CFG --format json [ARGS...]` under
# `perf stat -e task-clock` (process start and `ip netns exec` included) and
# reports the mean and median of each, then one `strace -f -c` run of each:
# its syscall count. It builds no lab: NS and CFG are a node of one already
# up (bench/nats.sh keeps one; issue 23 measured its n0: 31 peers, no
# underlay bridge). It sends only what the doctor's run sends inside NS.
# Usage: bench/run_cpu.sh BASELINE_BIN BIN NS CFG [ROUNDS] [-- ARGS...]
set -euo pipefail
(($# >= 4)) || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
BASE=$1 NEW=$2 NS=$3 CFG=$4
shift 4
ROUNDS=12
if (($#)) && [[ $1 != -- ]]; then ROUNDS=$1; shift; fi
(($#)) && [[ $1 == -- ]] && shift
for tool in perf strace ip; do
    command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done
OUT=$(mktemp -d /tmp/spx-run-cpu.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

run() { # label bin: one perf stat'd run, its task-clock (ms) appended to $OUT/label
    perf stat -x, -e task-clock -o "$OUT/stat" \
        ip netns exec "$NS" "$2" --config "$CFG" --format json "${@:3}" >/dev/null || true
    awk -F, '/task-clock/ {print $1}' "$OUT/stat" >>"$OUT/$1"
}

for ((r = 0; r < ROUNDS; r++)); do
    run base "$BASE" "$@"
    run new "$NEW" "$@"
done

stats() { sort -n "$OUT/$1" | awk '{a[NR]=$1; s+=$1} END {printf "%8.1f %8.1f", s/NR, a[int((NR+1)/2)]}'; }
syscalls() {
    strace -f -c -o "$OUT/strace" ip netns exec "$NS" "$1" --config "$CFG" --format json "${@:2}" \
        >/dev/null 2>&1 || true
    awk '$NF == "total" {print $4}' "$OUT/strace"
}

printf '%-10s %8s %8s %9s  %s\n' "" "mean" "median" "syscalls" "(task-clock ms, $ROUNDS alternating rounds)"
printf '%-10s %s %9s  %s\n' baseline "$(stats base)" "$(syscalls "$BASE" "$@")" "$BASE"
printf '%-10s %s %9s  %s\n' this "$(stats new)" "$(syscalls "$NEW" "$@")" "$NEW"
