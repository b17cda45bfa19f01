#!/usr/bin/env bash
# ovn.cluster (issue 22): what asking a real OVN raft adds to a full node
# run. Target: at most 50 ms more wall time and no window of its own.
#
# The lab node is bench/lab_node.sh's (namespace NODE with a bridge and a
# pinging peer, Open_vSwitch with its ovn-encap-ip and system-id), plus a
# third node namespace, and a real three-member clustered NB and SB
# (`ovsdb-tool create-cluster`/`join-cluster`, each member its own
# ovsdb-server, raft on a loopback /24 of this script's own) holding one
# chassis per node. The config names the members by their unix sockets,
# which the namespace sees.
#
#   baseline:  spx-doctor --format json --config CFG --ovs-db EP --skip ovn.cluster
#   with it:   spx-doctor --format json --config CFG --ovs-db EP
#
# run N times each, alternating (default 9 pairs); reported: the median
# wall time (nanosecond clock) and CPU time (user+sys, GNU time) of each and
# their difference, then ovn.cluster's verdict. Beside it, the manual
# runbook the check replaces, timed once per pair: `ovs-appctl
# cluster/status` on each of the six members, `ovn-sbctl list Chassis` and
# `ovs-vsctl get` of the node's identity. The script exits 1 if the
# difference exceeds 50 ms.
#
# Packets go only to loopback and to addresses inside the namespaces this
# script creates (198.18.30.0/24); the namespaces and servers are removed on
# exit. Needs: root, iproute2, openvswitch-switch, ovn-central, time.
# Usage: bench/ovn_cluster.sh [PAIRS]   (SPX=path uses that binary instead of
# building target/release/spx-doctor).
set -euo pipefail

PAIRS=${1:-9}
[[ $(id -u) -eq 0 ]] || { echo "bench/ovn_cluster.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip ovsdb-server ovsdb-tool ovs-appctl ovn-nbctl ovn-sbctl ovs-vsctl /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench/ovn_cluster.sh: $tool not found (apt-get install iproute2 openvswitch-switch ovn-central time)" >&2; exit 2; }
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${SPX:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    SPX=$ROOT/target/release/spx-doctor
fi

NODE="spxoc$$"
PEER="spxocp$$"
THIRD="spxoct$$"
NET="127.$((16 + $$ % 200)).$((1 + ($$ / 200) % 250))"
WORK=$(mktemp -d /tmp/spx-ovn-cluster.XXXXXX)
OVSDB_PID=""
RAFT_PIDS=()
cleanup() {
    set +e
    for pid in "${RAFT_PIDS[@]}" $OVSDB_PID; do
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    for ns in "$NODE" "$PEER" "$THIRD"; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# --- the lab node, and a third node on its bridge ----------------------------
# shellcheck source=bench/lab_node.sh
source "$ROOT/bench/lab_node.sh"
lab_node "$NODE" "$PEER" "$WORK"
ip netns add "$THIRD"
ip -n "$THIRD" link set lo up
ip -n "$NODE" link add eth2 type veth peer name eth2p netns "$THIRD"
ip -n "$NODE" link set eth2 master br-wan
ip -n "$NODE" link set eth2 up
ip -n "$THIRD" link set eth2p up
ip -n "$THIRD" addr add 198.18.30.3/24 dev eth2p
ovs-vsctl --db="$EP" --no-wait set Open_vSwitch . external_ids:system-id=spx1

# --- NB and SB, each a raft of three -------------------------------------------
raft() { # db-name schema client-port raft-port -> sets LIST (unix sockets)
    local name=$1 schema=$2 cport=$3 rport=$4 i d list=()
    for i in 1 2 3; do
        d=$WORK/$name-m$i
        mkdir -p "$d"
        if ((i == 1)); then
            ovsdb-tool create-cluster "$d/db" "$schema" "tcp:$NET.$i:$rport"
        else
            ovsdb-tool join-cluster "$d/db" "$name" "tcp:$NET.$i:$rport" "tcp:$NET.1:$rport"
        fi
        ovsdb-server "$d/db" --remote="punix:$d/sock" --remote="ptcp:$cport:$NET.$i" \
            --unixctl="$d/ctl" --log-file="$d/log" -vconsole:off --no-chdir >/dev/null 2>&1 &
        RAFT_PIDS+=($!)
        list+=("unix:$d/sock")
    done
    LIST=$(IFS=,; echo "${list[*]}")
    for _ in $(seq 300); do
        [[ $(ovsdb-client --timeout=2 query "unix:$WORK/$name-m1/sock" \
            "[\"_Server\",{\"op\":\"select\",\"table\":\"Database\",\"where\":[[\"name\",\"==\",\"$name\"]],\"columns\":[\"connected\"]}]" 2>/dev/null) == *true* ]] \
            && ovs-appctl -t "$WORK/$name-m1/ctl" cluster/status "$name" 2>/dev/null | grep -q "^Leader: [^u]" && return 0
        sleep 0.1
    done
    echo "bench/ovn_cluster.sh: $name raft did not elect" >&2
    return 1
}
raft OVN_Northbound /usr/share/ovn/ovn-nb.ovsschema 6641 6643
NB=$LIST
raft OVN_Southbound /usr/share/ovn/ovn-sb.ovsschema 6642 6644
SB=$LIST
ovn-nbctl --db="$NB" init
for i in 1 2 3; do ovn-sbctl --db="$SB" chassis-add "spx$i" geneve "198.18.30.$i"; done

CFG=$WORK/spinifex.toml
cat >"$CFG" <<CONFIG
node = "spx1"
[network]
ipsec_enabled = false
underlay_mtu = 1500
[nodes.spx1]
host = "198.18.30.1"
[nodes.spx1.vpcd]
ovn_nb_addr = "$NB"
ovn_sb_addr = "$SB"
external_interface = "br-wan"
[nodes.spx2]
host = "198.18.30.2"
[nodes.spx3]
host = "198.18.30.3"
CONFIG
sleep 1 # let the links settle

# --- runs with and without ovn.cluster ------------------------------------------
ns_now() { date +%s%N; }
run_once() { # out-prefix [extra args...]: wall us and CPU s, appended
    local out=$1
    shift
    local t0 t1 rc
    t0=$(ns_now)
    set +e
    ip netns exec "$NODE" env HOME=/nonexistent /usr/bin/time -f '%U %S' -o "$WORK/time" \
        "$SPX" --format json --config "$CFG" --ovs-db "$EP" "$@" >"$WORK/report.json" 2>"$WORK/stderr"
    rc=$?
    set -e
    t1=$(ns_now)
    if ((rc > 2)); then
        echo "exit $rc: $(cat "$WORK/stderr")" >&2
        exit 1
    fi
    echo $(((t1 - t0) / 1000)) >>"$out.wall"
    tail -n 1 "$WORK/time" | awk '{printf "%.3f\n", $1 + $2}' >>"$out.cpu"
}
manual_once() { # the runbook the check replaces, wall us appended
    local t0 t1 d
    t0=$(ns_now)
    for d in "$WORK"/OVN_Northbound-m? "$WORK"/OVN_Southbound-m?; do
        ovs-appctl -t "$d/ctl" cluster/status "$(basename "${d%-m?}")" >/dev/null
    done
    ovn-sbctl --db="$SB" list Chassis >/dev/null
    ovn-sbctl --db="$SB" list Encap >/dev/null
    ovs-vsctl --db="$EP" get Open_vSwitch . external_ids:system-id external_ids:ovn-encap-ip >/dev/null
    t1=$(ns_now)
    echo $(((t1 - t0) / 1000)) >>"$WORK/manual.wall"
}
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: >"$WORK/base.wall"; : >"$WORK/base.cpu"; : >"$WORK/ovn.wall"; : >"$WORK/ovn.cpu"; : >"$WORK/manual.wall"
echo "ovn.cluster: $PAIRS pairs of full default runs on lab node $NODE (3 nodes, NB and SB rafts of 3 on $NET.0/24)"
for _ in $(seq "$PAIRS"); do
    run_once "$WORK/base" --skip ovn.cluster
    run_once "$WORK/ovn"
    manual_once
done
verdict=$(python3 -c 'import json, sys
c = [c for c in json.load(open(sys.argv[1]))["checks"] if c["id"] == "ovn.cluster"][0]
print(c["code"] + ": " + c["summary"])' "$WORK/report.json")
base_wall=$(median "$WORK/base.wall")
ovn_wall=$(median "$WORK/ovn.wall")
added=$((ovn_wall - base_wall))

ms() { awk -v us="$1" 'BEGIN {printf "%.1f ms", us / 1000}'; }
printf '\n%-44s %14s %14s\n' "" "wall (median)" "CPU (median)"
printf '%-44s %14s %13ss\n' "full run, --skip ovn.cluster (baseline)" "$(ms "$base_wall")" "$(median "$WORK/base.cpu")"
printf '%-44s %14s %13ss\n' "full run with ovn.cluster" "$(ms "$ovn_wall")" "$(median "$WORK/ovn.cpu")"
printf '%-44s %14s\n' "ovn.cluster adds (target <= 50 ms)" "$(ms "$added")"
printf '%-44s %14s\n' "manual runbook (6 cluster/status, 2 sbctl, vsctl)" "$(ms "$(median "$WORK/manual.wall")")"
echo "ovn.cluster said: $verdict"
((added <= 50000)) || { echo "MISSED: ovn.cluster adds $(ms "$added") (> 50 ms)" >&2; exit 1; }
