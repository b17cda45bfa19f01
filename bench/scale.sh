#!/usr/bin/env bash
# Benchmark: the coordinator, the bus and `watch` at 64, 256 and 1,024
# nodes (issue 37). Not a test: prints a table.
#
# The nodes are the swarm (bench/swarm, `spx-swarm`): N simulated agents
# in one process, each with its own NATS connection and node name,
# answering the agent's request protocol with a report the real doctor
# judged from a bundle recorded here on node n0 of a three-node namespace
# lab (n1 healthy, n2 behind a switch port at 1500), made each node's: its
# peers are the swarm's other nodes, and the last node sits behind a port
# at 1500, so 2·(N−1) paths black-hole. Each node also writes its report
# into the doctor's bucket every INTERVAL, as an agent does.
#
# The bus is Debian's nats-server as Spinifex's nats.conf configures it
# (TLS from a CA made here, token, JetStream, max_payload 1MB, max_pending
# 64MB), listening on 127.0.0.1 inside a namespace of its own. One
# difference: max_connections is 4096, not 1000, since here one server
# holds every node's connection (in Spinifex each node has its own server,
# joined by routes).
#
# For each size it measures, from inside that namespace, the real binary:
#   --cluster --via nats --format json   wall time, peak RSS (GNU time %M),
#                                         the report's size, nats-server's
#                                         CPU during the gather, and the
#                                         total size of the reports received
#   watch --once --format json            wall time, peak RSS
# each the median of RUNS runs (default 3); the coordinator's target is
# peak RSS <= 24 MiB + 2 x the reports received, and at 1,024 nodes a
# wall time <= 5 s. Then live `watch` for WATCH_SECS (default 30) at the
# largest size while one node's report changes every second (spx-swarm
# --flap) and every node writes its report every INTERVAL: `--format json`
# and the table redrawn on a terminal (a pseudo-terminal from script(1),
# its output thrown away), each its CPU per second and peak RSS (from
# /proc) and how long it took to stop after SIGTERM (killed past 10 s).
# RUNS=0 skips the table and measures only that.
#
# Then the mtu.path-toward-N-peers bench (bench/mtu_path_scale.sh 100 1000) when it
# is there.
#
# Packets go only to loopback inside the namespaces made here; the
# namespaces, processes and files are removed on exit.
#
# Needs: root, iproute2, nats-server, openssl, time, python3.
# Usage: bench/scale.sh [RUNS]   (SIZES="64 256 1024", INTERVAL=30 (s),
# WATCH_SECS=30, WATCH_GIB=8 (watch's address space at most, GiB: past it
# the allocation fails and the figure says so), CAP=600 (s: a run still going then is killed and its
# figures are the cap's); SPX=path and SWARM=path use those binaries; TEMPLATE=path
# uses that bundle instead of recording one, and SWARM_DIR=DIR keeps the
# swarm's judged reports there for the next run with the same template
# and binaries; KEEP=DIR keeps each size's
# last report as DIR/N.json).
set -euo pipefail

RUNS=${1:-3}
SIZES=${SIZES:-64 256 1024}
INTERVAL=${INTERVAL:-30}
WATCH_SECS=${WATCH_SECS:-30}
WATCH_GIB=${WATCH_GIB:-8}
WATCH_MEM=$((WATCH_GIB << 30))
CAP=${CAP:-600}
SWARM_DIR=${SWARM_DIR:-}
[[ $(id -u) -eq 0 ]] || { echo "bench/scale.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip /usr/bin/time python3 nats-server openssl script prlimit pgrep; do
    command -v "$tool" >/dev/null || { echo "bench/scale.sh: $tool not found (apt-get install iproute2 time python3 nats-server openssl util-linux procps)" >&2; exit 2; }
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${SPX:-}" || -z "${SWARM:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet -p spx-doctor -p spx-swarm)
fi
SPX=${SPX:-$ROOT/target/release/spx-doctor}
SWARM=${SWARM:-$ROOT/target/release/spx-swarm}

P="spxs$$"
WORK=$(mktemp -d /tmp/spx-scale-bench.XXXXXX)
chmod 755 "$WORK"
NAMESPACES=()
PIDS=()
cleanup() {
    set +e
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
mkns() {
    ip netns add "$1"
    NAMESPACES+=("$1")
    ip -n "$1" link set lo up
}

# The template: a default run recorded on n0 of a three-node lab (an
# underlay bridge at 9000; n2's switch port at 1500).
record_template() {
    local out=$1 i ns port cfg
    mkns "$P-u"
    ip -n "$P-u" link add sw type bridge
    ip -n "$P-u" link set sw mtu 9000 up
    for i in 0 1 2; do
        ns="$P-r$i"
        mkns "$ns"
        port=9000
        ((i == 2)) && port=1500
        ip -n "$ns" link add eth0 type veth peer name "u$i" netns "$P-u"
        ip -n "$ns" link set eth0 mtu 9000 up
        ip -n "$P-u" link set "u$i" mtu "$port" master sw up
        ip -n "$ns" addr add "198.18.0.$((i + 1))/24" dev eth0
        ip -n "$ns" addr add "198.19.0.$((i + 1))/32" dev lo
    done
    cfg=$WORK/template.toml
    {
        printf 'node = "n0"\n[network]\nipsec_enabled = false\nunderlay_mtu = 9000\n'
        for i in 0 1 2; do
            printf '[nodes.n%d]\nhost = "198.19.0.%d"\nadvertise = "198.18.0.%d"\n' "$i" $((i + 1)) $((i + 1))
        done
    } >"$cfg"
    ip netns exec "$P-r0" "$SPX" --config "$cfg" --format json --record "$out" >/dev/null || true
    [[ -s $out ]] || { echo "bench/scale.sh: the template was not recorded" >&2; exit 1; }
}

[[ -n $SWARM_DIR ]] || SWARM_DIR=$WORK/swarm
if [[ -n ${TEMPLATE:-} ]]; then
    cp "$TEMPLATE" "$WORK/template.bundle"
else
    record_template "$WORK/template.bundle"
fi

# The bus, on loopback in a namespace of its own.
BUSNS="$P-bus"
mkns "$BUSNS"
mkdir -p "$WORK/pki" "$WORK/js"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/pki/ca.key" \
    -out "$WORK/pki/ca.pem" -days 2 -subj "/CN=spx scale CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/pki/server.key" \
    -out "$WORK/pki/server.csr" -subj "/CN=spinifex-nats" 2>/dev/null
echo "subjectAltName=IP:127.0.0.1" >"$WORK/pki/ext"
openssl x509 -req -in "$WORK/pki/server.csr" -CA "$WORK/pki/ca.pem" -CAkey "$WORK/pki/ca.key" \
    -CAcreateserial -out "$WORK/pki/server.pem" -days 2 -extfile "$WORK/pki/ext" 2>/dev/null
TOKEN=spx-scale-token-$$
echo "$TOKEN" >"$WORK/token"
chmod 600 "$WORK/token"
cat >"$WORK/nats.conf" <<EOF
listen: 127.0.0.1:4222
tls {
  cert_file: "$WORK/pki/server.pem"
  key_file:  "$WORK/pki/server.key"
  ca_file:   "$WORK/pki/ca.pem"
}
server_name: spinifex-nats-scale
authorization {
  token: "$TOKEN"
}
jetstream {
  store_dir: "$WORK/js/"
  max_memory_store: 1GB
  max_file_store: 10GB
}
max_connections: 4096
max_payload: 1MB
max_pending: 64MB
http: 127.0.0.1:8222
EOF
ip netns exec "$BUSNS" nats-server -c "$WORK/nats.conf" 2>"$WORK/nats.log" &
NATS_PID=$!
PIDS+=("$NATS_PID")
for _ in $(seq 200); do grep -q "Server is ready" "$WORK/nats.log" && break; sleep 0.05; done
grep -q "Server is ready" "$WORK/nats.log" || { cat "$WORK/nats.log" >&2; exit 1; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
mib() { awk -v k="$1" 'BEGIN{printf "%.1f", k/1024}'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# start_swarm N ARGS...: the swarm in the bus's namespace, ready.
start_swarm() {
    local n=$1
    shift
    : >"$WORK/swarm.out"
    ip netns exec "$BUSNS" "$SWARM" --nodes "$n" --bundle "$WORK/template.bundle" --spx "$SPX" \
        --dir "$SWARM_DIR" --bus 127.0.0.1:4222 --ca "$WORK/pki/ca.pem" --token-file "$WORK/token" \
        --black-hole "n$((n - 1))" "$@" >"$WORK/swarm.out" 2>"$WORK/swarm.err" &
    SWARM_PID=$!
    PIDS+=("$SWARM_PID")
    for _ in $(seq 6000); do
        grep -q '^ready' "$WORK/swarm.out" && return 0
        kill -0 "$SWARM_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench/scale.sh: the swarm of $n did not start:" >&2
    cat "$WORK/swarm.out" "$WORK/swarm.err" >&2
    exit 1
}
stop_swarm() {
    kill -TERM "$SWARM_PID" 2>/dev/null || true
    wait "$SWARM_PID" 2>/dev/null || true
}

# measure OUT CMD...: "wall_s peak_rss_kib nats_cpu_s" of CMD run in the
# bus's namespace, stdout to OUT.
measure() {
    local out=$1 t0 t1 c0 c1
    shift
    c0=$(cpu_ticks "$NATS_PID")
    t0=$(date +%s%N)
    ip netns exec "$BUSNS" /usr/bin/time -o "$WORK/time" -f '%M' timeout -s KILL "$CAP" "$@" >"$out" 2>"$WORK/cmd.err" || true
    t1=$(date +%s%N)
    c1=$(cpu_ticks "$NATS_PID")
    echo "$(awk -v ns=$((t1 - t0)) 'BEGIN{printf "%.3f", ns/1e9}') $(tail -1 "$WORK/time") $(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')"
}

verdict() { # report: "exit E, A/N answered, F failing pairs (want W)"
    python3 - "$1" "$SWARM_DIR/black-holes" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
want = set(open(sys.argv[2]).read().split())
pm = next((c for c in d["checks"] if c["id"] == "cluster.path-matrix"), {})
failing = set(pm.get("evidence", {}).get("failing", []))
ok = "named" if failing == want else "DIFFER"
answered = d["summary"]["nodes"] - d["summary"]["unreachable"]
print("exit %d, %d/%d answered, %d failing pairs %s" % (d["exit_code"], answered, d["summary"]["nodes"], len(failing), ok))
PY
}

if ((RUNS > 0)); then
    printf '%-6s | %-34s | %-10s | %-12s | %-22s | %s\n' "nodes" "--via nats: wall, peak RSS (bound)" "report" "nats CPU" "watch --once: wall, RSS" "verdicts"
    printf '%-6s | %-34s | %-10s | %-12s | %-22s | %s\n' "---" "---" "---" "---" "---" "---"
fi
LAST=""
for n in $SIZES; do
    LAST=$n
    ((RUNS > 0)) || continue
    start_swarm "$n" --interval "${INTERVAL}s"
    received=$(awk '/^judged/ {print $7}' "$WORK/swarm.out")
    cfg=$SWARM_DIR/spinifex.toml
    walls=() rss=0 cpus=()
    for ((r = 0; r < RUNS; r++)); do
        read -r w m c <<<"$(measure "$WORK/cluster.json" "$SPX" --cluster --via nats --config "$cfg" --format json)"
        walls+=("$w"); cpus+=("$c"); ((m > rss)) && rss=$m
    done
    size=$(stat -c %s "$WORK/cluster.json")
    bound=$((24 * 1024 + 2 * received / 1024))
    verdicts=$(verdict "$WORK/cluster.json" 2>/dev/null || echo "no report (killed at $CAP s?)")
    [[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp "$WORK/cluster.json" "$KEEP/$n.json"
    # watch --once reads the bucket: every node has written once after one
    # interval (their first runs are spread over it).
    sleep "$INTERVAL"
    wwalls=() wrss=0
    for ((r = 0; r < RUNS; r++)); do
        read -r w m _ <<<"$(measure "$WORK/watch.json" "$SPX" watch --once --config "$cfg" --format json)"
        wwalls+=("$w"); ((m > wrss)) && wrss=$m
    done
    wheld=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for x in d['nodes'] if x['status']=='ok'))" "$WORK/watch.json" 2>/dev/null || echo "?")
    printf '%-6s | %-34s | %-10s | %-12s | %-22s | %s; watch: %s of %s nodes held\n' "$n" \
        "$(printf '%s' "${walls[@]/%/$'\n'}" | median) s, $(mib "$rss") MiB ($(mib "$bound"))" \
        "$(mib $((size / 1024))) MiB" "$(printf '%s' "${cpus[@]/%/$'\n'}" | median) s" \
        "$(printf '%s' "${wwalls[@]/%/$'\n'}" | median) s, $(mib "$wrss") MiB" "$verdicts" "$wheld" "$n"
    echo "       (reports received: $(mib $((received / 1024))) MiB; $(grep '^judged' "$WORK/swarm.out" | sed 's/ (.*//'))"
    stop_swarm
done

# watch_cost OUT ARGS: `spx-doctor watch ARGS` in the bus's namespace
# for WATCH_SECS, its output to OUT: "CPU-seconds-per-second peak-RSS-KiB
# stop", read from /proc (utime + stime over the window, VmHWM), stop being
# how long it took to end after SIGTERM, or "killed" past 10 s (a
# background job of a script ignores SIGINT). With
# TTY=1 it runs on a pseudo-terminal (script(1); what it draws is thrown
# away).
watch_cost() {
    local out=$1 pid wrapper c0 c1 t0 t1 hwm stop i
    shift
    local cmd=(prlimit --as="$WATCH_MEM" "$SPX" watch --config "$SWARM_DIR/spinifex.toml" "$@")
    if [[ ${TTY:-0} == 1 ]]; then
        ip netns exec "$BUSNS" script -qec "exec ${cmd[*]}" /dev/null >/dev/null 2>&1 </dev/null &
        wrapper=$!
        PIDS+=("$wrapper")
        for _ in $(seq 50); do pid=$(pgrep -P "$wrapper" | head -1) && [[ -n $pid ]] && break; sleep 0.1; done
    else
        ip netns exec "$BUSNS" "${cmd[@]}" >"$out" 2>"$WORK/watch.err" &
        pid=$!
        wrapper=$pid
        PIDS+=("$pid")
    fi
    sleep 1
    c0=$(cpu_ticks "$pid")
    t0=$(date +%s%N)
    sleep "$WATCH_SECS"
    c1=$(cpu_ticks "$pid")
    t1=$(date +%s%N)
    hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
    kill -TERM "$pid"
    stop=killed
    for i in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || { stop="$(awk -v i="$i" 'BEGIN{printf "%.1f s", i/10}')"; break; }
        sleep 0.1
    done
    [[ $stop == killed ]] && kill -KILL "$pid" 2>/dev/null
    wait "$wrapper" 2>/dev/null || true
    echo "$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" -v ns=$((t1 - t0)) 'BEGIN{printf "%.3f", (b-a)/hz/(ns/1e9)}') $hwm $stop"
}

# Live watch at the largest size, one change a second.
if [[ -n $LAST && $WATCH_SECS -gt 0 ]]; then
    n=$LAST
    start_swarm "$n" --interval "${INTERVAL}s" --flap "n1:n2" --flap-every 1s
    echo
    echo "$(grep '^judged' "$WORK/swarm.out" | sed 's/ bytes in all.*/ bytes/')"
    sleep "$INTERVAL"
    read -r cpu rss stop <<<"$(watch_cost "$WORK/watch.lines" --format json)"
    echo "watch --format json at $n nodes, one change a second, ${WATCH_SECS} s: CPU $cpu s per second, peak RSS $(mib "$rss") MiB, stopped $stop after SIGTERM; $(wc -l <"$WORK/watch.lines") lines$(grep -q 'memory allocation' "$WORK/watch.err" && echo " (out of its $WATCH_GIB GiB: the allocation failed)")"
    read -r cpu rss stop <<<"$(TTY=1 watch_cost /dev/null)"
    echo "watch on a terminal at $n nodes, one change a second, ${WATCH_SECS} s: CPU $cpu s per second, peak RSS $(mib "$rss") MiB, stopped $stop after SIGTERM"
    stop_swarm
fi

echo
echo "targets: peak RSS <= 24 MiB + 2 x the reports received; --via nats at 1,024 nodes <= 5 s end to end"
echo
if [[ -x $ROOT/bench/mtu_path_scale.sh ]]; then
    SPX=$SPX "$ROOT/bench/mtu_path_scale.sh" 100 1000
else
    echo "mtu.path toward 100 and 1,000 peers: bench/mtu_path_scale.sh is missing"
fi
