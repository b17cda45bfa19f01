#!/usr/bin/env bash
# Soak (issue 8): N back-to-back runs (default 300) of the release binary in
# the monitoring pattern of contrib/systemd/spx-doctor.service
#   spx-doctor --format prometheus --color never --timeout 20s --output FILE
# on a lab node: a network namespace with a bridge, a veth to a peer
# namespace that answers pings, a tap, and a real ovsdb-server (NB, SB and
# Open_vSwitch databases with rows) the config points at, so every run opens
# OVSDB sessions, probes a peer and samples counters.
#
# Reports min / median / max of each run's peak RSS (GNU time %M) and wall
# time, and fails (exit 1) if anything is left behind:
#   - a process: no spx or journalctl process after the soak that was not
#     there before;
#   - a socket: ovsdb-server holds as many sockets after as before, and no
#     spx process holds any (the machine-wide count of socket fds in
#     /proc/*/fd is printed before and after for information; other
#     programs move it);
#   - a namespace: `ip netns list` is the same, less the lab's own and the
#     test suites' (spxt*, spxb*), which may run meanwhile;
#   - a temporary file: the output directory holds only the .prom file and
#     spx's private TMPDIR stays empty (new spx-looking entries in /tmp are
#     listed for information);
# and if peak RSS grows: the median of the last 30 runs may exceed the
# median of the first 30 by at most 10%.
#
# Packets go only to addresses inside the namespaces this script creates
# (198.18.0.0/15); the namespaces and the ovsdb-server are removed on exit.
#
# Needs: root, iproute2, openvswitch-switch and ovn-central (ovsdb-server,
# schemas, ovn-nbctl/ovn-sbctl/ovs-vsctl for the fixture rows), procps,
# time. Usage: bench/soak.sh [RUNS]   (SPX=path uses that binary instead of
# building target/release/spx-doctor; SAMPLE=1s sets --sample). 300 runs take
# about 6 minutes (each run samples for 1 s).
set -euo pipefail

RUNS=${1:-300}
SAMPLE=${SAMPLE:-1s}
[[ $(id -u) -eq 0 ]] || { echo "bench/soak.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip ovsdb-server ovsdb-tool ovn-nbctl ovn-sbctl ovs-vsctl pgrep /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench/soak.sh: $tool not found (apt-get install iproute2 openvswitch-switch ovn-central procps time)" >&2; exit 2; }
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${SPX:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    SPX=$ROOT/target/release/spx-doctor
fi

NODE="spxsoak$$"
PEER="spxsoakp$$"
WORK=$(mktemp -d /tmp/spx-soak.XXXXXX)
# A private copy: `pgrep -f` on its path finds this soak's runs and no one
# else's.
cp "$SPX" "$WORK/spx-doctor"
SPX=$WORK/spx-doctor
OVSDB_PID=""
cleanup() {
    set +e
    if [[ -n $OVSDB_PID ]]; then
        kill "$OVSDB_PID" 2>/dev/null
        wait "$OVSDB_PID" 2>/dev/null
    fi
    ip netns del "$NODE" 2>/dev/null || true
    ip netns del "$PEER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

sockets_of() { # pid -> number of socket fds it holds
    { find "/proc/$1/fd" -maxdepth 1 -lname 'socket:*' 2>/dev/null || true; } | wc -l
}
all_sockets() {
    { find /proc/[0-9]*/fd -maxdepth 1 -lname 'socket:*' 2>/dev/null || true; } | wc -l
}
spx_like_tmp() {
    { find /tmp -maxdepth 1 \( -name '*spx*' -o -name '.tmp*' \) ! -path "$WORK" 2>/dev/null || true; } | sort
}
# Namespaces other than this soak's and the test suites' (spxt*, spxb*),
# which may be running at the same time.
other_netns() {
    ip netns list | awk '{print $1}' | grep -v -e "^$NODE\$" -e "^$PEER\$" -e '^spxt' -e '^spxb' | sort || true
}
count() { pgrep -c "$@" 2>/dev/null || true; }

# --- the lab node -----------------------------------------------------------
# shellcheck source=bench/lab_node.sh
source "$ROOT/bench/lab_node.sh"
lab_node "$NODE" "$PEER" "$WORK"
ip -n "$NODE" tuntap add dev tapeni-soak0 mode tap
ip -n "$NODE" link set tapeni-soak0 mtu 1408

OUT=$WORK/out
SPXTMP=$WORK/tmp
mkdir -p "$OUT" "$SPXTMP"
PROM=$OUT/spx_doctor.prom

# --- before -------------------------------------------------------------------
sleep 1 # let the links settle
netns_before=$(other_netns)
spx_before=$(count -f "$SPX")
journal_before=$(count -x journalctl)
ovsdb_sockets_before=$(sockets_of "$OVSDB_PID")
all_sockets_before=$(all_sockets)
tmp_before=$(spx_like_tmp)

# --- the soak -----------------------------------------------------------------
RSS=$WORK/rss
WALL=$WORK/wall
codes=$WORK/codes
: >"$RSS"; : >"$WALL"; : >"$codes"
echo "soak: $RUNS runs of $SPX --format prometheus --output $PROM (--sample $SAMPLE) in netns $NODE"
t_all=$(date +%s%N)
for i in $(seq "$RUNS"); do
    set +e
    ip netns exec "$NODE" env TMPDIR="$SPXTMP" HOME=/nonexistent \
        /usr/bin/time -f '%M %e' -o "$WORK/time.$i" \
        "$SPX" --format prometheus --color never --timeout 20s --sample "$SAMPLE" \
        --config "$CFG" --ovs-db "$EP" --output "$PROM" 2>"$WORK/stderr"
    rc=$?
    set -e
    echo "$rc" >>"$codes"
    if ((rc > 2)); then
        echo "run $i: exit $rc: $(cat "$WORK/stderr")" >&2
        exit 1
    fi
    # GNU time puts "Command exited with non-zero status N" first.
    read -r kb secs < <(tail -n 1 "$WORK/time.$i")
    echo "$kb" >>"$RSS"
    echo "$secs" >>"$WALL"
    rm -f "$WORK/time.$i"
    # Nothing of this run may outlive it.
    if [[ $(count -f "$SPX") != "$spx_before" ]]; then
        echo "run $i: an spx process is still running after it exited" >&2
        pgrep -af "$SPX" >&2
        exit 1
    fi
done
t_all=$((($(date +%s%N) - t_all) / 1000000))

# --- after --------------------------------------------------------------------
sleep 0.5 # let ovsdb-server notice closed sessions
fail=0
stats() { # file -> "min median max"
    sort -n "$1" | awk '{a[NR]=$1} END {printf "%s %s %s", a[1], a[int((NR+1)/2)], a[NR]}'
}
read -r rmin rmed rmax <<<"$(stats "$RSS")"
read -r wmin wmed wmax <<<"$(stats "$WALL")"
first=$(head -n 30 "$RSS" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
last=$(tail -n 30 "$RSS" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
printf '\n%-22s %10s %10s %10s\n' "" min median max
printf '%-22s %10s %10s %10s\n' "peak RSS (KiB)" "$rmin" "$rmed" "$rmax"
printf '%-22s %10s %10s %10s\n' "wall time (s)" "$wmin" "$wmed" "$wmax"
echo "RSS median, first 30 runs: $first KiB; last 30 runs: $last KiB"
echo "exit codes: $(sort -n "$codes" | uniq -c | awk '{printf "%s x%s  ", $2, $1}')"
echo "total: $RUNS runs in $((t_all / 1000)).$(printf '%03d' $((t_all % 1000)))s"

check() { # description, before, after
    if [[ "$2" == "$3" ]]; then
        printf 'ok    %s (%s)\n' "$1" "$(head -c 80 <<<"$3" | tr '\n' ' ')"
    else
        printf 'LEFT  %s: before %q, after %q\n' "$1" "$2" "$3"
        fail=1
    fi
}
check "spx processes" "$spx_before" "$(count -f "$SPX")"
check "journalctl processes" "$journal_before" "$(count -x journalctl)"
check "ovsdb-server sockets" "$ovsdb_sockets_before" "$(sockets_of "$OVSDB_PID")"
check "network namespaces" "$netns_before" "$(other_netns)"
check "output directory" "spx_doctor.prom" "$(ls -A "$OUT")"
check "spx's TMPDIR" "" "$(ls -A "$SPXTMP")"
new_tmp=$(comm -13 <(echo "$tmp_before") <(spx_like_tmp) | grep . || true)
echo "info  new spx-looking entries in /tmp: ${new_tmp:-none} (spx writes only to --output's directory and TMPDIR, checked above; test suites running meanwhile add their own)"
echo "info  machine-wide socket fds: $all_sockets_before before, $(all_sockets) after (other programs move this)"
if ((last * 10 > first * 11)); then
    echo "GREW  peak RSS median rose from $first KiB (first 30 runs) to $last KiB (last 30)"
    fail=1
else
    echo "ok    peak RSS flat: last-30 median within 10% of first-30 median"
fi
grep -q '^spx_doctor_' "$PROM" || { echo "BAD   $PROM has no spx_doctor_ metrics"; fail=1; }
exit $fail
