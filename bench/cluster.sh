#!/usr/bin/env bash
# Benchmark for `spx-doctor --cluster` (issue 12). Not a test: prints a table.
#
# Builds a cluster lab of N nodes (network namespaces): an underlay switch
# (a Linux bridge at 9000) where the last node sits behind a port at 1500 (a
# black hole), a wan switch at 1500, and on every node Debian's sshd bound to
# its wan address with its own host key and its own
# /etc/spinifex/spinifex.toml and /etc/passwd (bound over /etc by `ip netns
# exec` from /etc/netns/NS/; root's home there is empty, so no profile of
# this machine's root runs on login), host = wan address, advertise =
# underlay address. Then it
# measures, side by side, from node n0, the wall time and peak RSS of:
#   cluster  spx-doctor --cluster --ssh-config CFG --format json
#            (this node in-process, the others over ssh, all at once)
#   serial   for h in HOSTS; do ssh -F CFG -o BatchMode=yes $h spx-doctor --format json; done
#            (what an operator does today)
# for 6 and 16 nodes (each with one black hole), and 16 healthy nodes
# (cluster only). Both run every node check with the defaults (--sample 1s,
# --probe-timeout 1s, --timeout 10s). Peak RSS is GNU time's %M for the
# coordinator process: the largest of it and any ssh child it waited for,
# so an upper bound on the coordinator's own. Each figure is the median of
# RUNS runs (default 3).
#
# Packets go only to addresses inside the namespaces this script creates
# (198.18.0.0/15); sshd listens only on those. Every namespace, sshd,
# /etc/netns/NS directory (and /etc/spinifex, if this script made it) is
# removed on exit.
#
# Needs: root, iproute2, openssh-server, openssh-client, time (GNU
# /usr/bin/time), python3. Usage: bench/cluster.sh [RUNS]   (SPX=path uses
# that binary instead of building target/release/spx-doctor; EXAMPLE=FILE
# writes the 6-node lab's table there). Takes about 3 minutes, most of it
# the serial loops.
set -euo pipefail

RUNS=${1:-3}
[[ $(id -u) -eq 0 ]] || { echo "bench/cluster.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip /usr/sbin/sshd ssh ssh-keygen /usr/bin/time python3; do
    command -v "$tool" >/dev/null || { echo "bench/cluster.sh: $tool not found (apt-get install iproute2 openssh-server openssh-client time python3)" >&2; exit 2; }
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${SPX:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    SPX=$ROOT/target/release/spx-doctor
fi

P="spxc$$"
WORK=$(mktemp -d /tmp/spx-cluster-bench.XXXXXX)
chmod 755 "$WORK"
NAMESPACES=()
SSHD_PIDS=()
MADE_ETC=0
teardown() {
    set +e
    for pid in "${SSHD_PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    for ns in "${NAMESPACES[@]}"; do
        ip netns del "$ns" 2>/dev/null
        rm -rf "/etc/netns/$ns"
    done
    SSHD_PIDS=()
    NAMESPACES=()
    set -e
}
cleanup() {
    teardown
    ((MADE_ETC)) && rmdir /etc/spinifex 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# /etc/spinifex must exist as a mount point for the per-node bind.
if [[ ! -d /etc/spinifex ]]; then mkdir /etc/spinifex; MADE_ETC=1; fi
mkdir -p /etc/netns /run/sshd

ssh-keygen -q -t ed25519 -N '' -C spx-bench -f "$WORK/client"
cp "$WORK/client.pub" "$WORK/authorized_keys"
mkdir "$WORK/bin" "$WORK/roothome"
# The nodes' /etc/passwd: root's home is an empty directory, so a login runs
# no profile of this machine's root (a pyenv init in ~/.bashrc costs 0.4 s
# a login here): the remote shell costs what it costs on a plain node.
awk -F: -v OFS=: -v home="$WORK/roothome" '$1 == "root" { $6 = home } { print }' /etc/passwd >"$WORK/passwd"
ln -s "$SPX" "$WORK/bin/spx-doctor"
cat >"$WORK/ssh_config" <<EOF
Host *
  IdentityFile $WORK/client
  IdentitiesOnly yes
  UserKnownHostsFile $WORK/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
EOF

mkns() {
    ip netns add "$1"
    NAMESPACES+=("$1")
    ip -n "$1" link set lo up
}

# build_lab N HOLES: N nodes, the last HOLES of them behind 1500 ports.
build_lab() {
    teardown
    local n=$1 holes=$2 i
    local u="$P-u" w="$P-w"
    mkns "$u"; ip -n "$u" link add sw type bridge; ip -n "$u" link set sw mtu 9000 up
    mkns "$w"; ip -n "$w" link add sw type bridge; ip -n "$w" link set sw up
    local nodes=""
    for ((i = 0; i < n; i++)); do
        nodes+="[nodes.n$i]
host = \"198.19.0.$((i + 1))\"
advertise = \"198.18.0.$((i + 1))\"
"
    done
    : >"$WORK/known_hosts"
    HOSTS=""
    for ((i = 0; i < n; i++)); do
        local ns="$P-n$i" port_mtu=9000
        ((i >= n - holes)) && port_mtu=1500
        mkns "$ns"
        ip -n "$ns" link add eth0 type veth peer name "u$i" netns "$u"
        ip -n "$ns" link set eth0 mtu 9000 up
        ip -n "$u" link set "u$i" mtu "$port_mtu" master sw up
        ip -n "$ns" addr add "198.18.0.$((i + 1))/24" dev eth0
        ip -n "$ns" link add wan0 type veth peer name "w$i" netns "$w"
        ip -n "$ns" link set wan0 up
        ip -n "$w" link set "w$i" master sw up
        ip -n "$ns" addr add "198.19.0.$((i + 1))/24" dev wan0
        mkdir -p "/etc/netns/$ns/spinifex"
        cp "$WORK/passwd" "/etc/netns/$ns/passwd"
        printf 'node = "n%d"\n[network]\nipsec_enabled = false\nunderlay_mtu = 9000\n%s' "$i" "$nodes" \
            >"/etc/netns/$ns/spinifex/spinifex.toml"
        [[ -f $WORK/host_$i ]] || ssh-keygen -q -t ed25519 -N '' -C spx-bench -f "$WORK/host_$i"
        echo "198.19.0.$((i + 1)) $(cut -d' ' -f1,2 "$WORK/host_$i.pub")" >>"$WORK/known_hosts"
        cat >"$WORK/sshd_$i" <<EOF
ListenAddress 198.19.0.$((i + 1)):22
HostKey $WORK/host_$i
AuthorizedKeysFile $WORK/authorized_keys
StrictModes no
UsePAM no
PidFile none
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
SetEnv PATH=$WORK/bin:/usr/sbin:/usr/bin:/sbin:/bin
EOF
        ip netns exec "$ns" /usr/sbin/sshd -D -f "$WORK/sshd_$i" &
        SSHD_PIDS+=("$!")
        HOSTS+=" 198.19.0.$((i + 1))"
    done
    HOSTS=${HOSTS# }
    # Every sshd listening before anything is measured.
    for ((i = 0; i < n; i++)); do
        for _ in $(seq 100); do
            ip netns exec "$P-n0" bash -c "exec 3<>/dev/tcp/198.19.0.$((i + 1))/22" 2>/dev/null && break
            sleep 0.05
        done
    done
}

# measure CMD...: "wall_s peak_rss_kib" of the process (GNU time %M).
measure() {
    local out="$WORK/time.out" start end
    start=$(date +%s%N)
    /usr/bin/time -o "$out" -f '%M' "$@" >"$WORK/stdout" 2>/dev/null || true
    end=$(date +%s%N)
    echo "$(awk -v ns=$((end - start)) 'BEGIN{printf "%.3f", ns/1e9}') $(tail -1 "$out")"
}

median_of() { # RUNS measurements of CMD...: "median_wall max_rss"
    local walls=() rss=0 r w m
    for ((r = 0; r < RUNS; r++)); do
        read -r w m <<<"$(measure "$@")"
        walls+=("$w")
        ((m > rss)) && rss=$m
    done
    echo "$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') $rss"
}

cluster_run() { median_of ip netns exec "$P-n0" "$SPX" --cluster --ssh-config "$WORK/ssh_config" --format json; }
serial_run() {
    # shellcheck disable=SC2016
    median_of ip netns exec "$P-n0" bash -c 'cfg=$1; shift; for h in "$@"; do ssh -F "$cfg" -o BatchMode=yes "$h" spx-doctor --format json; done' \
        serial "$WORK/ssh_config" $HOSTS
}

says() { # what the last cluster run concluded
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
pm = next((c for c in d["checks"] if c["id"] == "cluster.path-matrix"), {})
print("   spx says: exit %d, %d/%d nodes answered; cluster.path-matrix %s: %s" % (
    d["exit_code"], d["summary"]["nodes"] - d["summary"]["unreachable"], d["summary"]["nodes"],
    pm.get("status"), pm.get("summary", "")[:140]))
import datetime
def t(s): return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
t0 = t(d["started_at"])
reps = [n["report"] for n in d["nodes"] if n["report"]]
starts = sorted(t(r["started_at"]) - t0 for r in reps)
durs = sorted(r["duration_ms"] for r in reps)
slow = {}
for r in reps:
    for c in r["checks"]:
        slow[c["id"]] = max(slow.get(c["id"], 0), c["duration_ms"])
top = sorted(slow.items(), key=lambda kv: -kv[1])[:3]
print("   where the time goes: nodes started %.2f..%.2f s after the coordinator; their runs took %d..%d ms; slowest checks %s; cluster run %d ms" % (
    starts[0], starts[-1], durs[0], durs[-1], ", ".join("%s %d ms" % kv for kv in top), d["duration_ms"]))' "$WORK/cluster.json"
}

row() { # scenario tool "wall rss" [baseline_wall]
    local wall rss speed=""
    read -r wall rss <<<"$3"
    [[ -n ${4:-} ]] && speed=$(awk -v a="$4" -v b="$wall" 'BEGIN{printf "%.1fx", a/b}')
    printf '%-30s %-8s %8s %9s %8s\n' "$1" "$2" "$wall" "$(awk -v k="$rss" 'BEGIN{printf "%.1f", k/1024}')" "$speed"
}

printf '%-30s %-8s %8s %9s %8s\n' "scenario (median of $RUNS)" "tool" "wall_s" "peak_MiB" "speedup"
printf '%-30s %-8s %8s %9s %8s\n' "--------" "----" "------" "--------" "-------"
for spec in "6 1" "16 1"; do
    read -r n holes <<<"$spec"
    build_lab "$n" "$holes"
    c=$(cluster_run); cp "$WORK/stdout" "$WORK/cluster.json"
    s=$(serial_run)
    row "$n nodes (1 black hole)" serial "$s"
    row "$n nodes (1 black hole)" cluster "$c" "${s%% *}"
    says
    if [[ $n -eq 6 && -n ${EXAMPLE:-} ]]; then
        ip netns exec "$P-n0" env COLUMNS=100 "$SPX" --cluster --ssh-config "$WORK/ssh_config" \
            --check mtu.path,ipsec.xfrm --color never >"$EXAMPLE" || true
    fi
done
build_lab 16 0
c=$(cluster_run); cp "$WORK/stdout" "$WORK/cluster.json"
row "16 nodes (healthy)" cluster "$c"
says
