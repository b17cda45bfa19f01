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

# The lab (namespaces, sshd per node, configs) and the measuring helpers.
# shellcheck source=bench/cluster_lab.sh
source "$(dirname "$0")/cluster_lab.sh"


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
