# The cluster lab of bench/cluster.sh and bench/nats.sh, sourced by both:
# N node namespaces on an underlay switch (a Linux bridge at 9000; the last
# HOLES nodes behind ports at 1500: black holes) and a wan switch at 1500,
# Debian's sshd on every node's wan address with its own host key, and each
# node's own /etc/spinifex/spinifex.toml (bound over /etc by `ip netns
# exec` from /etc/netns/NS/). Everything it makes is removed by `cleanup`
# (an EXIT trap): namespaces, processes (by pid), files.
#
# Expects RUNS to be set. Defines P (the name prefix), WORK, SPX, ROOT,
# build_lab N HOLES, teardown, measure CMD..., median_of CMD...; a
# caller's own background processes go in EXTRA_PIDS, stopped by teardown.
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
EXTRA_PIDS=()
MADE_ETC=0
teardown() {
    set +e
    for pid in "${EXTRA_PIDS[@]}" "${SSHD_PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    for ns in "${NAMESPACES[@]}"; do
        ip netns del "$ns" 2>/dev/null
        rm -rf "/etc/netns/$ns"
    done
    SSHD_PIDS=()
    EXTRA_PIDS=()
    NAMESPACES=()
    set -e
}
cleanup() {
    teardown
    restore_neigh
    ((MADE_ETC)) && rmdir /etc/spinifex 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# The kernel keeps one neighbour table for all namespaces, bounded by the
# initial namespace's gc_thresh2/gc_thresh3 (512 and 1024 by default). N
# nodes that each resolve their N-1 underlay peers hold about N² entries
# (4,164 counted in /proc/net/stat/arp_cache with 64 nodes up): from about
# 32 nodes on, the kernel says "arp_cache: neighbor table overflow!",
# sends fail with ENOBUFS, and some nodes' probes and agents' connects
# fail with them, which no real cluster (a kernel per node) shows. The lab
# raises both bounds to 2·N² + 8·N while it is up (never lowers them) and
# puts back what it found.
NEIGH_SAVED=()
for knob in gc_thresh2 gc_thresh3; do
    f=/proc/sys/net/ipv4/neigh/default/$knob
    NEIGH_SAVED+=("$knob=$(cat "$f")")
done
restore_neigh() {
    local kv
    for kv in "${NEIGH_SAVED[@]}"; do echo "${kv#*=}" >"/proc/sys/net/ipv4/neigh/default/${kv%%=*}"; done
    NEIGH_SAVED=()
}
# table_fulls: how often the kernel has found the neighbour table full
# (its "neighbor table overflow!"), summed over the CPUs.
table_fulls() {
    local s=0 f
    while read -r -a f; do
        [[ ${f[0]} == entries ]] || s=$((s + 16#${f[12]}))
    done </proc/net/stat/arp_cache
    echo "$s"
}
# neigh_overflows: how often since build_lab (0 for a lab the figures can
# be trusted from).
neigh_overflows() { echo $(($(table_fulls) - FULLS_AT_BUILD)); }
raise_neigh() { # N: room for 2·N² + 8·N entries
    local want=$((2 * $1 * $1 + 8 * $1)) kv f
    for kv in "${NEIGH_SAVED[@]}"; do
        f=/proc/sys/net/ipv4/neigh/default/${kv%%=*}
        (($(cat "$f") < want)) && echo "$want" >"$f"
    done
    return 0
}

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
    raise_neigh "$n"
    FULLS_AT_BUILD=$(table_fulls)
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
