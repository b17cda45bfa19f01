#!/usr/bin/env bash
# Benchmark for one node's mtu.path at scale (issue 37, item 4). Not a test:
# prints a table. bench/scale.sh calls it for its mtu.path rows.
#
# A probing namespace and ONE responder namespace holding N peer addresses,
# both on a Linux bridge at 9000; 10 of the addresses black-holed above 1500
# bytes when asked (an nftables rule in the responder drops larger packets to
# them silently: small probes answer, large ones vanish). For each run:
#   wall_s    the whole spx-doctor process (start, probes, report), median of REPS
#   check_ms  mtu.path's own duration_ms from the report, median
#   echoes    ICMP echo requests the prober's kernel sent (Icmp OutEchos of its
#             namespace, /proc/net/snmp: the oracle, not the doctor's count)
#   frames    frames out of the prober's interface (ARP included)
#   verdicts  what mtu.path concluded (ok / blackhole / anything else)
# Targets (issue 37): 1,000 peers <= 1.5 s when all answer, <= probe timeout
# + 0.5 s with 10 black-holed.
#
# The neighbour table is one for the whole kernel (every namespace's entries,
# every engineer's labs on this machine) and this script never changes its
# thresholds. So:
#   on-link   the N addresses on the bridge's segment: the prober needs N
#             entries (the responder holds a permanent one for the prober,
#             which the kernel does not count). Run only while the host's
#             table has room for N + 64 more (checked first, printed).
#   routed    the same N addresses behind the responder as a router (on its
#             loopback: no module needed): the prober needs 1 entry, the gateway.
#             Same probes, same engine, no N entries.
# 1,000 on-link addresses need 1,001 of the default 1,024 entries shared with
# everyone: not run on the host (this script prints why it skipped). With
# KERNEL_LAB=1 it runs them in the kernel lab instead, where the guest's own
# table is raised (kernel_lab::neigh::bench_mtu_path_toward_1000_on_link_peers,
# under emulation: its wall time is the guest's, its packet counts are real;
# needs SPX_VMLAB_CACHE as the kernel lab does).
#
# Packets go only to addresses inside the namespaces this script creates
# (198.18.0.0/16 on-link, 198.19.0.0/16 routed); every namespace is deleted
# on exit. Needs root, iproute2, nftables, python3.
# Usage: bench/mtu_path_scale.sh [N...]   (default: 100 1000; REPS=5;
# SPX=path uses that binary instead of building target/release/spx-doctor)
set -euo pipefail

[[ $(id -u) -eq 0 ]] || { echo "bench/mtu_path_scale.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip nft python3; do
    command -v "$tool" >/dev/null || { echo "bench/mtu_path_scale.sh: $tool not found" >&2; exit 2; }
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${SPX:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    SPX=$ROOT/target/release/spx-doctor
fi
REPS=${REPS:-5}
SIZES=("$@")
((${#SIZES[@]})) || SIZES=(100 1000)
HOLES=10
PROBE_TIMEOUT=1

P="spxs$$"
WORK=$(mktemp -d)
NAMESPACES=()
cleanup() {
    for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    NAMESPACES=()
}
trap 'cleanup; rm -rf "$WORK"' EXIT

mkns() { ip netns add "$1"; NAMESPACES+=("$1"); ip -n "$1" link set lo up; }

# The kernel's ARP table as ip -s ntable prints it: "entries thresh3 table_fulls".
arp_table() {
    ip -s ntable show name arp_cache | awk '
        /thresh3/ { for (i = 1; i < NF; i++) if ($i == "thresh3") t3 = $(i + 1) }
        /entries/ { for (i = 1; i < NF; i++) if ($i == "entries") e = $(i + 1) }
        /table_fulls/ { for (i = 1; i < NF; i++) if ($i == "table_fulls") f = $(i + 1) }
        END { print e, t3, f }'
}

# addr MODE I: the I-th responder address (0-based).
addr() {
    if [[ $1 == on-link ]]; then echo "198.18.$((1 + $2 / 250)).$((1 + $2 % 250))"
    else echo "198.19.$((1 + $2 / 250)).$((1 + $2 % 250))"; fi
}

# build MODE N: the fabric; sets PEERS_FILE (one address a line) and HOLES_LIST.
build() {
    local mode=$1 n=$2 i
    cleanup
    SW="$P-sw"; SRC="$P-src"; RSP="$P-rsp"
    mkns "$SW"; mkns "$SRC"; mkns "$RSP"
    ip -n "$SW" link add br0 type bridge
    ip -n "$SW" link set br0 mtu 9000 up
    for ns in "$SRC" "$RSP"; do
        ip -n "$ns" link add eth0 type veth peer name "p${ns##*-}" netns "$SW"
        ip -n "$ns" link set eth0 mtu 9000 up
        ip -n "$SW" link set "p${ns##*-}" mtu 9000 master br0 up
    done
    PEERS_FILE=$WORK/peers.$mode.$n
    : >"$PEERS_FILE"
    {
        if [[ $mode == on-link ]]; then
            echo "addr add 198.18.0.1/16 dev eth0"
        else
            echo "addr add 198.18.0.1/24 dev eth0"
            echo "route add 198.19.0.0/16 via 198.18.0.2"
        fi
    } | ip -n "$SRC" -batch -
    {
        if [[ $mode == on-link ]]; then
            for ((i = 0; i < n; i++)); do echo "addr add $(addr "$mode" "$i")/16 dev eth0"; done
        else
            echo "addr add 198.18.0.2/24 dev eth0"
            for ((i = 0; i < n; i++)); do echo "addr add $(addr "$mode" "$i")/32 dev lo"; done
        fi
    } | ip -n "$RSP" -batch -
    for ((i = 0; i < n; i++)); do addr "$mode" "$i" >>"$PEERS_FILE"; done
    # The responder's entry for the prober is permanent: not counted against
    # gc_thresh3, and never the responder's table that drops a reply.
    local mac
    mac=$(ip netns exec "$SRC" cat /sys/class/net/eth0/address)
    ip -n "$RSP" neigh replace 198.18.0.1 lladdr "$mac" dev eth0 nud permanent
    # Black holes, off until asked: the last HOLES addresses.
    HOLES_LIST=$(tail -n "$HOLES" "$PEERS_FILE" | paste -sd, -)
}

holes() { # on|off
    ip netns exec "$RSP" nft delete table inet spxbh 2>/dev/null || true
    if [[ $1 == on ]]; then
        ip netns exec "$RSP" nft -f - <<EOF
table inet spxbh {
    chain input { type filter hook input priority 0; ip daddr { $HOLES_LIST } ip length > 1500 drop; }
}
EOF
    fi
}

counter() { # the prober's Icmp OutEchos and eth0 tx packets
    local echoes frames
    echoes=$(ip netns exec "$SRC" awk '/^Icmp:/ { if (!h) { for (i = 1; i <= NF; i++) col[$i] = i; h = 1 } else print $col["OutEchos"] }' /proc/net/snmp)
    frames=$(ip netns exec "$SRC" cat /sys/class/net/eth0/statistics/tx_packets)
    echo "$echoes $frames"
}

# one run: prints "wall_s check_ms echoes frames verdicts"
one() {
    local args=() p e0 f0 e1 f1 start end out
    while read -r p; do args+=(--peer "$p"); done <"$PEERS_FILE"
    ip -n "$SRC" neigh flush all >/dev/null 2>&1 || true
    read -r e0 f0 <<<"$(counter)"
    out=$WORK/report.json
    start=$(date +%s%N)
    ip netns exec "$SRC" "$SPX" --check mtu.path --mtu 9000 --probe-timeout "${PROBE_TIMEOUT}s" \
        --timeout 30s --format json "${args[@]}" >"$out" 2>/dev/null || true
    end=$(date +%s%N)
    read -r e1 f1 <<<"$(counter)"
    python3 - "$out" "$((end - start))" "$((e1 - e0))" "$((f1 - f0))" <<'PY'
import collections, json, sys
doc = json.load(open(sys.argv[1]))
c = next(c for c in doc["checks"] if c["id"] == "mtu.path")
v = collections.Counter(p["verdict"] for p in c["evidence"]["peers"])
print(f'{int(sys.argv[2]) / 1e9:.3f} {c["duration_ms"]} {sys.argv[3]} {sys.argv[4]} '
      + ",".join(f"{k}={n}" for k, n in sorted(v.items())))
PY
}

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

scenario() { # MODE N HOLES(on|off)
    local rows=() r
    holes "$3"
    for ((r = 0; r < REPS; r++)); do rows+=("$(one)"); done
    local wall ms echoes frames verdicts
    wall=$(printf '%s\n' "${rows[@]}" | awk '{print $1}' | median)
    ms=$(printf '%s\n' "${rows[@]}" | awk '{print $2}' | median)
    echoes=$(printf '%s\n' "${rows[@]}" | awk '{print $3}' | median)
    frames=$(printf '%s\n' "${rows[@]}" | awk '{print $4}' | median)
    verdicts=$(printf '%s\n' "${rows[@]}" | awk '{print $5}' | sort | uniq -c | awk '{printf "%s%s(x%d)", sep, $2, $1; sep=" "}')
    local what="all answer"
    [[ $3 == on ]] && what="$HOLES black-holed"
    printf '%-8s %6s  %-15s %8s %9s %8s %8s  %s\n' "$1" "$2" "$what" "$wall" "$ms" "$echoes" "$frames" "$verdicts"
}

echo "spx: $SPX"
echo "reps: $REPS (medians); probe timeout ${PROBE_TIMEOUT}s; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
read -r entries thresh3 fulls <<<"$(arp_table)"
echo "host ARP table before: entries $entries of gc_thresh3 $thresh3, table_fulls $fulls (whole kernel)"
printf '%-8s %6s  %-15s %8s %9s %8s %8s  %s\n' mode peers scenario wall_s check_ms echoes frames verdicts
for n in "${SIZES[@]}"; do
    for mode in on-link routed; do
        if [[ $mode == on-link ]]; then
            read -r entries thresh3 fulls <<<"$(arp_table)"
            if ((entries + n + 64 > thresh3)); then
                printf '%-8s %6s  skipped: needs %d entries of the host'"'"'s ARP table, which holds %d of %d shared with every lab here (see the kernel lab)\n' \
                    "$mode" "$n" "$((n + 1))" "$entries" "$thresh3"
                continue
            fi
        fi
        build "$mode" "$n"
        scenario "$mode" "$n" off
        scenario "$mode" "$n" on
        if [[ $mode == on-link ]]; then
            read -r entries thresh3 f2 <<<"$(arp_table)"
            echo "         (ARP table now: entries $entries of $thresh3; table_fulls $fulls -> $f2)"
        fi
        cleanup
    done
done
if [[ ${KERNEL_LAB:-0} == 1 ]]; then
    echo "kernel lab: 1000 on-link peers in the guest (TCG), 3 runs:"
    (cd "$ROOT" && cargo test --test tests kernel_lab::neigh::bench_mtu_path_toward_1000_on_link_peers \
        -- --ignored --nocapture 2>&1) | grep -E '^neigh bench|^test result' || true
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
