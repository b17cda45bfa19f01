#!/usr/bin/env bash
# Benchmark for `spx-doctor --cluster --via nats` against `--via ssh`
# (issue 23). Not a test: prints a table.
#
# On the cluster lab of bench/cluster.sh (bench/cluster_lab.sh: N node
# namespaces, one of them behind a switch port at 1500, sshd on every
# node's wan address) it adds Debian's nats-server in a namespace of its
# own on the wan plane (198.19.0.254:4222, configured as Spinifex's
# nats.conf: TLS from a CA made here, token, JetStream, max_payload 1MB),
# every node's [nodes.NODE.nats] in its config, and `spx-doctor agent` on
# every node. Then, from node n0, for N = 16, 32 and 64, it measures side
# by side the wall time and peak RSS (GNU time's %M of the coordinator) of
#   ssh   spx-doctor --cluster --via ssh --ssh-config CFG --format json
#   nats  spx-doctor --cluster --via nats --format json
# both with every node check and the defaults (--sample 1s,
# --probe-timeout 1s, --timeout 10s); each figure is the median of RUNS
# runs (default 3), ssh and nats alternating. Targets: nats at least 2x
# faster than ssh at 16 and 32 nodes, and at 32 nodes within one sample
# window + 1 s (2.0 s).
#
# Then an idle agent: node n1's agent of the 16-node lab, after its runs,
# for IDLE seconds (default 60): its RSS (VmRSS, and VmHWM, the peak since
# it started) and the CPU it used (utime + stime from /proc/PID/stat).
# Targets: at most 16 MiB, under 0.1% of a core.
#
# Packets go only to addresses inside the namespaces this script creates;
# every namespace, process and file is removed on exit.
#
# Needs: root, iproute2, openssh-server, openssh-client, nats-server,
# openssl, time, python3. Usage: bench/nats.sh [RUNS]   (SPX=path uses that
# binary; SIZES="16 32 64" and IDLE=60 change the labs and the idle
# window; KEEP=DIR keeps each size's last reports as DIR/N-ssh.json and
# DIR/N-nats.json). Takes about 6 minutes (10 with 64 nodes under load).
set -euo pipefail

RUNS=${1:-3}
SIZES=${SIZES:-16 32 64}
IDLE=${IDLE:-60}
[[ $(id -u) -eq 0 ]] || { echo "bench/nats.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip /usr/sbin/sshd ssh ssh-keygen /usr/bin/time python3 nats-server openssl; do
    command -v "$tool" >/dev/null || { echo "bench/nats.sh: $tool not found (apt-get install iproute2 openssh-server openssh-client nats-server openssl time python3)" >&2; exit 2; }
done

# shellcheck source=bench/cluster_lab.sh
source "$(dirname "$0")/cluster_lab.sh"

# shellcheck source=bench/bus_lab.sh
source "$(dirname "$0")/bus_lab.sh"
AGENT_ARGS=(--interval 0)

CFG0() { echo "/etc/netns/$P-n0/spinifex/spinifex.toml"; }
ssh_cmd() { echo ip netns exec "$P-n0" "$SPX" --cluster --via ssh --ssh-config "$WORK/ssh_config" --format json; }
nats_cmd() { echo ip netns exec "$P-n0" "$SPX" --cluster --via nats --config "$(CFG0)" --format json; }

# side_by_side: RUNS alternating runs of each; "ssh_wall ssh_rss nats_wall nats_rss"
side_by_side() {
    local sw=() nw=() srss=0 nrss=0 r w m
    for ((r = 0; r < RUNS; r++)); do
        # shellcheck disable=SC2046
        read -r w m <<<"$(measure $(ssh_cmd))"; sw+=("$w"); ((m > srss)) && srss=$m
        cp "$WORK/stdout" "$WORK/ssh.json"
        # shellcheck disable=SC2046
        read -r w m <<<"$(measure $(nats_cmd))"; nw+=("$w"); ((m > nrss)) && nrss=$m
        cp "$WORK/stdout" "$WORK/nats.json"
    done
    local med='{a[NR]=$1} END {print a[int((NR+1)/2)]}'
    echo "$(printf '%s\n' "${sw[@]}" | sort -n | awk "$med") $srss $(printf '%s\n' "${nw[@]}" | sort -n | awk "$med") $nrss"
}

verdict_of() { # file: "exit E, A/N answered, path-matrix STATUS"
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
pm = next((c for c in d["checks"] if c["id"] == "cluster.path-matrix"), {})
print("exit %d, %d/%d answered, path-matrix %s" % (d["exit_code"], d["summary"]["nodes"] - d["summary"]["unreachable"], d["summary"]["nodes"], pm.get("status")))' "$1"
}

idle() { # pid seconds: "rss_kib hwm_kib cpu_percent"
    local pid=$1 secs=$2 t0 t1
    t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    sleep "$secs"
    t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    local hz
    hz=$(getconf CLK_TCK)
    echo "$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status") $(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status") $(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v s="$secs" 'BEGIN{printf "%.3f", (b - a) / hz / s * 100}')"
}

mib() { awk -v k="$1" 'BEGIN{printf "%.1f", k/1024}'; }

printf '%-22s %9s %9s %9s %9s %8s  %s\n' "lab (median of $RUNS)" "ssh_s" "ssh_MiB" "nats_s" "nats_MiB" "speedup" "verdicts (ssh | nats)"
printf '%-22s %9s %9s %9s %9s %8s  %s\n' "---" "-----" "-------" "------" "--------" "-------" "--------"
IDLE_LINE=""
for n in $SIZES; do
    build_lab "$n" 1
    add_bus "$n"
    read -r sw srss nwall nrss <<<"$(side_by_side)"
    printf '%-22s %9s %9s %9s %9s %8s  %s | %s\n' "$n nodes (1 black hole)" "$sw" "$(mib "$srss")" "$nwall" "$(mib "$nrss")" \
        "$(awk -v a="$sw" -v b="$nwall" 'BEGIN{printf "%.1fx", a/b}')" "$(verdict_of "$WORK/ssh.json")" "$(verdict_of "$WORK/nats.json")"
    echo "  (the kernel's neighbour table was full $(neigh_overflows) times in the $n-node lab: any but 0 would make the figures the lab's, not the doctor's)"
    if [[ -n ${KEEP:-} ]]; then
        mkdir -p "$KEEP" && cp "$WORK/ssh.json" "$KEEP/$n-ssh.json" && cp "$WORK/nats.json" "$KEEP/$n-nats.json"
    fi
    if [[ $n -eq 16 && -z $IDLE_LINE ]]; then
        pid=${AGENT_PIDS[1]}
        sleep 2
        before=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
        read -r rss hwm cpu <<<"$(idle "$pid" "$IDLE")"
        IDLE_LINE="idle agent (n1 of the 16-node lab, after $((2 * RUNS)) cluster runs, ${IDLE} s): RSS $(mib "$rss") MiB (was $(mib "$before") MiB at the start of the window; peak since start $(mib "$hwm") MiB), CPU ${cpu}% of a core"
    fi
done
echo
echo "$IDLE_LINE"
echo "targets: nats >= 2x ssh at 16 and 32 nodes; nats at 32 nodes <= 2.0 s (sample 1 s + 1 s); idle agent <= 16 MiB RSS, < 0.1% CPU"
