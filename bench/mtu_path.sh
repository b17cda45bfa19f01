#!/usr/bin/env bash
# Benchmark for mtu.path (issue 3). Not a test: prints a table.
#
# Builds a netns fabric (a Linux bridge "switch" at 9000, a source node and
# N peers; black-holed peers sit behind a 1500 switch port, dead peers ignore
# echo) and measures, side by side, the whole-process wall time and peak RSS
# of:
#   spx      spx-doctor --check mtu.path --mtu 9000 --peer ... (probe timeout 1s)
#   manual   ping -M do -s 8972 -c 3 <peer>, one peer after the other
#   tracepath  tracepath -n <black-holed peer>
# for 4 peers (2 healthy, 1 black hole, 1 dead), 64 peers (60 healthy, 2 black
# holes, 2 dead), and healthy-only fabrics of 4 and 64 peers (spx only).
#
# Packets go only to addresses inside the namespaces this script creates
# (198.18.0.0/15); every namespace is deleted on exit.
#
# Needs: root, iproute2, iputils-ping, iputils-tracepath, time (GNU
# /usr/bin/time). Usage: bench/mtu_path.sh [--quick]   (--quick skips the
# slow manual and tracepath runs for 64 peers; SPX=path uses that binary
# instead of building target/release/spx-doctor). A full run takes about 7 minutes,
# nearly all of it the manual procedure and tracepath.
#
# BASE=path compares two builds instead (e.g. before and after a refactor):
# for each of the four fabrics, REPS (default 9) runs of BASE and of SPX,
# alternating, and the median wall time and peak RSS of each side by side;
# no manual procedure or tracepath. About 2 minutes.
set -euo pipefail

QUICK=0
[[ "${1:-}" == "--quick" ]] && QUICK=1
[[ $(id -u) -eq 0 ]] || { echo "bench/mtu_path.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip ping tracepath /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench/mtu_path.sh: $tool not found (apt-get install iproute2 iputils-ping iputils-tracepath time)" >&2; exit 2; }
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${SPX:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    SPX=$ROOT/target/release/spx-doctor
fi

P="spxb$$"
WORK=$(mktemp -d)
NAMESPACES=()
cleanup() {
    for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
}
trap 'cleanup; rm -rf "$WORK"' EXIT

mkns() {
    ip netns add "$1"
    NAMESPACES+=("$1")
    ip -n "$1" link set lo up
}

# build_fabric HEALTHY HOLES DEAD: sets PEERS (space-separated) and HOLE (one
# black-holed peer, if any). Tears down any previous fabric first.
build_fabric() {
    cleanup
    NAMESPACES=()
    local healthy=$1 holes=$2 dead=$3
    local sw="$P-sw" i=0 kind
    mkns "$sw"
    ip -n "$sw" link add sw type bridge
    ip -n "$sw" link set sw mtu 9000 up
    plug() { # ns port node-mtu port-mtu addr
        ip -n "$1" link add eth0 type veth peer name "$2" netns "$sw"
        ip -n "$1" link set eth0 mtu "$3" up
        ip -n "$sw" link set "$2" mtu "$4" master sw up
        ip -n "$1" addr add "$5/16" dev eth0
    }
    SRC="$P-src"
    mkns "$SRC"
    plug "$SRC" psrc 9000 9000 198.18.0.1
    PEERS=""
    HOLE=""
    local n=0
    local kinds=()
    for ((i = 0; i < healthy; i++)); do kinds+=(h); done
    for ((i = 0; i < holes; i++)); do kinds+=(b); done
    for ((i = 0; i < dead; i++)); do kinds+=(d); done
    for kind in "${kinds[@]}"; do
        n=$((n + 1))
        local ns="$P-n$n" addr="198.18.$((n / 250 + 1)).$((n % 250 + 2))"
        mkns "$ns"
        case $kind in
            h) plug "$ns" "p$n" 9000 9000 "$addr" ;;
            b) plug "$ns" "p$n" 9000 1500 "$addr"; HOLE=${HOLE:-$addr} ;;
            d) plug "$ns" "p$n" 9000 9000 "$addr"
               ip netns exec "$ns" sysctl -qw net.ipv4.icmp_echo_ignore_all=1 ;;
        esac
        PEERS="$PEERS $addr"
    done
    PEERS=${PEERS# }
}

# measure CMD...: prints "wall_s peak_rss_kib" of the whole process tree
# (peak RSS: GNU time's %M, the largest resident set of the process or any
# child it waited for).
measure() {
    local out start end
    out="$WORK/time.out"
    start=$(date +%s%N)
    /usr/bin/time -o "$out" -f '%M' "$@" >/dev/null 2>&1 || true
    end=$(date +%s%N)
    # Wall time to the millisecond (GNU time's %e has 10 ms steps).
    echo "$(awk -v ns=$((end - start)) 'BEGIN{printf "%.3f", ns/1e9}') $(tail -1 "$out")"
}

spx_run() {
    local args=()
    for p in $PEERS; do args+=(--peer "$p"); done
    measure ip netns exec "$SRC" "$SPX" --check mtu.path --mtu 9000 --probe-timeout 1s --format json "${args[@]}"
}

manual_run() {
    local script='for p in "$@"; do ping -n -q -M do -s 8972 -c 3 "$p"; done; true'
    # shellcheck disable=SC2086
    measure ip netns exec "$SRC" bash -c "$script" manual $PEERS
}

tracepath_run() {
    TRACEPATH_OUT="$WORK/tracepath.out"
    measure ip netns exec "$SRC" bash -c 'tracepath -n "$1" >"$2" 2>&1' tracepath "$HOLE" "$TRACEPATH_OUT"
}

tracepath_says() { # what tracepath concluded about the black-holed path
    echo "   tracepath says: $(grep -i 'resume' "$TRACEPATH_OUT" | sed 's/^ *//')"
}

row() { # scenario tool "wall rss"
    read -r wall rss <<<"$3"
    printf '%-34s %-10s %9s %10s\n' "$1" "$2" "$wall" "$(awk -v k="$rss" 'BEGIN{printf "%.1f", k/1024}')"
}

verdicts() { # the per-peer verdict counts of one spx run, as a sanity line
    local args=()
    for p in $PEERS; do args+=(--peer "$p"); done
    ip netns exec "$SRC" "$SPX" --check mtu.path --mtu 9000 --format json "${args[@]}" |
        python3 -c 'import json,sys,collections; d=json.load(sys.stdin); c=d["checks"][0]; print("   spx says:", c["status"], dict(collections.Counter((p["verdict"], p["path_mtu"]) for p in c["evidence"]["peers"])))' || true
}

if [[ -n ${BASE:-} ]]; then
    REPS=${REPS:-9}
    median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
    compare() { # scenario: REPS alternating runs of BASE and SPX, medians
        local bw=() br=() sw=() sr=() w m r after=$SPX
        for ((r = 0; r < REPS; r++)); do
            SPX=$BASE; read -r w m <<<"$(spx_run)"; bw+=("$w"); br+=("$m")
            SPX=$after; read -r w m <<<"$(spx_run)"; sw+=("$w"); sr+=("$m")
        done
        SPX=$after
        printf '%-34s %9s %9s %9s %9s\n' "$1" \
            "$(printf '%s\n' "${bw[@]}" | median)" "$(printf '%s\n' "${br[@]}" | median | awk '{printf "%.1f", $1/1024}')" \
            "$(printf '%s\n' "${sw[@]}" | median)" "$(printf '%s\n' "${sr[@]}" | median | awk '{printf "%.1f", $1/1024}')"
    }
    echo "BASE=$BASE"
    echo "SPX=$SPX"
    echo "medians of $REPS alternating runs each; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-34s %9s %9s %9s %9s\n' "scenario" "base_s" "base_MiB" "spx_s" "spx_MiB"
    build_fabric 2 1 1; compare "4 peers (1 black hole, 1 dead)"
    build_fabric 60 2 2; compare "64 peers (2 black holes, 2 dead)"
    build_fabric 4 0 0; compare "4 healthy peers"
    build_fabric 64 0 0; compare "64 healthy peers"
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi

printf '%-34s %-10s %9s %10s\n' "scenario" "tool" "wall_s" "peak_MiB"
printf '%-34s %-10s %9s %10s\n' "--------" "----" "------" "--------"

build_fabric 2 1 1
row "4 peers (1 black hole, 1 dead)" spx "$(spx_run)"
row "4 peers (1 black hole, 1 dead)" manual "$(manual_run)"
tracepath_run >"$WORK/tp"; row "4 peers (1 black hole, 1 dead)" tracepath "$(cat "$WORK/tp")"; rm -f "$WORK/tp"
verdicts
tracepath_says

build_fabric 60 2 2
row "64 peers (2 black holes, 2 dead)" spx "$(spx_run)"
if [[ $QUICK -eq 0 ]]; then
    row "64 peers (2 black holes, 2 dead)" manual "$(manual_run)"
    tracepath_run >"$WORK/tp"; row "64 peers (2 black holes, 2 dead)" tracepath "$(cat "$WORK/tp")"; rm -f "$WORK/tp"
    tracepath_says
fi
verdicts

build_fabric 4 0 0
row "4 healthy peers" spx "$(spx_run)"
build_fabric 64 0 0
row "64 healthy peers" spx "$(spx_run)"
