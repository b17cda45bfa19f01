# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_spx_doctor_global_optspecs
    string join \n check= skip= config= format= o/output= v/verbose strict color= width= timeout= sample= peer= mtu= probe-timeout= interface= ovs-db= nb-db= sb-db= for= record= replay= cluster via= nodes= ssh-config= ssh-user= remote-bin= parallel= ovn-read-by= allow= deny= h/help V/version
end

function __fish_spx_doctor_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_spx_doctor_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_spx_doctor_using_subcommand
    set -l cmd (__fish_spx_doctor_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l check -d 'Run only these checks: comma-separated ids or categories (nic, ipsec, mtu, …)' -r -f -a "sysctl.udp-buffers\t'Socket buffer ceilings let QUIC have the 7 MiB it asks for'
udp.rcvbuf-errors\t'No UDP datagrams dropped for want of receive buffer'
sysctl.neigh\t'The kernel\'s neighbour table has room for every node on every plane'
mtu.path\t'The underlay carries the target MTU to every peer'
mtu.overlay\t'DHCP options, VPC taps and the underlay bridge carry the guest MTU the config implies'
underlay.on-link\t'Every peer is on this node\'s L2 segment, with no router hop'
ipsec.flags\t'Config, NB_Global.ipsec and OVS ipsec_encapsulation agree'
ipsec.xfrm\t'ESP SAs (or their armed policies) for every peer when IPsec is wanted, none when it is not'
ipsec.cert\t'The IPsec peer certificate, key and cluster CA are valid, matching, named for this chassis and trusted by charon'
ipsec.daemon\t'ovs-monitor-ipsec and charon run when IPsec is wanted, charon does not when it is not'
ipsec.policy\t'Geneve to and from every peer covered by IPsec policies both ways, with SAs that satisfy them'
ipsec.errors\t'The IPsec layer drops nothing during the sample window (/proc/net/xfrm_stat)'
nic.offloads\t'Underlay NIC can segment geneve in hardware'
nic.tso\t'Underlay NIC gets TSO super-packets under load'
nic.queues\t'NIC uses the queue pairs it is offered'
nic.rings\t'NIC receive ring holds a burst (at least 1024 where the device allows)'
cpu.softirq\t'Receive work is spread over cores, not funnelled into one'
tcp.reordering\t'TCP does not mistake reordering for loss'
qemu.tuning\t'Every running guest was started with vhost, multiqueue, host_mtu, iothreads and cache=none'
ovn.cluster\t'OVN NB and SB raft members all connected, one leader, in step; one SB chassis per node'
cluster.reachable\t'Every node answered with a valid report'
cluster.bus\t'Every node answers on the bus as one agent'
cluster.config-drift\t'Every node runs the same ipsec_enabled, underlay_mtu, node list and doctor'
cluster.path-matrix\t'Every node carries the target MTU to every other node, both ways'
cluster.sa-pairs\t'Every outbound ESP SA exists on the node it points to, same SPI and algorithm'
cluster.chassis\t'Every node\'s SB chassis carries the encap IP its own Open_vSwitch gives'
cluster.ipsec\t'No node\'s IPsec is down while other nodes encrypt to it or hold policies for it'
sysctl\t'every sysctl check: sysctl.udp-buffers, sysctl.neigh'
udp\t'every udp check: udp.rcvbuf-errors'
mtu\t'every mtu check: mtu.path, mtu.overlay'
underlay\t'every underlay check: underlay.on-link'
ipsec\t'every ipsec check: ipsec.flags, ipsec.xfrm, ipsec.cert, ipsec.daemon, ipsec.policy, ipsec.errors'
nic\t'every nic check: nic.offloads, nic.tso, nic.queues, nic.rings'
cpu\t'every cpu check: cpu.softirq'
tcp\t'every tcp check: tcp.reordering'
qemu\t'every qemu check: qemu.tuning'
ovn\t'every ovn check: ovn.cluster'
cluster\t'every cluster check: cluster.reachable, cluster.bus, cluster.config-drift, cluster.path-matrix, cluster.sa-pairs, cluster.chassis, cluster.ipsec'"
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l skip -d 'Do not run these checks: comma-separated ids or categories' -r -f -a "sysctl.udp-buffers\t'Socket buffer ceilings let QUIC have the 7 MiB it asks for'
udp.rcvbuf-errors\t'No UDP datagrams dropped for want of receive buffer'
sysctl.neigh\t'The kernel\'s neighbour table has room for every node on every plane'
mtu.path\t'The underlay carries the target MTU to every peer'
mtu.overlay\t'DHCP options, VPC taps and the underlay bridge carry the guest MTU the config implies'
underlay.on-link\t'Every peer is on this node\'s L2 segment, with no router hop'
ipsec.flags\t'Config, NB_Global.ipsec and OVS ipsec_encapsulation agree'
ipsec.xfrm\t'ESP SAs (or their armed policies) for every peer when IPsec is wanted, none when it is not'
ipsec.cert\t'The IPsec peer certificate, key and cluster CA are valid, matching, named for this chassis and trusted by charon'
ipsec.daemon\t'ovs-monitor-ipsec and charon run when IPsec is wanted, charon does not when it is not'
ipsec.policy\t'Geneve to and from every peer covered by IPsec policies both ways, with SAs that satisfy them'
ipsec.errors\t'The IPsec layer drops nothing during the sample window (/proc/net/xfrm_stat)'
nic.offloads\t'Underlay NIC can segment geneve in hardware'
nic.tso\t'Underlay NIC gets TSO super-packets under load'
nic.queues\t'NIC uses the queue pairs it is offered'
nic.rings\t'NIC receive ring holds a burst (at least 1024 where the device allows)'
cpu.softirq\t'Receive work is spread over cores, not funnelled into one'
tcp.reordering\t'TCP does not mistake reordering for loss'
qemu.tuning\t'Every running guest was started with vhost, multiqueue, host_mtu, iothreads and cache=none'
ovn.cluster\t'OVN NB and SB raft members all connected, one leader, in step; one SB chassis per node'
cluster.reachable\t'Every node answered with a valid report'
cluster.bus\t'Every node answers on the bus as one agent'
cluster.config-drift\t'Every node runs the same ipsec_enabled, underlay_mtu, node list and doctor'
cluster.path-matrix\t'Every node carries the target MTU to every other node, both ways'
cluster.sa-pairs\t'Every outbound ESP SA exists on the node it points to, same SPI and algorithm'
cluster.chassis\t'Every node\'s SB chassis carries the encap IP its own Open_vSwitch gives'
cluster.ipsec\t'No node\'s IPsec is down while other nodes encrypt to it or hold policies for it'
sysctl\t'every sysctl check: sysctl.udp-buffers, sysctl.neigh'
udp\t'every udp check: udp.rcvbuf-errors'
mtu\t'every mtu check: mtu.path, mtu.overlay'
underlay\t'every underlay check: underlay.on-link'
ipsec\t'every ipsec check: ipsec.flags, ipsec.xfrm, ipsec.cert, ipsec.daemon, ipsec.policy, ipsec.errors'
nic\t'every nic check: nic.offloads, nic.tso, nic.queues, nic.rings'
cpu\t'every cpu check: cpu.softirq'
tcp\t'every tcp check: tcp.reordering'
qemu\t'every qemu check: qemu.tuning'
ovn\t'every ovn check: ovn.cluster'
cluster\t'every cluster check: cluster.reachable, cluster.bus, cluster.config-drift, cluster.path-matrix, cluster.sa-pairs, cluster.chassis, cluster.ipsec'"
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l config -d 'The Spinifex config, found as Spinifex\'s `spx` finds it: this flag, else $SPINIFEX_CONFIG_PATH [default: /etc/spinifex/spinifex.toml, else ~/spinifex/config/spinifex.toml]' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l format -d 'Output format' -r -f -a "table\t''
json\t''
prometheus\t''
junit\t''
otlp\t''"
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -s o -l output -d 'Write the report to FILE (atomically: a temporary file in the same directory, then rename)' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l color -d 'When to colour: auto (on a terminal, unless NO_COLOR is set), always, never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l width -d 'Wrap text to N columns [default: the terminal\'s width; off a terminal, $COLUMNS, else 100]' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l timeout -d 'Global deadline: a check still running then is reported as an error' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l sample -d 'The one sample window every sampling check shares' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l peer -d 'A peer to probe (address or name); repeatable. Overrides discovery' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l mtu -d 'Target underlay MTU (576..65535) [default: the config\'s underlay_mtu]' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l probe-timeout -d 'Bound on one probe round' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l interface -d 'An interface to inspect; repeatable. Overrides discovery' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l ovs-db -d 'The local Open_vSwitch database [default: unix:/var/run/openvswitch/db.sock]' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l nb-db -d 'OVN northbound endpoints, comma-separated [default: the config\'s ovn_nb_addr]' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l sb-db -d 'OVN southbound endpoints, comma-separated [default: the config\'s ovn_sb_addr]' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l for -d 'Run a preflight profile before a change: every required check must conclude' -r -f -a "enable-jumbo\t'Before raising underlay_mtu (default target 9000)'
disable-ipsec\t'Before setting ipsec_enabled = false'
enable-ipsec\t'Before setting ipsec_enabled = true'"
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l record -d 'Run as usual and also write everything read from the host (with the time and the source) to FILE: a bundle for --replay and for support (gzip JSON lines; keys are never recorded; written atomically)' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l replay -d 'Judge a bundle taken with --record, on any machine, without touching it: the report of the recorded run (its host, node, config and settings); only --check, --skip, --format, --output, -v, --strict, --color and --width apply' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l via -d 'How to reach the nodes: nats (each node\'s agent, on Spinifex\'s bus) or ssh [default: nats when the config has this node\'s [nodes.NODE.nats], else ssh]' -r -f -a "nats\t'Every node\'s agent, over Spinifex\'s NATS'
ssh\t'This node in-process, the others over OpenSSH'"
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l nodes -d 'Only these nodes, in this order: comma-separated [nodes.*] names [default: every node, by name]' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l ssh-config -d 'The ssh client configuration (`ssh -F FILE`) [default: ssh\'s own: ~/.ssh/config, /etc/ssh/ssh_config]' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l ssh-user -d 'The user to log in as (`ssh -l USER`); any user but root runs the doctor with `sudo -n` [default: ssh\'s]' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l remote-bin -d 'The doctor on the other nodes: a name on their PATH or an absolute path [default: the doctor\'s installed name]' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l parallel -d 'At most N ssh sessions at once' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l ovn-read-by -d 'Set by --cluster on the other nodes: the node that reads OVN NB and SB for the whole cluster' -r
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l allow -d 'A known problem of this kind passes, reported as allowed; repeatable (config: doctor.allow)' -r -f -a "sysctl.udp-buffers/quic-starved\t'fail: rmem_max is below the 7 MiB quic-go asks for: it gets a smaller buffer and drops datagrams under load (guests lost root filesystems this way)'
sysctl.udp-buffers/below-required\t'fail: A ceiling is below the 16 MiB Spinifex requires, though quic-go gets its 7 MiB: setup.sh\'s sysctl stage did not run or was overridden'
udp.rcvbuf-errors/dropping\t'fail: Udp/Udp6 RcvbufErrors advanced during the sample window: datagrams (QUIC\'s among them) are being thrown away now'
udp.rcvbuf-errors/past-drops\t'warn: Drops were counted since boot, none during the window: it happened, under load, earlier'
udp.rcvbuf-errors/quic-warning\t'warn: No drops counted, but spinifex-predastore logged quic-go\'s \'receive buffer size\' warning this boot'
sysctl.neigh/too-small\t'warn: gc_thresh3 is below the config\'s node count × the planes that carry peers: once the table is full the kernel drops what it sends to every next hop it cannot add (probes, geneve, the bus) while sendto still says sent'
mtu.path/black-hole\t'fail: Small probes answer and large ones vanish with no "fragmentation needed" (or "packet too big") coming back: a switch port, or the peer\'s own interface, drops them silently'
mtu.path/too-big\t'fail: A hop answered "fragmentation needed" (IPv4) or "packet too big" (IPv6) below the target, with its MTU'
mtu.path/local-mtu\t'fail: This host\'s own egress interface, or a port of its bridge, is below the target, so the probe cannot leave; what drops less beyond it is named too'
mtu.path/neighbour-table-full\t'error: The kernel dropped the probes before they left: its neighbour table (gc_thresh3, one for the whole kernel) was full, so no entry could be made for the peer\'s next hop'
mtu.path/unreachable\t'error: Not even a minimal probe was answered (the peer\'s firewall or echo_ignore_all, or no route): nothing about its path is proven'
mtu.path/cut-short\t'error: The run\'s --timeout ended probing before the peer answered or proved silent: nothing is concluded for it'
mtu.overlay/bridge-below-underlay\t'fail: The underlay bridge (br-vpc, else br-lan, else br-wan) is below underlay_mtu: every full-size geneve packet is dropped'
mtu.overlay/dhcp-mtu\t'fail: An IPv4 DHCP_Options row\'s options:mtu is not the guest MTU (or is unset, so guests take 1500): guests believe a path the overlay does not carry'
mtu.overlay/ra-mtu\t'fail: A logical router port advertises an ipv6_ra_configs:mtu other than the guest MTU'
mtu.overlay/tap-mtu\t'fail: A VPC tap\'s MTU is not the guest MTU: its guest was started before IPsec or the underlay changed'
mtu.overlay/nb-unreachable\t'error: The northbound DHCP_Options and router ports could not be read (down, no answer within the probe timeout): never a pass'
underlay.on-link/routed\t'warn: A peer is behind a router hop while IPsec is off (or a disable-ipsec preflight asks): its east-west traffic would cross that hop in clear'
underlay.on-link/no-route\t'error: The kernel gave no route to a peer (or the route could not be read): nothing is concluded for it'
ipsec.flags/stale-nb-ipsec\t'fail: NB_Global.ipsec is true while the config does not want IPsec: the flag the daemon never clears, so the control plane claims an encrypted cluster that is not'
ipsec.flags/missing-nb-ipsec\t'fail: NB_Global.ipsec is not true while the config wants IPsec: the overlay may be sending guest traffic in clear'
ipsec.flags/stale-ovs-ipsec\t'fail: OVS other_config:ipsec_encapsulation is true while the config does not want IPsec (left behind on this node)'
ipsec.flags/missing-ovs-ipsec\t'fail: OVS other_config:ipsec_encapsulation is not true while the config wants IPsec'
ipsec.flags/db-unreachable\t'error: NB_Global or the local Open_vSwitch database could not be read (down, no answer within the probe timeout): never a pass'
ipsec.xfrm/leftover-sas\t'fail: ESP SAs remain although IPsec is not wanted (charon is still running and the guest path still pays ESP\'s 34 bytes), or a policy still demands ESP and the kernel drops what it sends waiting for keys'
ipsec.xfrm/ike-pending\t'fail: IKE pending or failing toward a peer: the kernel holds an ACQUIRE (larval) state for it, SPI 0 and no keys, waits for the IKE daemon and drops what it sends (the peer\'s IPsec daemons are down, or one end does not trust the other\'s certificate)'
ipsec.xfrm/missing-sas\t'fail: IPsec is wanted but a peer\'s geneve, in one direction, has no SA: nothing demands one (sent in clear, or the policies could not be read), or it was removed behind the IKE daemon\'s back (the rest of its CHILD_SA is here: dropped); or SAs fall short of 2x(N-1) with peers unaccounted for'
ipsec.xfrm/wrong-algorithm\t'fail: An ESP SA uses another algorithm than the rfc4106(gcm(aes)) OVN negotiates: an IKE configuration OVN does not own'
ipsec.xfrm/stale-sas\t'warn: Every peer is covered, but an SA involves an address that is not a current peer (a removed node?)'
ipsec.cert/missing\t'fail: A credential file is missing (the peer certificate, its key or the cluster CA): IKE cannot authenticate this node'
ipsec.cert/unusable\t'fail: A credential file cannot be used: not PEM, no certificate in it, a key encrypted with a passphrase or of a kind that cannot be read'
ipsec.cert/expired\t'fail: The peer certificate or the cluster CA has expired: IKE with every peer fails (AUTHENTICATION_FAILED) and geneve to this node is dropped or sent in clear'
ipsec.cert/not-yet-valid\t'fail: The peer certificate or the CA is not valid yet (its notBefore is in the future: a clock off, or issued on a machine whose clock is)'
ipsec.cert/untrusted-chain\t'fail: The peer certificate does not chain to the cluster CA (another issuer, a signature the CA\'s key did not make, or a CA file that is no CA): the peers reject this node'
ipsec.cert/key-mismatch\t'fail: The private key does not belong to the certificate (their public keys differ): IKE authentication fails'
ipsec.cert/wrong-name\t'fail: The certificate\'s CN or dNSName is not this node\'s OVS chassis id (external_ids:system-id) or its name in the config: the peers expect the chassis id as this node\'s IKE identity'
ipsec.cert/cn-unreadable\t'fail: ovs-monitor-ipsec cannot read the CN: it takes `CN=(.+?),` from the RFC 2253 subject, so a CN that comes first in the certificate (or alone) yields nothing and it ignores certificate and key'
ipsec.cert/missing-eku\t'fail: The certificate lacks the ipsecIKE extended key usage (1.3.6.1.5.5.7.3.17) Spinifex issues it with'
ipsec.cert/ca-not-trusted\t'fail: The cluster CA is not in charon\'s trust store (/etc/ipsec.d/cacerts for strongSwan with the starter): IKE fails with AUTHENTICATION_FAILED, "no trusted RSA public key"'
ipsec.cert/key-exposed\t'fail: The private key file is readable by every user on the host'
ipsec.cert/ovs-pointers\t'fail: OVS other_config:certificate, private_key or ca_cert is unset or names other files than Spinifex\'s credentials: ovs-monitor-ipsec configures IKE with those'
ipsec.cert/expires-soon\t'warn: The peer certificate or the CA expires within the warning window (`[doctor] cert_warn_days`, 30 days unless set): nothing renews it'
ipsec.cert/db-unreachable\t'error: The local Open_vSwitch database could not be read, so the files OVS points at and the chassis id are unknown: never a pass'
ipsec.daemon/not-running\t'fail: IPsec is wanted but one of its daemons is not running: without charon nothing negotiates IKE, and geneve goes out in clear or is dropped while the control plane says it is encrypted; charon without ovs-monitor-ipsec still negotiates the tunnels it was last configured for, but no tunnel gets configured for a chassis added since'
ipsec.daemon/ike-daemon-running\t'fail: An IKE daemon (charon) runs although IPsec is not wanted: it holds UDP 500/4500 and may keep SAs and policies that encrypt or drop geneve'
ipsec.daemon/not-installed\t'fail: A program IPsec needs is not installed where this distribution puts it (ovs-monitor-ipsec, the ipsec command, the starter or charon)'
ipsec.daemon/monitor-running\t'warn: ovs-monitor-ipsec runs although IPsec is not wanted (Spinifex masks openvswitch-ipsec then): while ipsec_encapsulation is set it starts charon again'
ipsec.daemon/stale-pid-file\t'warn: A daemon\'s pid file names a process that is gone: the daemon crashed or was killed without cleaning up, and its unit\'s PIDFile= reads a dead pid'
ipsec.daemon/pid-file-other-program\t'warn: A daemon\'s pid file names a live process that is another program (its pid was reused): whatever stops the daemon by its pid file signals that program'
ipsec.policy/plaintext\t'fail: IPsec wanted but a peer\'s geneve, in a direction, is covered by no policy demanding ESP: it is sent (or accepted) in plaintext, beside any SA that would carry it (an SA without a policy), or on a node where IPsec was never set up'
ipsec.policy/no-sa\t'fail: A policy demands ESP for a peer\'s geneve and no SA exists while the kernel waits for one (an ACQUIRE state): IKE pending or failing, every packet dropped'
ipsec.policy/template-mismatch\t'fail: A policy demands ESP for a peer\'s geneve but no installed SA satisfies its template (its SPI is gone, or the SAs are of another reqid or mode): dropped'
ipsec.policy/blocked\t'fail: A block policy takes a peer\'s geneve: dropped'
ipsec.policy/leftover-policies\t'fail: IPsec is not wanted, yet policies still demand ESP for geneve (or block it): dropped while no IKE daemon answers'
ipsec.errors/dropping\t'fail: A counter of /proc/net/xfrm_stat advanced during the sample window: the IPsec layer is dropping packets now; each counter is named with what it means for geneve (XfrmOutNoStates: no SA for a policy\'s ESP; XfrmInTmplMismatch: a peer sends in clear; XfrmInNoStates: a peer encrypts to an SA this node lost)'
nic.offloads/tunnel-offload-off\t'fail: tx-udp_tnl-segmentation (or its csum variant) is off but can be turned on: geneve is segmented in software by the host CPU (measured 17.6 against 92.6 Gbit/s, 5.3x)'
nic.offloads/tunnel-offload-fixed\t'fail: The driver cannot segment UDP tunnels (the feature is off `[fixed]`, or unknown to this kernel): geneve stays segmented in software on this NIC; only another NIC or jumbo frames help'
nic.offloads/gso-partial-off\t'fail: The tunnel features show on, but the driver segments UDP tunnels through tx-gso-partial, which is off (ixgbe): geneve is segmented in software'
nic.offloads/offload-off\t'warn: GRO, TSO, GSO, scatter-gather or checksumming is off but can be turned on'
nic.offloads/offload-fixed\t'warn: GRO, TSO, GSO, scatter-gather or checksumming is off `[fixed]` by the driver (ena: TSO, receive checksumming): no `ethtool -K` helps'
nic.tso/no-tso\t'fail: At 100,000 full-size packets/s or more, not one TSO descriptor: the host CPU segments everything (the overlay without hardware segmentation offload: 17.6 against 92.6 Gbit/s)'
nic.tso/little-tso\t'warn: Bulk traffic gets little hardware segmentation: no TSO descriptor at a lower rate, or fewer than 4 wire packets per descriptor'
nic.queues/unused-queues\t'warn: Fewer queue pairs are in use than the device offers (up to one per online CPU): receive work lands on fewer cores than it could'
nic.rings/shallow-ring\t'warn: The rx ring is below 1024 though the device allows 1024: a measured drop source under burst'
nic.rings/virtio-queue-size\t'warn: A guest\'s virtio NIC offers fewer than 1024 rx descriptors: its maximum is the queue size the host\'s QEMU gave it (`rx_queue_size`), so the fix is on the host'
cpu.softirq/esp-funnel\t'fail: With IPsec on, one core is saturated by receive work: the ESP funnel (one SA\'s traffic cannot be spread; measured 97.4% busy, 71.8% softirq)'
cpu.softirq/receive-funnel\t'fail: One core is saturated by receive work while the others idle, and IPsec is off (or unknown): the NIC\'s queues or interrupts are not spread'
cpu.softirq/concentrated\t'warn: One core takes at least half of all NET_RX under real traffic on a machine of 4 or more CPUs'
tcp.reordering/multiqueue-reordering\t'warn: Reordering or D-SACKs with IPsec on and a NIC running several queue pairs: multiqueue spreads one ESP flow and TCP reads the reordering as loss (measured: -12%)'
tcp.reordering/reordering-or-loss\t'warn: Reorder detections, D-SACKs (spurious retransmissions) or retransmissions of 0.1% or more: TCP is mistaking reordering for loss, or losing segments'
qemu.tuning/no-vhost\t'fail: A VPC NIC runs without vhost=on (or /dev/vhost-net is missing): QEMU\'s main loop moves every packet, ~60% of a core measured'
qemu.tuning/not-tap\t'fail: A VPC NIC\'s netdev is not a tap: vhost and host-side multiqueue need one'
qemu.tuning/wrong-queues\t'fail: queues= does not follow the IPsec setting: 1 with IPsec on (multiqueue reorders ESP, -12%), min(vCPUs, 8) with it off (+54%)'
qemu.tuning/tap-queue-mismatch\t'fail: The host tap does not match QEMU\'s queues: the queues QEMU holds, the multi_queue flag, or another process attached'
qemu.tuning/not-virtio\t'fail: A NIC or the boot disk is not virtio (virtio-net-pci, virtio-blk-pci)'
qemu.tuning/no-mq\t'fail: A multiqueue NIC lacks mq=on: the guest uses only the first queue'
qemu.tuning/wrong-vectors\t'fail: A multiqueue NIC\'s MSI-X vectors are not 2×queues+2 (as set, or as its machine type defaults them)'
qemu.tuning/small-rx-queue\t'fail: rx_queue_size is not 1024: QEMU\'s default ring of 256 was a measured drop source under burst'
qemu.tuning/wrong-host-mtu\t'fail: host_mtu is not the guest MTU the config implies: large segments vanish'
qemu.tuning/no-iothread\t'fail: A disk (boot, data volume or hot-attached) has no iothread of its own: ~38x fewer IOPS measured'
qemu.tuning/wrong-cache\t'fail: The boot disk\'s cache mode is not none (O_DIRECT, guest flushes forwarded)'
qemu.tuning/wrong-num-queues\t'fail: The boot disk\'s num-queues is not the vCPU count'
qemu.tuning/unparsable-cmdline\t'error: A QEMU command line could not be parsed: that guest cannot be judged'
qemu.tuning/qmp-silent\t'error: A QMP monitor on the command line did not answer: hot-attached volumes could not be checked'
ovn.cluster/no-leader\t'fail: The database\'s cluster has no leader: it lost its quorum (or is electing), so no change to it can be committed'
ovn.cluster/several-leaders\t'fail: More than one member says it leads (two clusters in one list, or a cut-off leader)'
ovn.cluster/not-clustered\t'fail: A member holds the database standalone (or as a relay) where Spinifex runs a raft of three (clusters of three nodes or more)'
ovn.cluster/foreign-member\t'fail: A member of the list is of another cluster (another cluster id), or serves another database'
ovn.cluster/member-down\t'fail: A member does not answer while the others do: the raft has lost a member (with three, it tolerates no further loss)'
ovn.cluster/member-disconnected\t'fail: A member answers but is not connected to its cluster (out of contact with a majority, or still joining): its clients see stale data'
ovn.cluster/missing-chassis\t'fail: A config node has no SB chassis: its ovn-controller has not registered, so it has no overlay networking'
ovn.cluster/stale-chassis\t'fail: An SB chassis belongs to no node of the config (a removed node, or a system-id since changed)'
ovn.cluster/encap-mismatch\t'fail: A node\'s SB chassis registered other tunnel addresses than its own Open_vSwitch external_ids:ovn-encap-ip'
ovn.cluster/chassis-id-mismatch\t'fail: This node\'s Open_vSwitch external_ids:system-id (its chassis id) is not its node name, which Spinifex pins it to'
ovn.cluster/lagging\t'warn: A connected member has not applied, by the end of the sample window, what the most advanced member had applied at its start (at least 500 ms earlier): it serves an old database'
ovn.cluster/member-count\t'warn: The list is not the raft Spinifex runs: not three members for a cluster of three nodes or more, two members, or one server named twice'
ovn.cluster/db-unreachable\t'error: No member of NB or SB answered, or the SB chassis could not be read: nothing about it is concluded'
ovn.cluster/local-unreadable\t'error: This node\'s Open_vSwitch database could not be read: its chassis id and ovn-encap-ip are unknown'
cluster.reachable/unanswered\t'error: A node did not answer (connection refused, host key, sudo, binary missing, deadline…): nothing is concluded about it, so the run is inconclusive'
cluster.reachable/no-nodes\t'error: No node was selected'
cluster.reachable/other-version\t'warn: A node runs another version of the doctor: its findings may differ'
cluster.bus/duplicate-node\t'fail: Two agents answer as one node (two machines, most often one re-imaged from the other\'s disk with its /etc/spinifex, or two processes on one machine): neither report is taken as the node\'s, so the node is not judged'
cluster.config-drift/ipsec-enabled-drift\t'fail: ipsec_enabled differs between nodes: their guests get different MTUs and multiqueue, and one side expects SAs the other never sets up'
cluster.config-drift/underlay-mtu-drift\t'fail: underlay_mtu differs between nodes: some guests get an MTU the fabric between them and the rest does not carry'
cluster.config-drift/node-list-drift\t'fail: The [nodes.*] tables differ between nodes: SAs and peers nobody else expects'
cluster.config-drift/ipsec-ca-drift\t'fail: The nodes\' IPsec CAs differ (ipsec.cert\'s CA, by subject and public key): IKE between nodes of different CAs fails with AUTHENTICATION_FAILED'
cluster.config-drift/config-unknown\t'error: A node did not answer or reported no config, so whether the configs agree is unknown'
cluster.config-drift/site-checks-drift\t'warn: The nodes\' site checks (doctor.d: each id and its executable\'s SHA-256) differ: a preflight or a monitor gates on checks some nodes do not run, or run otherwise'
cluster.config-drift/version-drift\t'warn: The configs agree, but the nodes run different versions of the doctor'
cluster.path-matrix/cut-off\t'fail: Every path to and from one node fails: look at its link and its switch port first'
cluster.path-matrix/asymmetric\t'fail: One direction of a pair carries the target and the other does not: a one-way limit (a firewall rule on ICMP size, one member of a LAG, a policy route)'
cluster.path-matrix/path-too-small\t'fail: A path between two nodes does not carry the target (blackhole, too-big or local-mtu, as the row\'s node measured it)'
cluster.path-matrix/neighbour-table-full\t'error: The row node\'s kernel dropped its probes toward the other: its neighbour table (gc_thresh3, one for the whole kernel) was full, so the pair was not measured, and that node\'s own traffic to next hops it cannot add is dropped the same way'
cluster.path-matrix/not-measured\t'error: A pair was not measured (a node that did not answer, a peer that answered no echo, a node whose kernel dropped the probes because its neighbour table was full, a node whose peers did not include the other): the matrix is incomplete'
cluster.sa-pairs/unpaired\t'fail: An outbound SA is missing on the node it points to (or a node holds an inbound SA the other end does not have, or no outbound SA at all): that direction\'s packets are dropped'
cluster.sa-pairs/algorithm-mismatch\t'fail: Both ends hold the SA, but with different algorithms'
cluster.sa-pairs/foreign-peer\t'fail: A node holds SAs toward an address that is no node of the cluster (a removed node: charon keeps negotiating with nobody)'
cluster.sa-pairs/ipsec-disagrees\t'error: The nodes disagree on whether IPsec is wanted, so the SAs expected are unknown (see cluster.config-drift)'
cluster.sa-pairs/not-judged\t'error: Not every pair could be judged: a node\'s SA table was not read, or SAs point at addresses no answering node claims'
cluster.chassis/missing-chassis\t'fail: A node\'s chassis id (its Open_vSwitch system-id) has no SB chassis: its ovn-controller has not registered'
cluster.chassis/encap-mismatch\t'fail: A node\'s SB chassis carries other tunnel addresses than its own ovn-encap-ip: the others send its tunnels elsewhere'
cluster.chassis/not-judged\t'error: Not every node could be judged: the SB chassis were not read (the node reading OVN did not answer, or could not read SB), or a node\'s own identity is unknown (it did not answer, or its Open_vSwitch could not be read)'
cluster.ipsec/black-holed\t'fail: A node holds no SAs or policies for other nodes that encrypt to it or hold policies for it: their geneve to it is dropped (it has no SA), its geneve to them is sent in clear and dropped (their policies demand ESP): cross-chassis guest traffic to and from it is black-holed (a partial enable)'
cluster.ipsec/not-up\t'fail: IPsec wanted, yet a node holds no IPsec policy or SA at all and no other node expects IPsec with it (or none holds any): its geneve is plaintext both ways'
cluster.ipsec/ipsec-disagrees\t'error: The nodes disagree on whether IPsec is wanted (see cluster.config-drift)'
cluster.ipsec/not-judged\t'error: Not every node could be judged: its ipsec.policy was not read (no CAP_NET_ADMIN, no answer)'"
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l deny -d 'A warning of this kind fails the run; repeatable (config: doctor.deny)' -r -f -a "udp.rcvbuf-errors/past-drops\t'warn: Drops were counted since boot, none during the window: it happened, under load, earlier'
udp.rcvbuf-errors/quic-warning\t'warn: No drops counted, but spinifex-predastore logged quic-go\'s \'receive buffer size\' warning this boot'
sysctl.neigh/too-small\t'warn: gc_thresh3 is below the config\'s node count × the planes that carry peers: once the table is full the kernel drops what it sends to every next hop it cannot add (probes, geneve, the bus) while sendto still says sent'
underlay.on-link/routed\t'warn: A peer is behind a router hop while IPsec is off (or a disable-ipsec preflight asks): its east-west traffic would cross that hop in clear'
ipsec.xfrm/stale-sas\t'warn: Every peer is covered, but an SA involves an address that is not a current peer (a removed node?)'
ipsec.cert/expires-soon\t'warn: The peer certificate or the CA expires within the warning window (`[doctor] cert_warn_days`, 30 days unless set): nothing renews it'
ipsec.daemon/monitor-running\t'warn: ovs-monitor-ipsec runs although IPsec is not wanted (Spinifex masks openvswitch-ipsec then): while ipsec_encapsulation is set it starts charon again'
ipsec.daemon/stale-pid-file\t'warn: A daemon\'s pid file names a process that is gone: the daemon crashed or was killed without cleaning up, and its unit\'s PIDFile= reads a dead pid'
ipsec.daemon/pid-file-other-program\t'warn: A daemon\'s pid file names a live process that is another program (its pid was reused): whatever stops the daemon by its pid file signals that program'
nic.offloads/offload-off\t'warn: GRO, TSO, GSO, scatter-gather or checksumming is off but can be turned on'
nic.offloads/offload-fixed\t'warn: GRO, TSO, GSO, scatter-gather or checksumming is off `[fixed]` by the driver (ena: TSO, receive checksumming): no `ethtool -K` helps'
nic.tso/little-tso\t'warn: Bulk traffic gets little hardware segmentation: no TSO descriptor at a lower rate, or fewer than 4 wire packets per descriptor'
nic.queues/unused-queues\t'warn: Fewer queue pairs are in use than the device offers (up to one per online CPU): receive work lands on fewer cores than it could'
nic.rings/shallow-ring\t'warn: The rx ring is below 1024 though the device allows 1024: a measured drop source under burst'
nic.rings/virtio-queue-size\t'warn: A guest\'s virtio NIC offers fewer than 1024 rx descriptors: its maximum is the queue size the host\'s QEMU gave it (`rx_queue_size`), so the fix is on the host'
cpu.softirq/concentrated\t'warn: One core takes at least half of all NET_RX under real traffic on a machine of 4 or more CPUs'
tcp.reordering/multiqueue-reordering\t'warn: Reordering or D-SACKs with IPsec on and a NIC running several queue pairs: multiqueue spreads one ESP flow and TCP reads the reordering as loss (measured: -12%)'
tcp.reordering/reordering-or-loss\t'warn: Reorder detections, D-SACKs (spurious retransmissions) or retransmissions of 0.1% or more: TCP is mistaking reordering for loss, or losing segments'
ovn.cluster/lagging\t'warn: A connected member has not applied, by the end of the sample window, what the most advanced member had applied at its start (at least 500 ms earlier): it serves an old database'
ovn.cluster/member-count\t'warn: The list is not the raft Spinifex runs: not three members for a cluster of three nodes or more, two members, or one server named twice'
cluster.reachable/other-version\t'warn: A node runs another version of the doctor: its findings may differ'
cluster.config-drift/site-checks-drift\t'warn: The nodes\' site checks (doctor.d: each id and its executable\'s SHA-256) differ: a preflight or a monitor gates on checks some nodes do not run, or run otherwise'
cluster.config-drift/version-drift\t'warn: The configs agree, but the nodes run different versions of the doctor'"
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -s v -l verbose -d 'Every check in catalogue order, with its code, findings and evidence, instead of the problems first'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l strict -d 'Warnings fail the run (exit 1)'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -l cluster -d 'Check every node of the config\'s [nodes.*] (their agents over NATS, or this node in-process and the others over ssh), plus the cross-node checks (cluster.*)'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -s V -l version -d 'Print version'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -f -a "list" -d 'List every check: id, category, title (with --codes: every code); the site\'s own checks (doctor.d beside the config) among them'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -f -a "explain" -d 'Explain one check (what it measures, why it matters, how to fix it) or one code'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -f -a "agent" -d 'Run as a service on this node: answer cluster run requests on Spinifex\'s NATS (`--cluster --via nats`), run the checks every --interval into the doctor\'s JetStream bucket, export OTLP metrics'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -f -a "watch" -d 'The whole cluster, live, from the agents\' reports in the doctor\'s JetStream bucket: nodes × checks, the cluster checks, the path-MTU matrix'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -f -a "path" -d 'Where a guest\'s packet of N bytes dies between two guests, hop by hop, both ways (FROM and TO: i-…, eni-…, a guest\'s IP, or a node)'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -f -a "path-facts" -d 'One node\'s side of a path, as JSON: what `path` asks each node over ssh'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -f -a "man" -d 'Print the man page (roff)'
complete -c spx-doctor -n "__fish_spx_doctor_needs_command" -f -a "__complete" -d 'Complete a partial command line, one candidate per line, for the shell completion of Spinifex\'s `spx doctor` (cobra\'s __complete)'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand list" -l config -d 'The Spinifex config, found as a run finds it: its folder\'s doctor.d holds the site\'s own checks' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand list" -l color -d 'When to colour: auto (on a terminal, unless NO_COLOR is set), always, never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand list" -l width -d 'Wrap text to N columns [default: the terminal\'s width; off a terminal, $COLUMNS, else 100]' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand list" -l codes -d 'List every code (CHECK-ID/KIND) instead: its status and what it means'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand list" -s h -l help -d 'Print help'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand list" -s V -l version -d 'Print version'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand explain" -l config -d 'The Spinifex config, found as a run finds it: its folder\'s doctor.d holds the site\'s own checks' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand explain" -l color -d 'When to colour: auto (on a terminal, unless NO_COLOR is set), always, never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand explain" -l width -d 'Wrap text to N columns [default: the terminal\'s width; off a terminal, $COLUMNS, else 100]' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand explain" -s V -l version -d 'Print version'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand completions" -s h -l help -d 'Print help'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand completions" -s V -l version -d 'Print version'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand agent" -l config -d 'The Spinifex config, found as a run finds it; its `node` and that node\'s [nodes.NODE.nats] say where the bus is' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand agent" -l runs-per-minute -d 'At most N probe runs start in any minute, however many requests come; a request past the bound is answered "rate-limited"' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand agent" -l interval -d 'Run the default checks by itself this often, start to start, into the doctor\'s JetStream bucket (0: never) [default: the config\'s `[doctor] interval`, else 60s]' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand agent" -s h -l help -d 'Print help'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand agent" -s V -l version -d 'Print version'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand watch" -l config -d 'The Spinifex config, found as a run finds it: its [nodes.*] are the cluster, its `node`\'s [nodes.NODE.nats] says where the bus is' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand watch" -l format -d 'table: a live view redrawn on a terminal; json: one JSON object per line (check transitions and node states), never redrawn' -r -f -a "table\t''
json\t''"
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand watch" -l color -d 'When to colour: auto (on a terminal, unless NO_COLOR is set), always, never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand watch" -l width -d 'Wrap text to N columns [default: the terminal\'s width; off a terminal, $COLUMNS, else 100]' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand watch" -l timeout -d 'With --once: how long to wait for NATS and the bucket' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand watch" -l once -d 'One cluster report from what the bucket holds now, then exit: 0 ok, 1 a failure, 2 inconclusive (a node stale or unknown), as --cluster'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand watch" -s v -l verbose -d 'Every node check of every node and the whole path matrix, with the evidence, instead of the problems first'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand watch" -s h -l help -d 'Print help'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand watch" -s V -l version -d 'Print version'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l size -d 'The guest packet (an IP packet, the size an MTU counts) to follow, 68..65535 [default: the MTU the source guest was offered; between nodes, underlay_mtu]' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l vpc -d 'The VPC of a guest IP that two VPCs share (vpc-…)' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l via -d 'How to reach the other nodes: nats (each node\'s agent) or ssh [default: nats when the config has this node\'s [nodes.NODE.nats], else ssh]' -r -f -a "nats\t'Every node\'s agent, over Spinifex\'s NATS'
ssh\t'This node in-process, the others over OpenSSH'"
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l format -d 'Output format' -r -f -a "table\t'A hop table per direction, then the verdict and the fix'
json\t'One document (schema/path-v1.schema.json)'"
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l config -d 'The Spinifex config, found as a run finds it: its NB/SB endpoints, its [nodes.*] and this node\'s name' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l timeout -d 'The whole command\'s deadline, the other nodes\' answers included' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l probe-timeout -d 'Bound on one probe round (each node\'s DF probe takes up to 3)' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l ovs-db -d 'The local Open_vSwitch database [default: unix:/var/run/openvswitch/db.sock]' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l nb-db -d 'OVN northbound endpoints, comma-separated [default: the config\'s ovn_nb_addr]' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l sb-db -d 'OVN southbound endpoints, comma-separated [default: the config\'s ovn_sb_addr]' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l ssh-config -d 'With --via ssh: the ssh client configuration (`ssh -F FILE`)' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l ssh-user -d 'With --via ssh: the user to log in as; any user but root runs the doctor with `sudo -n`' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l remote-bin -d 'With --via ssh: the doctor on the other nodes, a name on their PATH or an absolute path' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l color -d 'When to colour: auto (on a terminal, unless NO_COLOR is set), always, never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l width -d 'Wrap text to N columns [default: the terminal\'s width; off a terminal, $COLUMNS, else 100]' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l record -d 'Also write everything this node read, and every other node\'s answer, to FILE (a bundle for --replay)' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -l replay -d 'Judge a bundle taken with `path --record`, touching nothing: the recorded question, its reads and the nodes\' answers' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path" -s V -l version -d 'Print version'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -l config -d 'This node\'s config' -r -F
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -l instance -d 'The guest: an instance this node runs' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -l eni -d 'The guest: an ENI whose tap is on this node' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -l peer -d 'The other end\'s geneve endpoint, probed when given (it must be in this node\'s peer list)' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -l size -d 'The size to probe for' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -l size-kind -d 'What the size is: a guest packet (geneve and ESP added here) or an underlay packet' -r -f -a "guest\t''
underlay\t''"
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -l timeout -d 'This node\'s deadline' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -l probe-timeout -d 'Bound on one probe round' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -l ovs-db -d 'The local Open_vSwitch database' -r
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -s h -l help -d 'Print help'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand path-facts" -s V -l version -d 'Print version'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand man" -s h -l help -d 'Print help'
complete -c spx-doctor -n "__fish_spx_doctor_using_subcommand man" -s V -l version -d 'Print version'
