_spx__doctor() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="spx__doctor"
                ;;
            spx__doctor,__complete)
                cmd="spx__doctor__subcmd____complete"
                ;;
            spx__doctor,agent)
                cmd="spx__doctor__subcmd__agent"
                ;;
            spx__doctor,completions)
                cmd="spx__doctor__subcmd__completions"
                ;;
            spx__doctor,explain)
                cmd="spx__doctor__subcmd__explain"
                ;;
            spx__doctor,list)
                cmd="spx__doctor__subcmd__list"
                ;;
            spx__doctor,man)
                cmd="spx__doctor__subcmd__man"
                ;;
            spx__doctor,path)
                cmd="spx__doctor__subcmd__path"
                ;;
            spx__doctor,path-facts)
                cmd="spx__doctor__subcmd__path__subcmd__facts"
                ;;
            spx__doctor,watch)
                cmd="spx__doctor__subcmd__watch"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        spx__doctor)
            opts="-o -v -h -V --check --skip --config --format --output --verbose --strict --color --width --timeout --sample --peer --mtu --probe-timeout --interface --ovs-db --nb-db --sb-db --for --record --replay --cluster --via --nodes --ssh-config --ssh-user --remote-bin --parallel --ovn-read-by --allow --deny --help --version list explain completions agent watch path path-facts man __complete"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --check)
                    COMPREPLY=($(compgen -W "sysctl.udp-buffers udp.rcvbuf-errors sysctl.neigh mtu.path mtu.overlay underlay.on-link ipsec.flags ipsec.xfrm ipsec.cert ipsec.daemon ipsec.policy ipsec.errors nic.offloads nic.tso nic.queues nic.rings cpu.softirq tcp.reordering qemu.tuning ovn.cluster cluster.reachable cluster.bus cluster.config-drift cluster.path-matrix cluster.sa-pairs cluster.chassis cluster.ipsec sysctl udp mtu underlay ipsec nic cpu tcp qemu ovn cluster" -- "${cur}"))
                    return 0
                    ;;
                --skip)
                    COMPREPLY=($(compgen -W "sysctl.udp-buffers udp.rcvbuf-errors sysctl.neigh mtu.path mtu.overlay underlay.on-link ipsec.flags ipsec.xfrm ipsec.cert ipsec.daemon ipsec.policy ipsec.errors nic.offloads nic.tso nic.queues nic.rings cpu.softirq tcp.reordering qemu.tuning ovn.cluster cluster.reachable cluster.bus cluster.config-drift cluster.path-matrix cluster.sa-pairs cluster.chassis cluster.ipsec sysctl udp mtu underlay ipsec nic cpu tcp qemu ovn cluster" -- "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json prometheus junit otlp" -- "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --width)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sample)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mtu)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interface)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ovs-db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nb-db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sb-db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --for)
                    COMPREPLY=($(compgen -W "enable-jumbo disable-ipsec enable-ipsec" -- "${cur}"))
                    return 0
                    ;;
                --record)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --replay)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --via)
                    COMPREPLY=($(compgen -W "nats ssh" -- "${cur}"))
                    return 0
                    ;;
                --nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssh-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssh-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --remote-bin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --parallel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ovn-read-by)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow)
                    COMPREPLY=($(compgen -W "sysctl.udp-buffers/quic-starved sysctl.udp-buffers/below-required udp.rcvbuf-errors/dropping udp.rcvbuf-errors/past-drops udp.rcvbuf-errors/quic-warning sysctl.neigh/too-small mtu.path/black-hole mtu.path/too-big mtu.path/local-mtu mtu.path/neighbour-table-full mtu.path/unreachable mtu.path/cut-short mtu.overlay/bridge-below-underlay mtu.overlay/dhcp-mtu mtu.overlay/ra-mtu mtu.overlay/tap-mtu mtu.overlay/nb-unreachable underlay.on-link/routed underlay.on-link/no-route ipsec.flags/stale-nb-ipsec ipsec.flags/missing-nb-ipsec ipsec.flags/stale-ovs-ipsec ipsec.flags/missing-ovs-ipsec ipsec.flags/db-unreachable ipsec.xfrm/leftover-sas ipsec.xfrm/ike-pending ipsec.xfrm/missing-sas ipsec.xfrm/wrong-algorithm ipsec.xfrm/stale-sas ipsec.cert/missing ipsec.cert/unusable ipsec.cert/expired ipsec.cert/not-yet-valid ipsec.cert/untrusted-chain ipsec.cert/key-mismatch ipsec.cert/wrong-name ipsec.cert/cn-unreadable ipsec.cert/missing-eku ipsec.cert/ca-not-trusted ipsec.cert/key-exposed ipsec.cert/ovs-pointers ipsec.cert/expires-soon ipsec.cert/db-unreachable ipsec.daemon/not-running ipsec.daemon/ike-daemon-running ipsec.daemon/not-installed ipsec.daemon/monitor-running ipsec.daemon/stale-pid-file ipsec.daemon/pid-file-other-program ipsec.policy/plaintext ipsec.policy/no-sa ipsec.policy/template-mismatch ipsec.policy/blocked ipsec.policy/leftover-policies ipsec.errors/dropping nic.offloads/tunnel-offload-off nic.offloads/tunnel-offload-fixed nic.offloads/gso-partial-off nic.offloads/offload-off nic.offloads/offload-fixed nic.tso/no-tso nic.tso/little-tso nic.queues/unused-queues nic.rings/shallow-ring nic.rings/virtio-queue-size cpu.softirq/esp-funnel cpu.softirq/receive-funnel cpu.softirq/concentrated tcp.reordering/multiqueue-reordering tcp.reordering/reordering-or-loss qemu.tuning/no-vhost qemu.tuning/not-tap qemu.tuning/wrong-queues qemu.tuning/tap-queue-mismatch qemu.tuning/not-virtio qemu.tuning/no-mq qemu.tuning/wrong-vectors qemu.tuning/small-rx-queue qemu.tuning/wrong-host-mtu qemu.tuning/no-iothread qemu.tuning/wrong-cache qemu.tuning/wrong-num-queues qemu.tuning/unparsable-cmdline qemu.tuning/qmp-silent ovn.cluster/no-leader ovn.cluster/several-leaders ovn.cluster/not-clustered ovn.cluster/foreign-member ovn.cluster/member-down ovn.cluster/member-disconnected ovn.cluster/missing-chassis ovn.cluster/stale-chassis ovn.cluster/encap-mismatch ovn.cluster/chassis-id-mismatch ovn.cluster/lagging ovn.cluster/member-count ovn.cluster/db-unreachable ovn.cluster/local-unreadable cluster.reachable/unanswered cluster.reachable/no-nodes cluster.reachable/other-version cluster.bus/duplicate-node cluster.config-drift/ipsec-enabled-drift cluster.config-drift/underlay-mtu-drift cluster.config-drift/node-list-drift cluster.config-drift/ipsec-ca-drift cluster.config-drift/config-unknown cluster.config-drift/site-checks-drift cluster.config-drift/version-drift cluster.path-matrix/cut-off cluster.path-matrix/asymmetric cluster.path-matrix/path-too-small cluster.path-matrix/neighbour-table-full cluster.path-matrix/not-measured cluster.sa-pairs/unpaired cluster.sa-pairs/algorithm-mismatch cluster.sa-pairs/foreign-peer cluster.sa-pairs/ipsec-disagrees cluster.sa-pairs/not-judged cluster.chassis/missing-chassis cluster.chassis/encap-mismatch cluster.chassis/not-judged cluster.ipsec/black-holed cluster.ipsec/not-up cluster.ipsec/ipsec-disagrees cluster.ipsec/not-judged" -- "${cur}"))
                    return 0
                    ;;
                --deny)
                    COMPREPLY=($(compgen -W "udp.rcvbuf-errors/past-drops udp.rcvbuf-errors/quic-warning sysctl.neigh/too-small underlay.on-link/routed ipsec.xfrm/stale-sas ipsec.cert/expires-soon ipsec.daemon/monitor-running ipsec.daemon/stale-pid-file ipsec.daemon/pid-file-other-program nic.offloads/offload-off nic.offloads/offload-fixed nic.tso/little-tso nic.queues/unused-queues nic.rings/shallow-ring nic.rings/virtio-queue-size cpu.softirq/concentrated tcp.reordering/multiqueue-reordering tcp.reordering/reordering-or-loss ovn.cluster/lagging ovn.cluster/member-count cluster.reachable/other-version cluster.config-drift/site-checks-drift cluster.config-drift/version-drift" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        spx__subcmd__doctor__subcmd____complete)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        spx__subcmd__doctor__subcmd__agent)
            opts="-h -V --config --runs-per-minute --interval --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --runs-per-minute)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        spx__subcmd__doctor__subcmd__completions)
            opts="-h -V --help --version bash zsh fish"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        spx__subcmd__doctor__subcmd__explain)
            opts="-h -V --config --color --width --help --version sysctl.udp-buffers udp.rcvbuf-errors sysctl.neigh mtu.path mtu.overlay underlay.on-link ipsec.flags ipsec.xfrm ipsec.cert ipsec.daemon ipsec.policy ipsec.errors nic.offloads nic.tso nic.queues nic.rings cpu.softirq tcp.reordering qemu.tuning ovn.cluster cluster.reachable cluster.bus cluster.config-drift cluster.path-matrix cluster.sa-pairs cluster.chassis cluster.ipsec sysctl.udp-buffers/ok sysctl.udp-buffers/quic-starved sysctl.udp-buffers/below-required udp.rcvbuf-errors/ok udp.rcvbuf-errors/dropping udp.rcvbuf-errors/past-drops udp.rcvbuf-errors/quic-warning sysctl.neigh/ok sysctl.neigh/too-small mtu.path/ok mtu.path/black-hole mtu.path/too-big mtu.path/local-mtu mtu.path/neighbour-table-full mtu.path/unreachable mtu.path/cut-short mtu.overlay/ok mtu.overlay/bridge-below-underlay mtu.overlay/dhcp-mtu mtu.overlay/ra-mtu mtu.overlay/tap-mtu mtu.overlay/nb-unreachable underlay.on-link/ok underlay.on-link/routed-encrypted underlay.on-link/routed underlay.on-link/no-route ipsec.flags/ok ipsec.flags/stale-nb-ipsec ipsec.flags/missing-nb-ipsec ipsec.flags/stale-ovs-ipsec ipsec.flags/missing-ovs-ipsec ipsec.flags/db-unreachable ipsec.xfrm/ok ipsec.xfrm/armed ipsec.xfrm/leftover-sas ipsec.xfrm/ike-pending ipsec.xfrm/missing-sas ipsec.xfrm/wrong-algorithm ipsec.xfrm/stale-sas ipsec.cert/ok ipsec.cert/missing ipsec.cert/unusable ipsec.cert/expired ipsec.cert/not-yet-valid ipsec.cert/untrusted-chain ipsec.cert/key-mismatch ipsec.cert/wrong-name ipsec.cert/cn-unreadable ipsec.cert/missing-eku ipsec.cert/ca-not-trusted ipsec.cert/key-exposed ipsec.cert/ovs-pointers ipsec.cert/expires-soon ipsec.cert/db-unreachable ipsec.daemon/ok ipsec.daemon/not-running ipsec.daemon/ike-daemon-running ipsec.daemon/not-installed ipsec.daemon/monitor-running ipsec.daemon/stale-pid-file ipsec.daemon/pid-file-other-program ipsec.policy/ok ipsec.policy/armed ipsec.policy/plaintext ipsec.policy/no-sa ipsec.policy/template-mismatch ipsec.policy/blocked ipsec.policy/leftover-policies ipsec.errors/ok ipsec.errors/history ipsec.errors/dropping nic.offloads/ok nic.offloads/tunnel-offload-off nic.offloads/tunnel-offload-fixed nic.offloads/gso-partial-off nic.offloads/offload-off nic.offloads/offload-fixed nic.tso/ok nic.tso/no-tso nic.tso/little-tso nic.queues/ok nic.queues/unused-queues nic.rings/ok nic.rings/shallow-ring nic.rings/virtio-queue-size cpu.softirq/ok cpu.softirq/esp-funnel cpu.softirq/receive-funnel cpu.softirq/concentrated tcp.reordering/ok tcp.reordering/multiqueue-reordering tcp.reordering/reordering-or-loss qemu.tuning/ok qemu.tuning/no-vhost qemu.tuning/not-tap qemu.tuning/wrong-queues qemu.tuning/tap-queue-mismatch qemu.tuning/not-virtio qemu.tuning/no-mq qemu.tuning/wrong-vectors qemu.tuning/small-rx-queue qemu.tuning/wrong-host-mtu qemu.tuning/no-iothread qemu.tuning/wrong-cache qemu.tuning/wrong-num-queues qemu.tuning/unparsable-cmdline qemu.tuning/qmp-silent ovn.cluster/ok ovn.cluster/no-leader ovn.cluster/several-leaders ovn.cluster/not-clustered ovn.cluster/foreign-member ovn.cluster/member-down ovn.cluster/member-disconnected ovn.cluster/missing-chassis ovn.cluster/stale-chassis ovn.cluster/encap-mismatch ovn.cluster/chassis-id-mismatch ovn.cluster/lagging ovn.cluster/member-count ovn.cluster/db-unreachable ovn.cluster/local-unreadable cluster.reachable/ok cluster.reachable/unanswered cluster.reachable/no-nodes cluster.reachable/other-version cluster.bus/ok cluster.bus/duplicate-node cluster.config-drift/ok cluster.config-drift/ipsec-enabled-drift cluster.config-drift/underlay-mtu-drift cluster.config-drift/node-list-drift cluster.config-drift/ipsec-ca-drift cluster.config-drift/config-unknown cluster.config-drift/site-checks-drift cluster.config-drift/version-drift cluster.path-matrix/ok cluster.path-matrix/cut-off cluster.path-matrix/asymmetric cluster.path-matrix/path-too-small cluster.path-matrix/neighbour-table-full cluster.path-matrix/not-measured cluster.sa-pairs/ok cluster.sa-pairs/unpaired cluster.sa-pairs/algorithm-mismatch cluster.sa-pairs/foreign-peer cluster.sa-pairs/ipsec-disagrees cluster.sa-pairs/not-judged cluster.chassis/ok cluster.chassis/missing-chassis cluster.chassis/encap-mismatch cluster.chassis/not-judged cluster.ipsec/ok cluster.ipsec/black-holed cluster.ipsec/not-up cluster.ipsec/ipsec-disagrees cluster.ipsec/not-judged path path/ok path/black-hole path/guest-mtu-above-path path/icmp-blocked path/asymmetric path/unresolved"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --config)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --width)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        spx__subcmd__doctor__subcmd__list)
            opts="-h -V --codes --config --color --width --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --config)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --width)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        spx__subcmd__doctor__subcmd__man)
            opts="-h -V --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        spx__subcmd__doctor__subcmd__path)
            opts="-h -V --size --vpc --via --format --config --timeout --probe-timeout --ovs-db --nb-db --sb-db --ssh-config --ssh-user --remote-bin --color --width --record --replay --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --vpc)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via)
                    COMPREPLY=($(compgen -W "nats ssh" -- "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json" -- "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ovs-db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nb-db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sb-db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssh-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssh-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --remote-bin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --width)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --record)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --replay)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        spx__subcmd__doctor__subcmd__path__subcmd__facts)
            opts="-h -V --config --instance --eni --peer --size --size-kind --timeout --probe-timeout --ovs-db --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --eni)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size-kind)
                    COMPREPLY=($(compgen -W "guest underlay" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ovs-db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        spx__subcmd__doctor__subcmd__watch)
            opts="-v -h -V --config --format --once --verbose --color --width --timeout --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json" -- "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --width)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _spx__doctor -o nosort -o bashdefault -o default spx-doctor
else
    complete -F _spx__doctor -o bashdefault -o default spx-doctor
fi
