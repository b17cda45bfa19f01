# Sourced by bench/soak.sh and bench/record_replay.sh: one lab node.
#
# lab_node NODE PEER WORK builds network namespace NODE with a bridge
# br-wan (198.18.30.1/24) and a veth to namespace PEER (198.18.30.2), which
# answers pings; a real ovsdb-server serving NB (NB_Global.ipsec=false, a
# DHCP_Options row), SB (two chassis) and Open_vSwitch (ovn-encap-ip) at
# unix:WORK/db/db.sock; and WORK/spinifex.toml pointing at it. It sets EP
# (the endpoint), CFG (the config) and OVSDB_PID (the caller kills it and
# deletes the namespaces on exit). Addresses are 198.18.30.0/24, inside
# the namespaces only.
lab_node() {
    local node=$1 peer=$2 work=$3
    ip netns add "$node"
    ip netns add "$peer"
    ip -n "$node" link set lo up
    ip -n "$peer" link set lo up
    ip -n "$node" link add br-wan type bridge stp_state 0 forward_delay 0
    ip -n "$node" link add eth1 type veth peer name eth1p netns "$peer"
    ip -n "$node" link set eth1 master br-wan
    ip -n "$node" link set eth1 up
    ip -n "$node" link set br-wan up
    ip -n "$peer" link set eth1p up
    ip -n "$node" addr add 198.18.30.1/24 dev br-wan
    ip -n "$peer" addr add 198.18.30.2/24 dev eth1p

    local db=$work/db
    mkdir -p "$db"
    local s
    for s in /usr/share/ovn/ovn-nb.ovsschema /usr/share/ovn/ovn-sb.ovsschema /usr/share/openvswitch/vswitch.ovsschema; do
        ovsdb-tool create "$db/$(basename "$s" .ovsschema).db" "$s"
    done
    ovsdb-server "$db"/ovn-nb.db "$db"/ovn-sb.db "$db"/vswitch.db \
        --remote="punix:$db/db.sock" --unixctl="$db/ctl" --log-file="$db/log" \
        -vconsole:off --no-chdir >/dev/null 2>&1 &
    OVSDB_PID=$!
    for _ in $(seq 100); do [[ -S $db/db.sock ]] && break; sleep 0.05; done
    [[ -S $db/db.sock ]] || { echo "lab_node: ovsdb-server did not start" >&2; return 1; }
    EP="unix:$db/db.sock"
    ovn-nbctl --db="$EP" init
    ovn-nbctl --db="$EP" set NB_Global . ipsec=false
    ovn-nbctl --db="$EP" dhcp-options-create 10.0.1.0/24
    ovn-nbctl --db="$EP" dhcp-options-set-options "$(ovn-nbctl --db="$EP" --bare --columns=_uuid list DHCP_Options)" \
        lease_time=3600 router=10.0.1.1 server_id=10.0.1.1 server_mac=02:00:00:00:01:01 mtu=1442
    ovn-sbctl --db="$EP" chassis-add spx1 geneve 198.18.30.1
    ovn-sbctl --db="$EP" chassis-add spx2 geneve 198.18.30.2
    ovs-vsctl --db="$EP" --no-wait init
    ovs-vsctl --db="$EP" --no-wait set Open_vSwitch . external_ids:ovn-encap-ip=198.18.30.1

    CFG=$work/spinifex.toml
    cat >"$CFG" <<CONFIG
node = "spx1"
[network]
ipsec_enabled = false
underlay_mtu = 1500
[nodes.spx1]
host = "198.18.30.1"
[nodes.spx1.vpcd]
ovn_nb_addr = "$EP"
ovn_sb_addr = "$EP"
external_interface = "br-wan"
[nodes.spx2]
host = "198.18.30.2"
CONFIG
}
