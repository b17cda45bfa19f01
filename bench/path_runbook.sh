#!/usr/bin/env bash
# The manual runbook for "instance FROM cannot get large frames to instance
# TO", scripted the way an operator follows it today without spx-doctor
# path (issue 33): bench/path.sh times it against `spx-doctor path` on the
# kernel lab's real OVN. Run it on a node, as root, as the operator would:
#
#   NBDB=tcp:…:6641 SBDB=tcp:…:6642 NODES="spx1=198.19.0.1 spx2=… spx3=…" \
#   SSH_CONFIG=… bench/path_runbook.sh i-FROM i-TO
#
# The steps, one command at a time:
#  1. on every node (ssh; this node directly), find the QEMU whose command
#     line names the instance: its tap (`-netdev tap,…,ifname=`) and
#     `host_mtu`;
#  2. on that node, the tap's OVS `iface-id` (the logical switch port) and
#     MTU;
#  3. in NB, the port's DHCP_Options `mtu`, its switch, and when the two
#     ports are on different switches, the `gateway_mtu` of the router port
#     toward the receiver;
#  4. in SB, the port's binding: its chassis and that chassis' Encap IP;
#  5. on both nodes, the underlay bridge (`br-vpc`), its port and their
#     MTUs, and the ESP SA toward the peer (`ip xfrm state`: 34 bytes more
#     with rfc4106(gcm(aes)));
#  6. from each node, a `ping -M do` ladder to the other's encap IP (one
#     probe each, `-W 1`), bisecting the largest outer packet;
#  7. the arithmetic, each direction: the largest guest frame is the least
#     of (the path from the sender's node) - 58 - ESP, the receiver's tap,
#     and the router port's gateway_mtu.
#
# It prints one line per direction: `FROM->TO largest N limit WHAT`.
set -euo pipefail
FROM=$1
TO=$2
: "${NBDB:?NBDB=the NB endpoints}" "${SBDB:?SBDB=the SB endpoints}" "${NODES:?NODES=\"name=addr …\"}"
SSH=(ssh -o BatchMode=yes)
[[ -n ${SSH_CONFIG:-} ]] && SSH+=(-F "$SSH_CONFIG")
ME=$(hostname)

addr_of() {
    local kv
    for kv in $NODES; do [[ ${kv%%=*} == "$1" ]] && { echo "${kv#*=}"; return; }; done
    return 1
}

# Run a command on a node: here when it is this node, over ssh otherwise.
on() {
    local node=$1
    shift
    if [[ $node == "$ME" ]]; then bash -c "$*"; else "${SSH[@]}" "$(addr_of "$node")" "$*"; fi
}

mtu_of() { on "$1" "cat /sys/class/net/$2/mtu"; }

# 1-4. Where an instance runs and what its port says: sets
# <prefix>_node, _tap, _host_mtu, _tap_mtu, _port, _dhcp_mtu, _switch,
# _subnet, _chassis, _encap.
locate() {
    local prefix=$1 instance=$2 kv node args tap host_mtu port
    for kv in $NODES; do
        node=${kv%%=*}
        # [/] keeps this very command line from matching itself.
        args=$(on "$node" "pgrep -a -f 'qemu-system.*[/]$instance[.]pid' || true")
        [[ -n $args ]] && break
        node=
    done
    [[ -n $node ]] || { echo "runbook: no node runs $instance" >&2; exit 2; }
    tap=$(grep -o 'ifname=[^, ]*' <<<"$args" | head -1 | cut -d= -f2)
    host_mtu=$(grep -o 'host_mtu=[0-9]*' <<<"$args" | head -1 | cut -d= -f2)
    port=$(on "$node" "ovs-vsctl get Interface $tap external_ids:iface-id" | tr -d '"')
    local dhcp chassis encap switch
    dhcp=$(ovn-nbctl --db="$NBDB" get Logical_Switch_Port "$port" dhcpv4_options)
    switch=$(ovn-nbctl --db="$NBDB" lsp-get-ls "$port" | sed 's/.*(\(.*\))/\1/')
    chassis=$(ovn-sbctl --db="$SBDB" --bare --columns=chassis find Port_Binding logical_port="$port")
    encap=$(ovn-sbctl --db="$SBDB" --bare --columns=encaps list Chassis "$chassis")
    printf -v "${prefix}_node" %s "$node"
    printf -v "${prefix}_tap" %s "$tap"
    printf -v "${prefix}_host_mtu" %s "$host_mtu"
    printf -v "${prefix}_tap_mtu" %s "$(mtu_of "$node" "$tap")"
    printf -v "${prefix}_port" %s "$port"
    printf -v "${prefix}_dhcp_mtu" %s "$(ovn-nbctl --db="$NBDB" get DHCP_Options "$dhcp" options:mtu | tr -d '"')"
    printf -v "${prefix}_switch" %s "$switch"
    printf -v "${prefix}_subnet" %s "${switch#subnet-}"
    printf -v "${prefix}_chassis" %s "$(ovn-sbctl --db="$SBDB" --bare --columns=name list Chassis "$chassis")"
    printf -v "${prefix}_encap" %s "$(ovn-sbctl --db="$SBDB" --bare --columns=ip list Encap "$encap")"
}

# 5. A node's underlay: the least MTU of br-vpc and its ports.
underlay_mtu() {
    local node=$1 least dev m
    least=$(mtu_of "$node" br-vpc)
    for dev in $(on "$node" "ls /sys/class/net/br-vpc/brif"); do
        m=$(mtu_of "$node" "$dev")
        ((m < least)) && least=$m
    done
    echo "$least"
}

# 5. The ESP overhead toward a peer: 34 with an rfc4106(gcm(aes)) SA, 0
# without one.
esp_to() {
    local node=$1 src=$2 dst=$3
    if on "$node" "ip xfrm state list src $src dst $dst proto esp" | grep -q 'rfc4106(gcm(aes))'; then echo 34; else echo 0; fi
}

# 6. The largest outer packet a node's DF pings carry to an address: one
# probe per size, bisecting between 576 and the node's own underlay.
ladder() {
    local node=$1 dst=$2 hi=$3 lo=576 mid
    if on "$node" "ping -n -q -M do -c 1 -W 1 -s $((hi - 28)) $dst >/dev/null 2>&1"; then echo "$hi"; return; fi
    while ((hi - lo > 1)); do
        mid=$(((lo + hi) / 2))
        if on "$node" "ping -n -q -M do -c 1 -W 1 -s $((mid - 28)) $dst >/dev/null 2>&1"; then lo=$mid; else hi=$mid; fi
    done
    echo "$lo"
}

locate a "$FROM"
locate b "$TO"

# 7. One direction: the sender (s) and the receiver (r).
direction() {
    local s=$1 r=$2 name_s=$3 name_r=$4
    local s_node s_encap r_node r_encap r_tap_mtu r_subnet s_switch r_switch
    eval "s_node=\$${s}_node s_encap=\$${s}_encap s_switch=\$${s}_switch"
    eval "r_node=\$${r}_node r_encap=\$${r}_encap r_switch=\$${r}_switch r_subnet=\$${r}_subnet r_tap_mtu=\$${r}_tap_mtu"
    local largest=$r_tap_mtu limit="the tap of $name_r ($r_tap_mtu)"
    if [[ $s_node != "$r_node" ]]; then
        local path esp over
        path=$(ladder "$s_node" "$r_encap" "$(underlay_mtu "$s_node")")
        esp=$(esp_to "$s_node" "$s_encap" "$r_encap")
        over=$((path - 58 - esp))
        if ((over < largest)); then largest=$over limit="the underlay $s_encap->$r_encap (path $path, geneve 58, ESP $esp)"; fi
    fi
    if [[ $s_switch != "$r_switch" ]]; then
        local gw
        gw=$(ovn-nbctl --db="$NBDB" get Logical_Router_Port "rtr-$r_subnet" options:gateway_mtu 2>/dev/null | tr -d '"' || true)
        if [[ -n $gw ]] && ((gw < largest)); then largest=$gw limit="gateway_mtu of rtr-$r_subnet ($gw)"; fi
    fi
    echo "$name_s->$name_r largest $largest limit $limit"
}

direction a b "$FROM" "$TO"
direction b a "$TO" "$FROM"
echo "offered: $FROM ${a_dhcp_mtu} (DHCP) host_mtu ${a_host_mtu}; $TO ${b_dhcp_mtu} (DHCP) host_mtu ${b_host_mtu}"
