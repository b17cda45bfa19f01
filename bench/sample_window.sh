#!/usr/bin/env bash
# Benchmark (not a test): the sampling checks share one --sample window.
# Reports, side by side, the whole-process wall time and peak RSS of each
# sampling check alone and of all of them in one run. The baseline is the
# sum of the solo runs: what sampling them one after the other would cost.
# Touches nothing and sends no packets. Usage: bench/sample_window.sh [RUNS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SPX=${SPX:-$ROOT/target/release/spx-doctor}
[[ -x $SPX ]] || (cd "$ROOT" && cargo build --release --quiet)
RUNS=${1:-5}
SAMPLING=(udp.rcvbuf-errors nic.tso cpu.softirq tcp.reordering)
IFACE=$(ip -o route show default 2>/dev/null | awk '{print $5; exit}')
IFACE=${IFACE:-lo}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

measure() { # args: check list -> "median_wall_s peak_rss_kib"
    local walls=() rss=0 out
    for ((i = 0; i < RUNS; i++)); do
        out=$( { /usr/bin/time -f '%e %M' "$SPX" --check "$1" --interface "$IFACE" \
                  --sample 1s --format json >/dev/null; } 2>&1 | tail -1)
        walls+=("${out% *}")
        ((${out#* } > rss)) && rss=${out#* }
    done
    printf '%s %s\n' "$(printf '%s\n' "${walls[@]}" | median)" "$rss"
}

printf '%-32s %12s %14s\n' "run (--sample 1s, median of $RUNS)" "wall (s)" "peak RSS (KiB)"
sum=0
for c in "${SAMPLING[@]}"; do
    read -r wall rss < <(measure "$c")
    sum=$(awk -v a="$sum" -v b="$wall" 'BEGIN {print a + b}')
    printf '%-32s %12s %14s\n' "$c alone" "$wall" "$rss"
done
read -r wall rss < <(measure "$(IFS=,; echo "${SAMPLING[*]}")")
printf '%-32s %12s %14s\n' "all ${#SAMPLING[@]} together" "$wall" "$rss"
printf "%-32s %12.2f\n" "baseline: one after the other" "$sum"
