#!/usr/bin/env bash
# Cost of ipsec.policy and ipsec.errors (issue 22): a full node run must not
# get longer (<= 50 ms added, no window of their own).
#
# The lab node is bench/lab_node.sh's (a network namespace with a bridge, a
# veth to a peer namespace that answers pings, a real ovsdb-server with NB,
# SB and Open_vSwitch rows the config points at), with IPsec wanted: the
# config's ipsec_enabled = true, NB_Global ipsec=true, OVS
# ipsec_encapsulation=true, and in the node's namespace the 4 IPsec
# policies per peer ovs-monitor-ipsec has charon install (out and in on
# udp dport 6081, the pair on sport 6081; templates of reqid 1 and 2), so
# both checks do their whole work: the policy and SA dumps over netlink,
# the peers from OVN, /proc/net/xfrm_stat at both ends of the window. (This
# host's kernel holds no ESP states; the SA dump is read, empty.)
#
#   baseline:   spx-doctor --format json --config CFG --ovs-db EP
#               --skip ipsec.policy,ipsec.errors
#   with them:  the same without --skip
#
# run N times each, alternating (default 9 pairs); reported side by side:
# the median wall time of each (nanosecond clock), their difference, and
# the two checks' own duration_ms inside the run (median). Target: the
# difference is at most 50 ms; the script exits 1 if it is not.
#
# Packets go only to addresses inside the namespaces this script creates
# (198.18.30.0/24); the namespaces and the ovsdb-server are removed on exit.
# Needs: root, iproute2, openvswitch-switch, ovn-central, python3.
# Usage: bench/ipsec_cost.sh [PAIRS]   (SPX=path uses that binary instead of
# building target/release/spx-doctor).
set -euo pipefail

PAIRS=${1:-9}
[[ $(id -u) -eq 0 ]] || { echo "bench/ipsec_cost.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip ovsdb-server ovsdb-tool ovn-nbctl ovn-sbctl ovs-vsctl python3; do
    command -v "$tool" >/dev/null || { echo "bench/ipsec_cost.sh: $tool not found (apt-get install iproute2 openvswitch-switch ovn-central python3)" >&2; exit 2; }
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${SPX:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    SPX=$ROOT/target/release/spx-doctor
fi

NODE="spxic$$"
PEER="spxicp$$"
WORK=$(mktemp -d /tmp/spx-ipsec-cost.XXXXXX)
OVSDB_PID=""
cleanup() {
    set +e
    [[ -n $OVSDB_PID ]] && { kill "$OVSDB_PID" 2>/dev/null; wait "$OVSDB_PID" 2>/dev/null; }
    ip netns del "$NODE" 2>/dev/null || true
    ip netns del "$PEER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=bench/lab_node.sh
source "$ROOT/bench/lab_node.sh"
lab_node "$NODE" "$PEER" "$WORK"
sed -i 's/^ipsec_enabled = false$/ipsec_enabled = true/' "$CFG"
grep -q '^ipsec_enabled = true$' "$CFG" || { echo "bench/ipsec_cost.sh: could not turn IPsec on in $CFG" >&2; exit 1; }
ovn-nbctl --db="$EP" set NB_Global . ipsec=true
ovs-vsctl --db="$EP" --no-wait set Open_vSwitch . other_config:ipsec_encapsulation=true
L=198.18.30.1
R=198.18.30.2
tmpl() { echo "tmpl src 0.0.0.0 dst 0.0.0.0 proto esp reqid $1 mode transport"; }
ip -n "$NODE" xfrm policy add src $L/32 dst $R/32 proto udp dport 6081 dir out priority 366911 $(tmpl 2)
ip -n "$NODE" xfrm policy add src $R/32 dst $L/32 proto udp sport 6081 dir in priority 366911 $(tmpl 2)
ip -n "$NODE" xfrm policy add src $R/32 dst $L/32 proto udp dport 6081 dir in priority 366911 $(tmpl 1)
ip -n "$NODE" xfrm policy add src $L/32 dst $R/32 proto udp sport 6081 dir out priority 366911 $(tmpl 1)
sleep 1 # let the links settle

ns_now() { date +%s%N; }
run_once() { # out-prefix [extra args...]: wall µs appended; the report kept
    local out=$1
    shift
    local t0 t1 rc
    t0=$(ns_now)
    set +e
    ip netns exec "$NODE" env HOME=/nonexistent \
        "$SPX" --format json --config "$CFG" --ovs-db "$EP" "$@" >"$WORK/report.json" 2>"$WORK/stderr"
    rc=$?
    set -e
    t1=$(ns_now)
    if ((rc > 2)); then
        echo "exit $rc: $(cat "$WORK/stderr")" >&2
        exit 1
    fi
    echo $(((t1 - t0) / 1000)) >>"$out.wall"
    cp "$WORK/report.json" "$out.last.json"
}
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: >"$WORK/base.wall"; : >"$WORK/with.wall"; : >"$WORK/policy.ms"; : >"$WORK/errors.ms"
echo "ipsec cost: $PAIRS pairs of full default runs on lab node $NODE (IPsec wanted, 4 policies toward its peer, NB/SB/OVS)"
for i in $(seq "$PAIRS"); do
    run_once "$WORK/base" --skip ipsec.policy,ipsec.errors
    run_once "$WORK/with"
    python3 - "$WORK/with.last.json" >>"$WORK/durations" <<'EOF'
import json, sys
checks = {c["id"]: c for c in json.load(open(sys.argv[1]))["checks"]}
print(checks["ipsec.policy"]["duration_ms"], checks["ipsec.errors"]["duration_ms"],
      checks["ipsec.policy"]["code"], checks["ipsec.errors"]["code"])
EOF
done
awk '{print $1}' "$WORK/durations" >"$WORK/policy.ms"
awk '{print $2}' "$WORK/durations" >"$WORK/errors.ms"
base=$(median "$WORK/base.wall")
with=$(median "$WORK/with.wall")
diff_us=$((with - base))
codes=$(tail -n 1 "$WORK/durations" | awk '{print $3 ", " $4}')

ms() { awk -v us="$1" 'BEGIN {printf "%.1f ms", us / 1000}'; }
printf '\n%-52s %14s\n' "full node run (median of $PAIRS)" "wall"
printf '%-52s %14s\n' "baseline: --skip ipsec.policy,ipsec.errors" "$(ms "$base")"
printf '%-52s %14s\n' "with ipsec.policy and ipsec.errors" "$(ms "$with")"
printf '%-52s %14s\n' "added (target <= 50 ms)" "$(ms "$diff_us")"
printf '%-52s %11s ms\n' "ipsec.policy's own duration_ms (median)" "$(median "$WORK/policy.ms")"
printf '%-52s %11s ms\n' "ipsec.errors's own duration_ms (median: the window)" "$(median "$WORK/errors.ms")"
echo "their verdicts on the lab node: $codes"

((diff_us <= 50000)) || { echo "MISSED: the two checks added $(ms "$diff_us") (> 50 ms)" >&2; exit 1; }
