#!/usr/bin/env bash
# Benchmark for the agent's periodic runs and `spx-doctor watch` (issue 24).
# Not a test: prints a table.
#
# On the cluster lab of bench/cluster.sh (bench/cluster_lab.sh, no black
# hole to begin with) with the bus of bench/nats.sh (bench/bus_lab.sh) and
# `spx-doctor agent --interval I` on every node:
#
# 1. Detection latency against the interval, at 16 and 64 nodes: with
#    `spx-doctor watch --format json` running on n0, the last node's
#    underlay switch port drops to 1500 (its jumbo frames black-holed) at
#    T; the latency is when watch prints the first mtu.path/black-hole
#    transition, less T. The port is mended and the same is measured for
#    mtu.path/ok. ROUNDS rounds (default 3) of each; the baseline is the
#    interval itself: a fault shows within one interval + one run. The
#    faults are injected only once the lab is healthy (cluster.path-matrix
#    ok in `watch --once`).
# 2. KV bytes per node per revision: the bucket's stream (nats-server's
#    monitoring, /jsz) bytes / messages, and the messages held (bounded by
#    5 revisions per node).
# 3. An agent at the default --interval 60s for SOAK seconds (default 600)
#    on the 16-node lab: its RSS (VmRSS) after its first run and every
#    minute, and the CPU it used (utime + stime). Targets: RSS flat within
#    1 MiB, mean CPU under 1% of a core.
#
# Packets go only to addresses inside the namespaces this script creates;
# every namespace, process and file is removed on exit.
#
# Needs: root, iproute2, openssh-server, nats-server, openssl, time,
# python3. Usage: bench/watch.sh   (SPX=path uses that binary; SIZES="16
# 64", INTERVAL=5, ROUNDS=3, SOAK=600 change it; PHASES="latency soak"
# runs either). Takes about 15 minutes.
set -euo pipefail

RUNS=1
SIZES=${SIZES:-16 64}
INTERVAL=${INTERVAL:-5}
ROUNDS=${ROUNDS:-3}
SOAK=${SOAK:-600}
PHASES=${PHASES:-latency soak}
[[ $(id -u) -eq 0 ]] || { echo "bench/watch.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip /usr/sbin/sshd ssh-keygen python3 nats-server openssl; do
    command -v "$tool" >/dev/null || { echo "bench/watch.sh: $tool not found (apt-get install iproute2 openssh-server nats-server openssl python3)" >&2; exit 2; }
done

# shellcheck source=bench/cluster_lab.sh
source "$(dirname "$0")/cluster_lab.sh"
# shellcheck source=bench/bus_lab.sh
source "$(dirname "$0")/bus_lab.sh"

mib() { awk -v k="$1" 'BEGIN{printf "%.2f", k/1024}'; }
now_ns() { date +%s%N; }

# wait_line FILE FROM_LINE PATTERN TIMEOUT_S: the time (ns) the first line
# after FROM_LINE matching PATTERN appeared (polled every 20 ms), or "".
wait_line() {
    local file=$1 from=$2 pattern=$3 limit=$4 t0
    t0=$(now_ns)
    while (($(now_ns) - t0 < limit * 1000000000)); do
        if tail -n +"$((from + 1))" "$file" | grep -q -- "$pattern"; then now_ns; return; fi
        sleep 0.02
    done
    echo ""
}

# jsz: "messages bytes" of the bucket's stream.
jsz() {
    ip netns exec "$P-bus" python3 -c '
import json, urllib.request
d = json.load(urllib.request.urlopen("http://127.0.0.1:8222/jsz?streams=1"))
for a in d.get("account_details", []):
    for s in a.get("stream_detail", []):
        if s["name"] == "KV_spx-doctor":
            print(s["state"]["messages"], s["state"]["bytes"])'
}

if [[ $PHASES == *latency* ]]; then
printf '%-10s %9s %8s %14s %14s %14s %16s\n' "lab" "interval" "rounds" "fault_med_s" "fault_max_s" "mended_med_s" "KV B/node/rev"
printf '%-10s %9s %8s %14s %14s %14s %16s\n' "---" "--------" "------" "-----------" "-----------" "------------" "-------------"
for n in $SIZES; do
    build_lab "$n" 0
    AGENT_ARGS=(--interval "${INTERVAL}s")
    add_bus "$n"
    last=$((n - 1))
    out="$WORK/watch_$n.jsonl"
    : >"$out"
    # Every node's first report in the bucket before anything is measured.
    for _ in $(seq 600); do
        ip netns exec "$P-n0" "$SPX" watch --once --format json --config "$(echo "/etc/netns/$P-n0/spinifex/spinifex.toml")" >"$WORK/once.json" 2>/dev/null || true
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if all(x["status"]=="ok" for x in d["nodes"]) else 1)' "$WORK/once.json" 2>/dev/null && break
        sleep 0.5
    done
    # A healthy start, or the latencies mean nothing: every node's mtu.path
    # proves its peers (at the next round of runs if the first was cut).
    for _ in $(seq $((INTERVAL * 3))); do
        ip netns exec "$P-n0" "$SPX" watch --once --format json --config "/etc/netns/$P-n0/spinifex/spinifex.toml" >"$WORK/once.json" 2>/dev/null || true
        healthy=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(next(c["code"] for c in d["checks"] if c["id"]=="cluster.path-matrix"))' "$WORK/once.json" 2>/dev/null || echo "?")
        [[ $healthy == cluster.path-matrix/ok ]] && break
        sleep 1
    done
    [[ $healthy == cluster.path-matrix/ok ]] || { echo "bench/watch.sh: the $n-node lab did not start healthy ($healthy)" >&2; exit 1; }
    ip netns exec "$P-n0" "$SPX" watch --format json --config "/etc/netns/$P-n0/spinifex/spinifex.toml" >"$out" 2>/dev/null &
    EXTRA_PIDS+=("$!")
    sleep $((INTERVAL + 2))
    faults=() mends=()
    for ((r = 0; r < ROUNDS; r++)); do
        from=$(wc -l <"$out"); t=$(now_ns)
        ip -n "$P-u" link set "u$last" mtu 1500
        seen=$(wait_line "$out" "$from" '"code_after":"mtu.path/black-hole"' $((INTERVAL * 3 + 20)))
        [[ -n $seen ]] && faults+=("$(awk -v a="$t" -v b="$seen" 'BEGIN{printf "%.2f", (b-a)/1e9}')")
        sleep 1
        from=$(wc -l <"$out"); t=$(now_ns)
        ip -n "$P-u" link set "u$last" mtu 9000
        seen=$(wait_line "$out" "$from" '"code_before":"mtu.path/black-hole","code_after":"mtu.path/ok"' $((INTERVAL * 3 + 20)))
        [[ -n $seen ]] && mends+=("$(awk -v a="$t" -v b="$seen" 'BEGIN{printf "%.2f", (b-a)/1e9}')")
        sleep 1
    done
    med='{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "none"}'
    max='{if ($1 > m) m = $1} END {if (NR) print m; else print "none"}'
    read -r msgs bytes <<<"$(jsz)"
    printf '%-10s %9s %8s %14s %14s %14s %16s\n' "$n nodes" "${INTERVAL}s" "${#faults[@]}/${ROUNDS}" \
        "$(printf '%s\n' "${faults[@]}" | sort -n | awk "$med")" \
        "$(printf '%s\n' "${faults[@]}" | sort -n | awk "$max")" \
        "$(printf '%s\n' "${mends[@]}" | sort -n | awk "$med")" \
        "$((bytes / (msgs > 0 ? msgs : 1))) ($msgs held)"
    echo "  (the kernel's neighbour table was full $(neigh_overflows) times in the $n-node lab: any but 0 would make the figures the lab's, not the doctor's)"
done
echo "baseline: the interval (${INTERVAL}s); a fault shows within one interval + one run (target: interval + 2 s = $((INTERVAL + 2)) s); the bucket holds at most 5 revisions per node"
echo
fi
[[ $PHASES == *soak* ]] || exit 0

# 3. The default interval, 10 minutes.
build_lab 16 0
AGENT_ARGS=(--interval 60s)
add_bus 16
pid=${AGENT_PIDS[1]}
hz=$(getconf CLK_TCK)
for _ in $(seq 300); do grep -q "run 1 (periodic)" "$WORK/agent_1.log" && break; sleep 0.1; done
sleep 2
rss0=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
t0=$(now_ns)
samples=("$rss0")
for ((s = 60; s <= SOAK; s += 60)); do
    sleep 60
    samples+=("$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")")
done
cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
t1=$(now_ns)
lo=$(printf '%s\n' "${samples[@]}" | sort -n | head -1)
hi=$(printf '%s\n' "${samples[@]}" | sort -n | tail -1)
runs=$(grep -c "(periodic)" "$WORK/agent_1.log" || true)
echo "agent n1 of the 16-node lab, --interval 60s, ${SOAK} s ($runs periodic runs):"
echo "  RSS after its first run $(mib "$rss0") MiB; each minute: $(for k in "${samples[@]}"; do printf '%s ' "$(mib "$k")"; done)MiB"
echo "  RSS spread $(mib $((hi - lo))) MiB (target: within 1 MiB)"
echo "  CPU $(awk -v a="$cpu0" -v b="$cpu1" -v hz="$hz" -v ns=$((t1 - t0)) 'BEGIN{printf "%.3f", (b - a) / hz / (ns / 1e9) * 100}')% of a core, mean (target: under 1%)"
