#!/usr/bin/env bash
# Benchmark (not a test): what site checks (doctor.d) cost.
#
# 1. A node run with 20 site checks of 50 ms each against the same run
#    without them, alternating, median of ROUNDS each: they run beside the
#    built-in checks, each on its own thread, so they should add about one
#    check's 50 ms, not 20 × 50 ms (target: at most 80 ms). Two runs: the
#    default set (its 1 s sample window), and `--check sysctl` (no window:
#    the site checks are the longest thing in it).
# 2. The runner's own cost per plugin (the StrictModes walk, the cgroup,
#    the session, the pipes and bounded read, the kill, the judgement)
#    against a bare fork/exec/wait of /bin/true: the example
#    `site_runner_overhead` (target: under 2 ms).
#
# One node, no peers: it probes no one. Everything lives under
# target/tmp (anything under /tmp is refused: /tmp is world-writable).
# Run as root for the cgroup. Usage: bench/site_checks.sh [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
cargo build --release --quiet
SPX=$ROOT/target/release/spx-doctor
ROUNDS=${1:-15}
mkdir -p target/tmp
dir=$(mktemp -d -p "$ROOT/target/tmp" site-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -m 755 "$dir/with" "$dir/with/doctor.d" "$dir/without" "$dir/bin"
config='node = "bench"
[network]
ipsec_enabled = false
[nodes.bench]
host = "127.0.0.1"
'
printf '%s' "$config" >"$dir/with/spinifex.toml"
printf '%s' "$config" >"$dir/without/spinifex.toml"
printf '#!/bin/sh\nsleep 0.05\necho "OK - slept 50 ms"\n' >"$dir/bin/sleep50"
chmod 755 "$dir/bin/sleep50"
for i in $(seq -w 1 20); do
    cat >"$dir/with/doctor.d/s$i.toml" <<TOML
id = "site.s$i"
title = "sleeps 50 ms"
command = ["$dir/bin/sleep50"]
timeout = "5s"
protocol = "nagios"
explain = "A benchmark's site check: sleeps 50 ms, then OK."
TOML
done
chmod 644 "$dir"/with/doctor.d/*.toml

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
wall_ms() { # config, args... -> wall ms of one run (exit code ignored)
    local cfg=$1 t0 t1
    shift
    t0=$(date +%s%N)
    "$SPX" --config "$cfg" "$@" --format json >/dev/null || true
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
# The with-run's site checks all passed, or the figure means nothing.
passed=$("$SPX" --config "$dir/with/spinifex.toml" --check site --format json |
    grep -o '"code": "site\.s[0-9]*/ok"' | wc -l)
[[ $passed == 20 ]] || { echo "only $passed of 20 site checks passed" >&2; exit 1; }

printf '%-44s %10s %10s %10s\n' "node run (median of $ROUNDS, ms)" "without" "with 20" "added"
for run in "default set" "--check sysctl"; do
    plain=() site=()
    if [[ $run == --check* ]]; then
        plain=(--check sysctl)
        site=(--check sysctl,site)
    fi
    without=() with=()
    for ((r = 0; r < ROUNDS; r++)); do
        without+=("$(wall_ms "$dir/without/spinifex.toml" "${plain[@]}")")
        with+=("$(wall_ms "$dir/with/spinifex.toml" "${site[@]}")")
    done
    a=$(printf '%s\n' "${without[@]}" | median)
    b=$(printf '%s\n' "${with[@]}" | median)
    printf '%-44s %10s %10s %10s\n' "$run" "$a" "$b" "$((b - a))"
done
echo
cargo run --release --quiet -p spx-checks --example site_runner_overhead -- 2000
