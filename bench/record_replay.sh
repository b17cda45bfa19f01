#!/usr/bin/env bash
# Record and replay (issue 14): what `--record` costs a live run, how large
# the bundle of a full default run is, and how long replaying it takes.
#
# The lab node is bench/soak.sh's, with a guest: a network namespace with a
# bridge, a veth to a peer namespace that answers pings, a paused QEMU guest
# whose virtio NIC is a tap on the node and whose QMP monitor answers, and a
# real ovsdb-server (NB, SB and Open_vSwitch databases with rows) the config
# points at. A full default run there reads every kind of source: procfs and
# sysfs files, rtnetlink, xfrm, SIOCETHTOOL, OVSDB, the QEMU processes and
# their QMP monitors, ICMP probes to the peer, the journal.
#
#   baseline:  spx-doctor --format json --config CFG --ovs-db EP
#   recording: the same with --record FILE
#
# run N times each, alternating (default 9 pairs); reported: the median wall
# time (nanosecond clock) and CPU time (user+sys, GNU time) of each, and
# their difference. Then the bundle of the last recording: its size
# compressed and as JSON lines, its records; and N replays of it (as uid
# 65534, outside the namespace: it reads nothing of the host): median and
# slowest wall time.
#
# Targets (issue 14): recording costs at most 10% of a live run's wall
# time; a full default run's bundle is under 1 MiB; its replay takes under
# 100 ms. The script exits 1 if one is missed.
#
# Packets go only to addresses inside the namespaces this script creates
# (198.18.30.0/24); the namespaces, the guest and the ovsdb-server are
# removed on exit. Needs: root, iproute2, openvswitch-switch, ovn-central,
# qemu-system-x86, util-linux (setpriv), time.
# Usage: bench/record_replay.sh [PAIRS]   (SPX=path uses that binary instead
# of building target/release/spx-doctor).
set -euo pipefail

PAIRS=${1:-9}
[[ $(id -u) -eq 0 ]] || { echo "bench/record_replay.sh: needs root (network namespaces)" >&2; exit 2; }
QEMU=/usr/bin/qemu-system-x86_64
for tool in ip ovsdb-server ovsdb-tool ovn-nbctl ovn-sbctl ovs-vsctl setpriv /usr/bin/time "$QEMU"; do
    command -v "$tool" >/dev/null || { echo "bench/record_replay.sh: $tool not found (apt-get install iproute2 openvswitch-switch ovn-central qemu-system-x86 util-linux time)" >&2; exit 2; }
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${SPX:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    SPX=$ROOT/target/release/spx-doctor
fi

NODE="spxrr$$"
PEER="spxrrp$$"
WORK=$(mktemp -d /tmp/spx-record-replay.XXXXXX)
chmod 755 "$WORK"
cp "$SPX" "$WORK/spx-doctor"
chmod 755 "$WORK/spx-doctor"
SPX=$WORK/spx-doctor
OVSDB_PID=""
QEMU_PID=""
cleanup() {
    set +e
    for pid in $QEMU_PID $OVSDB_PID; do
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    ip netns del "$NODE" 2>/dev/null || true
    ip netns del "$PEER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# --- the lab node -----------------------------------------------------------
# shellcheck source=bench/lab_node.sh
source "$ROOT/bench/lab_node.sh"
lab_node "$NODE" "$PEER" "$WORK"

# A paused guest as Spinifex starts one (no vhost here: the lab may lack
# /dev/vhost-net), its NIC a tap on the node, its QMP monitor on a socket.
ip netns exec "$NODE" "$QEMU" -S -accel tcg -nodefaults -display none -m 64 \
    -name guest=i-bench -smp 2 \
    -netdev tap,id=net0,ifname=tapeni-bench0,script=no,downscript=no,queues=2 \
    -device virtio-net-pci,netdev=net0,mac=02:00:00:00:00:01,host_mtu=1442,rx_queue_size=1024,mq=on,vectors=6 \
    -qmp "unix:$WORK/qmp.sock,server=on,wait=off" >/dev/null 2>"$WORK/qemu.log" &
QEMU_PID=$!
for _ in $(seq 200); do [[ -S $WORK/qmp.sock ]] && break; sleep 0.05; done
[[ -S $WORK/qmp.sock ]] || { echo "bench/record_replay.sh: QEMU did not start: $(cat "$WORK/qemu.log")" >&2; exit 1; }
ip -n "$NODE" link set tapeni-bench0 mtu 1442 up
sleep 1 # let the links settle

# --- live runs, with and without --record -------------------------------------
ns_now() { date +%s%N; }
run_once() { # out-prefix [extra args...]: wall ns and CPU s, appended
    local out=$1
    shift
    local t0 t1
    t0=$(ns_now)
    set +e
    ip netns exec "$NODE" env HOME=/nonexistent /usr/bin/time -f '%U %S' -o "$WORK/time" \
        "$SPX" --format json --config "$CFG" --ovs-db "$EP" "$@" >"$WORK/report.json" 2>"$WORK/stderr"
    local rc=$?
    set -e
    t1=$(ns_now)
    if ((rc > 2)); then
        echo "exit $rc: $(cat "$WORK/stderr")" >&2
        exit 1
    fi
    echo $(((t1 - t0) / 1000)) >>"$out.wall"
    tail -n 1 "$WORK/time" | awk '{printf "%.2f\n", $1 + $2}' >>"$out.cpu"
}
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
maximum() { sort -n "$1" | tail -n 1; }

: >"$WORK/live.wall"; : >"$WORK/live.cpu"; : >"$WORK/rec.wall"; : >"$WORK/rec.cpu"
BUNDLE=$WORK/node.spxb
echo "record/replay: $PAIRS pairs of full default runs on lab node $NODE (a peer, a bridge, a guest with QMP, NB/SB/OVS)"
for i in $(seq "$PAIRS"); do
    run_once "$WORK/live"
    run_once "$WORK/rec" --record "$BUNDLE"
done
live_wall=$(median "$WORK/live.wall")
rec_wall=$(median "$WORK/rec.wall")
live_cpu=$(median "$WORK/live.cpu")
rec_cpu=$(median "$WORK/rec.cpu")
overhead=$(awk -v a="$live_wall" -v b="$rec_wall" 'BEGIN {printf "%.1f", (b - a) * 100 / a}')

# --- the bundle ---------------------------------------------------------------
chmod 644 "$BUNDLE"
size=$(stat -c %s "$BUNDLE")
json=$(gzip -dc "$BUNDLE" | wc -c)
records=$(($(gzip -dc "$BUNDLE" | wc -l) - 1))
checks=$(python3 -c 'import json, sys; print(" ".join(c["id"] + ":" + c["status"] for c in json.load(open(sys.argv[1]))["checks"]))' "$WORK/report.json")

# --- replays ------------------------------------------------------------------
: >"$WORK/replay.wall"
for i in $(seq $((PAIRS * 2))); do
    t0=$(ns_now)
    setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent \
        "$SPX" --replay "$BUNDLE" --format json >"$WORK/replayed.json" 2>"$WORK/stderr" || true
    t1=$(ns_now)
    echo $(((t1 - t0) / 1000)) >>"$WORK/replay.wall"
done
replay_med=$(median "$WORK/replay.wall")
replay_max=$(maximum "$WORK/replay.wall")
same=$(python3 - "$WORK/report.json" "$WORK/replayed.json" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
b.pop("replayed_from", None)
print("identical" if a == b else "DIFFERENT")
EOF
)

ms() { awk -v us="$1" 'BEGIN {printf "%.1f ms", us / 1000}'; }
printf '\n%-34s %14s %14s\n' "" "wall (median)" "CPU (median)"
printf '%-34s %14s %13ss\n' "live run (baseline)" "$(ms "$live_wall")" "$live_cpu"
printf '%-34s %14s %13ss\n' "live run with --record" "$(ms "$rec_wall")" "$rec_cpu"
printf '%-34s %14s\n' "recording overhead (target <= 10%)" "${overhead}%"
printf '\nbundle: %d bytes (%.1f KiB; target < 1 MiB), %d bytes of JSON lines, %d records\n' \
    "$size" "$(awk -v s="$size" 'BEGIN {print s / 1024}')" "$json" "$records"
printf 'replay of it, as uid 65534 (%d runs): median %s, slowest %s (target < 100 ms); report %s to the live one\n' \
    $((PAIRS * 2)) "$(ms "$replay_med")" "$(ms "$replay_max")" "$same"
[[ -n $checks ]] && echo "checks: $checks"

fail=0
awk -v o="$overhead" 'BEGIN {exit !(o <= 10)}' || { echo "MISSED: recording costs ${overhead}% (> 10%)" >&2; fail=1; }
((size < 1048576)) || { echo "MISSED: the bundle is $size bytes (>= 1 MiB)" >&2; fail=1; }
((replay_med < 100000)) || { echo "MISSED: replay median $(ms "$replay_med") (>= 100 ms)" >&2; fail=1; }
[[ $same == identical ]] || { echo "MISSED: the replayed report differs from the live one" >&2; fail=1; }
exit $fail
