//! A real OVN in the kernel lab, for `spx-doctor path`: three Spinifex nodes
//! with their own Open vSwitch, ovn-controller and geneve tunnels, Debian's
//! ovn-central, the topology as Spinifex writes it, and guests that are
//! real QEMU processes started with Spinifex's command line.
//!
//! **Where, and why there.** Debian's stock kernel under TCG
//! ([`super::vm`]), one boot for every case. The IPsec case needs real ESP,
//! which this machine's kernel does not have, so the kernel lab is needed
//! anyway; it is also the production datapath (the openvswitch kernel
//! module, `genev_sys_6081`, xfrm), whose too-big behaviour the verdicts are
//! about. Measured on this 2-core machine: the boot 11-12 s, the fabric
//! 2 s, ovn-central and three nodes to three `Chassis` rows 9 s, the
//! topology 3 s, a guest 4-6 s.
//!
//! **The same lab on this host** ([`OvnLab::boot_userspace`]): the same
//! scripts, nodes, topology and guests, in namespaces of a private view of
//! this host ([`Vm::on_host`]) with OVS's userspace datapath, for
//! everything but IPsec and the asymmetric case (whose truth is the
//! kernel's datapath), and for timing the doctor at the host's own speed
//! (`bench/path.sh`). Up in 13 s, against about 45 s under TCG.
//!
//! **The nodes** `spx1`..`spx3` (the network namespace, OVS `system-id`,
//! `Chassis` name and host name are the node's name). Each is a network
//! namespace with its own pid, mount and UTS namespaces, held by one
//! process (`/run/lab/files/ovn-lab-node-init`) and entered with
//! [`OvnLab::enter`]: its `/var/run` (OVS's `db.sock`, ovn-controller), its
//! `/run/spinifex` (QEMU's pid files and QMP sockets), its `/etc/spinifex`
//! and `/etc/passwd` (`ip netns exec` binds `/etc/netns/NODE`), its `/proc`
//! (a node's doctor sees its own QEMUs only, as on separate hosts).
//! - underlay (the vpc plane): `eth1`, a port of the Linux bridge `br-vpc`,
//!   which holds `198.18.0.N/24`, the node's `ovn-encap-ip`; plugged into
//!   switch port `pN` of the namespace `sw` (bridge `br0`);
//! - wan: `eth0`, `198.19.0.N/24`, on a switch of its own (`wsw`) at 1500:
//!   sshd and OVN's databases live there, so a black hole on the underlay
//!   never cuts the control plane, as on a node with one NIC per plane.
//!
//! **A switch port** at MTU M drops what is larger without a word. Debian
//! 6.1's bridge forwards 4 bytes more than a port's MTU (room for a VLAN
//! tag, `is_skb_forwardable`; measured: a port at 1500 carried 1504), so
//! each port below 9000 also gets an nftables bridge rule dropping frames
//! over M, both ways: a real 1500-byte switch port, byte for byte.
//!
//! **ovn-central** runs on spx1: NB at `tcp:198.19.0.1:6641`, SB at
//! `tcp:198.19.0.1:6642` (and their unix sockets in spx1's `/var/run/ovn`),
//! ovn-northd.
//!
//! **The topology**, as `spinifex/network/topology` writes it: router
//! `vpc-<vpc>`, switch `subnet-<subnet>` per subnet, router port
//! `rtr-<subnet>` with the gateway `.1` and `utils.HashMAC(subnet)`, its peer
//! `rtr-port-<subnet>` (type router), a `DHCP_Options` row per subnet
//! (`server_id`, `server_mac`, `lease_time` 3600, `router`, `dns_server`,
//! `mtu`), each ENI's `port-<eni>` with `addresses` and `port_security`
//! `"<mac> <ip>"`, `spinifex:eni_id`/`subnet_id`/`vpc_id` and the subnet's
//! `dhcpv4_options`; a port group per security group (`sg_…`) with
//! `network/policy/sg.go`'s ACLs (900 deny-ingress, 800 deny-egress, the
//! 1050 DHCP allows, the tenant rules at 1000 `allow-related`).
//!
//! **A guest** is `qemu-system-x86_64` with the daemon's arguments
//! (`spinifex/vm`: `-pidfile`, two `-qmp` sockets named after the instance,
//! the serial chardev, `-smp`, `-m`, the iothread and boot disk, the
//! virtio-net device with `host_mtu` and `rx_queue_size=1024`, `-netdev
//! tap,…,vhost=on`, `-M q35`), paused (`-S`, the lab's one addition) with a
//! null-co disk; its tap (`tap` + the ENI id without `eni-`, cut to 15) is
//! made first, at the guest's MTU, on br-int with `iface-id=port-<eni>` and
//! `attached-mac`. The daemon of [`super::ovn_lab_daemon`] relays QEMU's own
//! tap to a namespace `g<instance>` (the guest's IP stack, its interface
//! `gnic` at 9000 so that probes can go past what the guest was told):
//! every frame a test sends crosses the QEMU's real tap, br-int, the geneve
//! tunnel, the underlay and the peer's tap.
//!
//! **The truth** ([`OvnLab::probe`], [`OvnLab::largest`]): DF echo requests
//! of exact sizes from one guest namespace, seen arriving (or not) in the
//! other, with what came back to the sender (the reply, or "fragmentation
//! needed" and its MTU). One direction at a time.
//!
//! Nothing leaves the guest; the guest dies with the [`Vm`].

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::nats::{nats_tables, pki, TOKEN};
use super::sshd::SshFiles;
use super::vm::{self, quote, GuestOutput, Vm, VmOptions, GUEST_FILES};

/// What the guest loads: the fabric, OVS's datapath and geneve, ESP, the
/// switch's and nodes' nftables, QEMU's taps and vhost-net.
pub const MODULES: [&str; 13] = [
    "veth",
    "bridge",
    "tun",
    "vhost_net",
    // The openvswitch datapath needs crc32c.
    "crc32c_generic",
    "openvswitch",
    "geneve",
    "xfrm_user",
    "esp4",
    // ESP's IV generator needs the DRBG, which needs jitter entropy.
    "jitterentropy_rng",
    "drbg",
    "nf_tables",
    "nft_chain_nat",
];

/// What [`OvnLab::boot_userspace`] runs from this host.
const USERSPACE_TOOLS: [&str; 9] = [
    "/usr/bin/unshare",
    "/usr/bin/nsenter",
    "/usr/sbin/ovs-vswitchd",
    "/usr/sbin/ovsdb-server",
    "/usr/bin/ovn-controller",
    "/usr/bin/ovn-northd",
    "/usr/sbin/sshd",
    "/usr/sbin/nft",
    "/usr/bin/qemu-system-x86_64",
];

/// The VPC every guest is in.
pub const VPC: &str = "vpc-0f3a9c2e1b7d45a60";

/// A lab node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// 1-based.
    pub n: u32,
    pub name: &'static str,
}

pub const NODES: [Node; 3] = [
    Node { n: 1, name: "spx1" },
    Node { n: 2, name: "spx2" },
    Node { n: 3, name: "spx3" },
];

impl Node {
    /// Its underlay address: `ovn-encap-ip`, the Encap row's `ip`.
    pub fn underlay(&self) -> String {
        format!("198.18.0.{}", self.n)
    }

    /// Its wan address: sshd, and on spx1 NB and SB.
    pub fn wan(&self) -> String {
        format!("198.19.0.{}", self.n)
    }

    /// Its port on the underlay switch.
    pub fn port(&self) -> String {
        format!("p{}", self.n)
    }
}

/// A subnet of the VPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subnet {
    pub id: &'static str,
    /// `10.0.K`: the subnet is `10.0.K.0/24`, its gateway `10.0.K.1`.
    pub prefix: &'static str,
    /// `utils.HashMAC(id)`: the router port's MAC and the DHCP server's.
    pub router_mac: &'static str,
}

pub const S1: Subnet = Subnet {
    id: "subnet-0a11c0ffee0000001",
    prefix: "10.0.1",
    router_mac: "02:43:8e:14:08:22",
};
pub const S2: Subnet = Subnet {
    id: "subnet-0b22c0ffee0000002",
    prefix: "10.0.2",
    router_mac: "02:ad:6a:38:7b:c3",
};
pub const SUBNETS: [Subnet; 2] = [S1, S2];

impl Subnet {
    pub fn gateway(&self) -> String {
        format!("{}.1", self.prefix)
    }
    pub fn cidr(&self) -> String {
        format!("{}.0/24", self.prefix)
    }
    pub fn switch(&self) -> String {
        format!("subnet-{}", self.id)
    }
    pub fn router_port(&self) -> String {
        format!("rtr-{}", self.id)
    }
}

/// A security group: its port group is the id with `-` turned to `_`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecurityGroup(pub &'static str);

impl SecurityGroup {
    pub fn port_group(&self) -> String {
        self.0.replace('-', "_")
    }
}

/// Every guest but A: in from the whole VPC, out to anywhere.
pub const SG_VPC: SecurityGroup = SecurityGroup("sg-0d0d0c0ffee0d0d00");
/// Guest A's own group, whose rules the routed cases change.
pub const SG_A: SecurityGroup = SecurityGroup("sg-0a5a5c0ffee5a5a50");

/// One rule of a security group, as `network/policy` turns an AWS-style
/// rule into an ACL at priority 1000.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub ingress: bool,
    /// `"icmp"`, `"tcp"`, `"udp"` or `"-1"` (all).
    pub protocol: &'static str,
    pub port: Option<u16>,
    pub cidr: &'static str,
    /// `allow-stateless` instead of Spinifex's `allow-related`: not what
    /// Spinifex writes; the one way an SG really keeps ICMP errors out.
    pub stateless: bool,
}

impl Rule {
    pub fn ingress(protocol: &'static str, port: Option<u16>, cidr: &'static str) -> Rule {
        Rule {
            ingress: true,
            protocol,
            port,
            cidr,
            stateless: false,
        }
    }

    pub fn egress_all() -> Rule {
        Rule {
            ingress: false,
            protocol: "-1",
            port: None,
            cidr: "0.0.0.0/0",
            stateless: false,
        }
    }

    pub fn stateless(self) -> Rule {
        Rule {
            stateless: true,
            ..self
        }
    }

    /// The ACL's match, as BuildIngressACLMatch / BuildEgressACLMatch write it.
    fn acl_match(&self, pg: &str) -> String {
        let mut parts = vec![
            if self.ingress {
                format!("outport == @{pg}")
            } else {
                format!("inport == @{pg}")
            },
            "ip4".to_owned(),
        ];
        match (self.protocol, self.port) {
            ("icmp", _) => parts.push("icmp4".into()),
            (p @ ("tcp" | "udp"), Some(port)) => parts.push(format!("{p}.dst == {port}")),
            (p @ ("tcp" | "udp"), None) => parts.push(p.into()),
            _ => {}
        }
        if self.cidr != "0.0.0.0/0" {
            let side = if self.ingress { "src" } else { "dst" };
            parts.push(format!("ip4.{side} == {}", self.cidr));
        }
        parts.join(" && ")
    }
}

/// The rules of [`SG_VPC`] (and A's to begin with).
pub fn vpc_rules() -> Vec<Rule> {
    vec![Rule::ingress("-1", None, "10.0.0.0/16"), Rule::egress_all()]
}

/// A guest: an instance with one ENI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guest {
    pub instance: &'static str,
    pub eni: &'static str,
    /// `utils.HashMAC(eni)`.
    pub mac: &'static str,
    pub ip: &'static str,
    pub subnet: Subnet,
    pub node: Node,
    pub sg: SecurityGroup,
}

pub const A: Guest = Guest {
    instance: "i-0a1b2c3d4e5f60718",
    eni: "eni-0aa1f3c9d2b7e4051",
    mac: "02:4e:d5:6b:16:52",
    ip: "10.0.1.10",
    subnet: S1,
    node: NODES[0],
    sg: SG_A,
};
pub const B: Guest = Guest {
    instance: "i-0b2c3d4e5f6071829",
    eni: "eni-0bb2e4d0c3a8f5162",
    mac: "02:f4:56:2e:17:41",
    ip: "10.0.1.11",
    subnet: S1,
    node: NODES[1],
    sg: SG_VPC,
};
pub const C: Guest = Guest {
    instance: "i-0c3d4e5f60718293a",
    eni: "eni-0cc3a5e1d4b9a6273",
    mac: "02:e1:38:53:c8:8d",
    ip: "10.0.2.12",
    subnet: S2,
    node: NODES[2],
    sg: SG_VPC,
};
/// On A's node.
pub const D: Guest = Guest {
    instance: "i-0d4e5f60718293a4b",
    eni: "eni-0dd4b6f2e5c0a7384",
    mac: "02:cd:3d:ef:d7:8c",
    ip: "10.0.1.13",
    subnet: S1,
    node: NODES[0],
    sg: SG_VPC,
};
pub const GUESTS: [Guest; 4] = [A, B, C, D];

/// An ENI whose port exists in NB and is bound nowhere (no tap, no
/// instance): a launch that never finished.
pub const UNBOUND_ENI: &str = "eni-0ee5c7a3f6d1b8495";
const UNBOUND_MAC: &str = "02:4e:5a:80:61:9c";
const UNBOUND_IP: &str = "10.0.1.14";

impl Guest {
    /// `TapDeviceName`: `tap` + the ENI id without `eni-`, cut to 15.
    pub fn tap(&self) -> String {
        let mut t = format!("tap{}", self.eni.trim_start_matches("eni-"));
        t.truncate(15);
        t
    }

    /// The logical switch port.
    pub fn port(&self) -> String {
        format!("port-{}", self.eni)
    }

    /// The namespace of the guest's IP stack.
    pub fn netns(&self) -> String {
        format!("g{}", self.instance)
    }
}

/// How long a probe of the truth waits for its frame to arrive (a frame
/// that arrives does so in milliseconds, even under emulation, once the
/// datapath has its flows: [`OvnLab::warm`]).
pub const PROBE_WAIT_MS: u64 = 500;

/// The NB and SB endpoints every node's config names.
pub const NB: &str = "tcp:198.19.0.1:6641";
pub const SB: &str = "tcp:198.19.0.1:6642";
/// The unix sockets on spx1.
const NB_UNIX: &str = "unix:/var/run/ovn/ovnnb_db.sock";
const SB_UNIX: &str = "unix:/var/run/ovn/ovnsb_db.sock";

/// Where the doctor is placed for the guest (the shared directory), and
/// where every node runs it from: a copy in the guest's own memory (its
/// root overlay's tmpfs), so that a run does not page a 250 MB debug binary
/// in over 9p under emulation (measured: a first `path` run over ssh spent
/// over 60 s starting the binary on three nodes at once).
const BIN_DIR: &str = "bin";
pub const GUEST_BIN: &str = "/opt/spx-lab/bin";

/// The holder of a node: its pid, mount and UTS namespaces, inside `ip
/// netns exec`'s (which bound /etc/netns/NODE over /etc).
const NODE_INIT: &str = r#"#!/bin/sh
# Holder of lab node $1 (tests/support/ovn_lab.rs): its own pid, mount and
# UTS namespaces inside the network namespace (ip netns exec bound
# /etc/netns/$1/* over /etc): /var/run and /run/spinifex are the node's,
# /proc shows the node's processes only.
node=$1
echo $$ >/run/spx-nodes/$node.unshare
exec unshare --pid --fork --mount --uts --propagation private --mount-proc /bin/sh -c '
mount --bind "/run/spx-nodes/$0" /var/run
mount --bind "/run/spx-nodes/$0/spinifex" /run/spinifex
hostname "$0"
touch "/run/spx-nodes/$0.ready"
# PID 1 of the node: it reaps what the daemons and QEMUs of the node leave
# (waiting on a job, dash reaps every child that ends meanwhile).
while :; do sleep 5 & wait; done' "$node"
"#;

/// Runs a command as node `$1`.
const ENTER: &str = r#"#!/bin/sh
# Run a command as lab node $1 (tests/support/ovn_lab.rs): its network,
# mount, UTS and pid namespaces, entered through its holder process.
node=$1
shift
exec nsenter -t "$(cat /run/spx-nodes/$node.holder)" -n -m -u -p -- "$@"
"#;

#[allow(clippy::disallowed_macros)] // timings belong in the test log
pub fn note(line: &str) {
    eprintln!("ovn lab: {line}");
}

/// What one probe showed (see [`super::ovn_lab_daemon`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    pub size: u32,
    pub arrived: bool,
    pub frag_needed: Option<u32>,
    /// How long after its send the "fragmentation needed" came, in ms.
    pub frag_ms: Option<u64>,
    pub reply: bool,
}

impl Sent {
    fn from_json(v: &Value) -> Sent {
        Sent {
            size: v["size"].as_u64().expect("size") as u32,
            arrived: v["arrived"].as_bool().expect("arrived"),
            frag_needed: v["frag_needed"].as_u64().map(|m| m as u32),
            frag_ms: v["frag_ms"].as_u64(),
            reply: v["reply"].as_bool().expect("reply"),
        }
    }
}

/// A ladder's answer: the largest size that crossed, and how the first
/// size that did not was seen.
#[derive(Clone, Debug)]
pub struct Ladder {
    pub largest: u32,
    pub refused: Option<Sent>,
    pub probes: usize,
}

/// The state the lab keeps to rewrite its rules.
#[derive(Clone, Debug)]
struct Fabric {
    /// Switch port MTU per node.
    port_mtu: [u32; 3],
}

/// The lab, up. Dropping it kills the guest and everything in it.
pub struct OvnLab {
    pub vm: Vm,
    /// OVS's userspace datapath on this host ([`OvnLab::boot_userspace`])
    /// rather than the kernel's in the kernel lab.
    pub userspace: bool,
    pub files: SshFiles,
    daemon: PathBuf,
    next: Cell<u64>,
    /// How long a probe waits for its frame, or for the sender to be told
    /// (ms): [`OvnLab::set_probe_wait`].
    wait_ms: Cell<u64>,
    fabric: RefCell<Fabric>,
    /// Every node's config as last set: IPsec, the underlay MTU, NB, SB.
    config: RefCell<(bool, u32, String, String)>,
    /// Whether the bus is up ([`OvnLab::start_bus`]): then every node's
    /// config names it, and `path` asks the other nodes over it.
    bus: Cell<bool>,
    /// Each security group's tenant rules, as they are in NB.
    rules: RefCell<Vec<(SecurityGroup, Vec<Rule>)>>,
    /// (phase, seconds) of the bring-up and every later step.
    pub timings: RefCell<Vec<(String, f64)>>,
}

impl OvnLab {
    /// Boot the guest and bring the lab up (every guest running and
    /// reachable); `None` when the kernel lab is skipped here.
    pub fn boot(test: &str) -> Option<OvnLab> {
        let image = vm::lab_or_skip(test)?;
        let started = Instant::now();
        let vm = Self::boot_guest(image);
        let lab = Self::new(vm, false);
        lab.timed("boot", started);
        lab.bring_up();
        Some(lab)
    }

    /// The same lab on this host, with OVS's userspace datapath (`netdev`)
    /// in place of the kernel module this host's kernel lacks, in
    /// namespaces of its own ([`Vm::on_host`]): what the kernel lab
    /// measures under emulation, at the host's own speed. Every node's
    /// br-int is `netdev`, and its underlay bridge `br-vpc` is an OVS
    /// bridge of the same datapath holding the encap IP with `eth1` on it
    /// (OVS's native tunnelling: the geneve header is pushed and popped in
    /// ovs-vswitchd, and the frame leaves by `eth1`'s packet socket). No
    /// xfrm touches that frame, so no IPsec case runs here; QEMU's tap is
    /// `vhost=off` (no vhost-net on this host). `None`, with the reason
    /// printed, where root or a tool is missing (a failure under
    /// `CI=true`).
    #[allow(clippy::disallowed_macros)] // the skip reason belongs in the test log
    pub fn boot_userspace(test: &str) -> Option<OvnLab> {
        if !super::root_or_skip(test) {
            return None;
        }
        let missing: Vec<&str> = USERSPACE_TOOLS
            .iter()
            .copied()
            .filter(|t| !Path::new(t).exists())
            .collect();
        if !missing.is_empty() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: the userspace OVN lab is required under CI=true; missing {missing:?}"
            );
            println!("skipping {test}: the userspace OVN lab needs {missing:?}");
            return None;
        }
        let started = Instant::now();
        let lab = Self::new(Vm::on_host(Duration::from_secs(900)), true);
        lab.timed("namespaces", started);
        lab.bring_up();
        Some(lab)
    }

    fn new(vm: Vm, userspace: bool) -> OvnLab {
        OvnLab {
            daemon: vm.files_dir().join("ovnlab"),
            files: SshFiles::new(&vm.files_dir(), Path::new(GUEST_FILES)),
            vm,
            userspace,
            next: Cell::new(1),
            wait_ms: Cell::new(PROBE_WAIT_MS),
            fabric: RefCell::new(Fabric {
                port_mtu: [9000; 3],
            }),
            config: RefCell::new((false, 9000, NB.to_owned(), SB.to_owned())),
            bus: Cell::new(false),
            rules: RefCell::new(vec![(SG_VPC, vpc_rules()), (SG_A, vpc_rules())]),
            timings: RefCell::new(Vec::new()),
        }
    }

    fn boot_guest(image: &vm::Image) -> Vm {
        let mut opts = VmOptions {
            memory_mb: 1536,
            cpus: 2,
            ..VmOptions::default()
        }
        .modules(&MODULES);
        // Four QEMUs, three OVS and ovn-controller, ovn-central, sshd and
        // the doctor's runs under emulation: generous, never endless.
        opts.hard_limit = Duration::from_secs(1500);
        Vm::boot(image, opts)
    }

    fn timed(&self, phase: &str, since: Instant) {
        let s = since.elapsed().as_secs_f64();
        note(&format!("{phase}: {s:.1}s"));
        self.timings.borrow_mut().push((phase.to_owned(), s));
    }

    fn bring_up(&self) {
        let t = Instant::now();
        self.place_files();
        self.vm.ok(&fabric_script(self.userspace));
        self.timed("fabric and node namespaces", t);

        let t = Instant::now();
        self.vm.ok(&self.ovn_script());
        assert!(
            self.vm.wait_until_every(
                &format!(
                    "[ \"$({} ovn-sbctl --db={SB_UNIX} --bare --columns=name list Chassis | grep -c spx)\" = 3 ]",
                    self.enter("spx1")
                ),
                Duration::from_secs(120),
                "0.3"
            ),
            "three Chassis rows: {}",
            self.vm
                .sh("tail -5 /run/spx-nodes/spx*/ovn/ovn-controller.log")
                .stdout
        );
        self.timed("ovn-central and 3 nodes (3 Chassis)", t);

        let t = Instant::now();
        self.nbctl(&topology_commands());
        self.timed("NB topology", t);

        let t = Instant::now();
        self.start_daemon();
        self.start_guests(&GUESTS, 8942);
        // Every port bound and every chassis' flows in place.
        self.nbctl(&["--wait=hv", "--timeout=120", "sync"].map(str::to_owned));
        self.warm(&GUESTS);
        self.timed("4 QEMU guests, relays, flows", t);

        let t = Instant::now();
        self.start_sshd();
        self.timed("sshd on 3 nodes", t);
    }

    /// The guest command prefix that runs a command as `node`.
    pub fn enter(&self, node: &str) -> String {
        format!("sh {GUEST_FILES}/spx-node {node}")
    }

    /// Run `script` with the guest's sh as `node`: its stdout, or panic.
    pub fn on(&self, node: &str, script: &str) -> String {
        self.vm
            .ok(&format!("{} sh -c {}", self.enter(node), quote(script)))
    }

    /// `ovn-nbctl` on spx1 with these arguments (one transaction).
    pub fn nbctl(&self, args: &[String]) -> String {
        let line: Vec<String> = args.iter().map(|a| quote(a)).collect();
        self.vm.ok(&format!(
            "{} ovn-nbctl --db={NB_UNIX} {}",
            self.enter("spx1"),
            line.join(" ")
        ))
    }

    /// `ovn-sbctl` on spx1.
    pub fn sbctl(&self, args: &[&str]) -> String {
        let line: Vec<String> = args.iter().map(|a| quote(a)).collect();
        self.vm.ok(&format!(
            "{} ovn-sbctl --db={SB_UNIX} {}",
            self.enter("spx1"),
            line.join(" ")
        ))
    }

    /// Node configs, the node scripts, the doctor on the nodes' PATH, the
    /// ssh files: where the guest sees them.
    fn place_files(&self) {
        self.vm.file("ovn-lab-node-init", NODE_INIT);
        self.vm.file("spx-node", ENTER);
        let dir = self.vm.files_dir();
        std::fs::create_dir_all(dir.join(BIN_DIR)).unwrap();
        // The doctor under test (a benchmark may name another build),
        // without its DWARF sections (`strip --strip-debug`: the same code
        // and symbols, a quarter of the bytes to copy in).
        let bin = std::env::var_os("SPX_DOCTOR_BIN").unwrap_or_else(|| super::bin().into());
        let placed = dir.join(BIN_DIR).join("spx-doctor");
        let stripped = std::process::Command::new("strip")
            .arg("--strip-debug")
            .arg("-o")
            .arg(&placed)
            .arg(&bin)
            .status()
            .is_ok_and(|s| s.success());
        if !stripped {
            std::fs::copy(&bin, &placed).expect("copy the doctor for the guest");
        }
        let wans: Vec<String> = NODES.iter().map(Node::wan).collect();
        // A lab setting, not the doctor's: OpenSSH 9's default key exchange
        // costs about 4 s of emulated CPU per connection, this one about 1 s.
        self.files
            .hosts(&wans, &["KexAlgorithms curve25519-sha256"]);
        self.vm.file("passwd", &self.files.passwd());
        for (i, node) in NODES.iter().enumerate() {
            self.vm.file(
                &format!("spinifex-{}.toml", node.name),
                &node_config(node.name, false, 9000, NB, SB),
            );
            self.files.sshd_config(i, &node.wan(), GUEST_BIN);
        }
    }

    /// Every node's `/etc/spinifex/spinifex.toml`: IPsec and the underlay
    /// MTU as given, NB and SB as `nb`/`sb`.
    pub fn set_config(&self, ipsec: bool, underlay_mtu: u32, nb: &str, sb: &str) {
        *self.config.borrow_mut() = (ipsec, underlay_mtu, nb.to_owned(), sb.to_owned());
        let mut script = String::new();
        for node in NODES {
            let mut text = node_config(node.name, ipsec, underlay_mtu, nb, sb);
            if self.bus.get() {
                let names: Vec<String> = NODES.iter().map(|n| n.name.to_owned()).collect();
                text += &nats_tables(
                    &names,
                    &format!("{}:4222", NODES[0].wan()),
                    &format!("{GUEST_FILES}/nats/ca.pem"),
                    TOKEN,
                );
            }
            let f = self.vm.file(&format!("spinifex-{}.toml", node.name), &text);
            let _ = writeln!(
                script,
                "cp {f} /etc/netns/{}/spinifex/spinifex.toml",
                node.name
            );
        }
        self.vm.ok(&script);
    }

    /// Spinifex's bus: nats-server on spx1's wan address (TLS, token, as
    /// Spinifex's nats.conf), every node's config naming it, and `spx-doctor
    /// agent` on every node, connected. From here `path` asks the other
    /// nodes over NATS (its default where the config names the bus), not
    /// ssh. [`OvnLab::stop_bus`] undoes it.
    pub fn start_bus(&self) {
        let t = Instant::now();
        let dir = self.vm.files_dir().join("nats");
        std::fs::create_dir_all(&dir).unwrap();
        let wan = NODES[0].wan();
        pki(&dir, &wan);
        let d = format!("{GUEST_FILES}/nats");
        std::fs::write(
            dir.join("nats.conf"),
            format!(
                "listen: {wan}:4222\n\
                 tls {{\n  cert_file: \"{d}/server.pem\"\n  key_file:  \"{d}/server.key\"\n  ca_file:   \"{d}/ca.pem\"\n}}\n\
                 server_name: spinifex-nats-lab\n\
                 authorization {{\n  token: \"{TOKEN}\"\n}}\n\
                 jetstream {{\n  store_dir: \"/var/run/nats-js/\"\n  max_memory_store: 64MB\n  max_file_store: 256MB\n}}\n\
                 max_payload: 1MB\nmax_pending: 64MB\n"
            ),
        )
        .unwrap();
        self.on(
            "spx1",
            &format!("nats-server -c {d}/nats.conf >/tmp/nats-server.log 2>&1 & echo $! >/var/run/nats-server.pid"),
        );
        assert!(
            self.vm.wait_until(
                "grep -q 'Server is ready' /tmp/nats-server.log",
                Duration::from_secs(30)
            ),
            "nats-server did not start: {}",
            self.vm.sh("cat /tmp/nats-server.log").stdout
        );
        self.bus.set(true);
        let (ipsec, mtu, nb, sb) = self.config.borrow().clone();
        self.set_config(ipsec, mtu, &nb, &sb);
        for node in NODES {
            self.on(
                node.name,
                &format!(
                    "env -i PATH={GUEST_BIN}:/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent-spx-test-home spx-doctor agent --config /etc/spinifex/spinifex.toml --interval 0 >/tmp/agent-{n}.log 2>&1 & echo $! >/var/run/spx-agent.pid",
                    n = node.name
                ),
            );
        }
        for node in NODES {
            assert!(
                self.vm.wait_until(
                    &format!(
                        "grep -q 'connected to NATS at' /tmp/agent-{}.log",
                        node.name
                    ),
                    Duration::from_secs(30)
                ),
                "{}'s agent did not connect: {}",
                node.name,
                self.vm
                    .sh(&format!("cat /tmp/agent-{}.log", node.name))
                    .stdout
            );
        }
        self.timed("the bus and 3 agents", t);
    }

    /// The bus and the agents stopped, and the configs without it.
    pub fn stop_bus(&self) {
        if !self.bus.get() {
            return;
        }
        for node in NODES {
            self.on(
                node.name,
                "kill $(cat /var/run/spx-agent.pid) 2>/dev/null; rm -f /var/run/spx-agent.pid",
            );
        }
        self.on(
            "spx1",
            "kill $(cat /var/run/nats-server.pid) 2>/dev/null; rm -f /var/run/nats-server.pid",
        );
        self.bus.set(false);
        let (ipsec, mtu, nb, sb) = self.config.borrow().clone();
        self.set_config(ipsec, mtu, &nb, &sb);
    }

    /// ovn-central on spx1, then every node's OVS and ovn-controller.
    fn ovn_script(&self) -> String {
        let mut s = String::from("set -e\n");
        let _ = writeln!(
            s,
            "{} sh -c {}",
            self.enter("spx1"),
            quote(
                "set -e
mkdir -p /var/run/ovn
cd /var/run/ovn
ovsdb-tool create ovnnb_db.db /usr/share/ovn/ovn-nb.ovsschema
ovsdb-tool create ovnsb_db.db /usr/share/ovn/ovn-sb.ovsschema
ovsdb-server --detach --no-chdir --pidfile=/var/run/ovn/ovnnb_db.pid --unixctl=/var/run/ovn/ovnnb_db.ctl --remote=punix:/var/run/ovn/ovnnb_db.sock --remote=ptcp:6641:198.19.0.1 --log-file=/var/run/ovn/ovsdb-server-nb.log /var/run/ovn/ovnnb_db.db
ovsdb-server --detach --no-chdir --pidfile=/var/run/ovn/ovnsb_db.pid --unixctl=/var/run/ovn/ovnsb_db.ctl --remote=punix:/var/run/ovn/ovnsb_db.sock --remote=ptcp:6642:198.19.0.1 --log-file=/var/run/ovn/ovsdb-server-sb.log /var/run/ovn/ovnsb_db.db
ovn-nbctl --db=unix:/var/run/ovn/ovnnb_db.sock init
ovn-northd --detach --no-chdir --pidfile=/var/run/ovn/ovn-northd.pid --log-file=/var/run/ovn/ovn-northd.log --ovnnb-db=unix:/var/run/ovn/ovnnb_db.sock --ovnsb-db=unix:/var/run/ovn/ovnsb_db.sock"
            )
        );
        for node in NODES {
            let _ = writeln!(
                s,
                "{} sh -c {}",
                self.enter(node.name),
                quote(&format!(
                    "set -e
mkdir -p /var/run/openvswitch /var/run/ovn
ovsdb-tool create /var/run/openvswitch/conf.db /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server --detach --no-chdir --pidfile=/var/run/openvswitch/ovsdb-server.pid --unixctl=/var/run/openvswitch/ovsdb-server.ctl --remote=punix:/var/run/openvswitch/db.sock --log-file=/var/run/openvswitch/ovsdb-server.log /var/run/openvswitch/conf.db
ovs-vsctl --no-wait init
ovs-vsctl --no-wait set Open_vSwitch . external_ids:system-id={name} external_ids:hostname={name} external_ids:ovn-remote={SB} external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip={encap}{datapath}
ovs-vswitchd --detach --no-chdir --pidfile=/var/run/openvswitch/ovs-vswitchd.pid --unixctl=/var/run/openvswitch/ovs-vswitchd.ctl --log-file=/var/run/openvswitch/ovs-vswitchd.log unix:/var/run/openvswitch/db.sock
{underlay}ovn-controller --detach --no-chdir --pidfile=/var/run/ovn/ovn-controller.pid --log-file=/var/run/ovn/ovn-controller.log unix:/var/run/openvswitch/db.sock",
                    name = node.name,
                    encap = node.underlay(),
                    datapath = if self.userspace {
                        " external_ids:ovn-bridge-datapath-type=netdev"
                    } else {
                        ""
                    },
                    underlay = if self.userspace {
                        // OVS's native tunnelling: the encap IP on an OVS
                        // bridge of the same datapath, the NIC its port.
                        format!(
                            "ovs-vsctl add-br br-vpc -- set Bridge br-vpc datapath_type=netdev -- add-port br-vpc eth1 -- set Interface br-vpc mtu_request=9000\nip link set br-vpc up\nip addr add {}/24 dev br-vpc\n",
                            node.underlay()
                        )
                    } else {
                        String::new()
                    },
                ))
            );
        }
        s
    }

    /// Start `guests`: each one's namespace, its tap at `mtu` on br-int and
    /// its QEMU (`host_mtu=mtu`) as its node, all at once; then, once every
    /// QMP socket is there, each one's relay and its namespace's address,
    /// MAC and route.
    fn start_guests(&self, guests: &[Guest], mtu: u32) {
        let mut script = String::from("set -e\n");
        for g in guests {
            let argv: Vec<String> = qemu_argv(g, mtu, !self.userspace)
                .iter()
                .map(|a| quote(a))
                .collect();
            let node_side = format!(
                "set -e
ip tuntap add dev {tap} mode tap
ip link set {tap} mtu {mtu} up
ovs-vsctl add-port br-int {tap} -- set Interface {tap} external_ids:iface-id={port} external_ids:attached-mac={mac}
{argv} </dev/null >/run/spinifex/{i}.log 2>&1 &",
                tap = g.tap(),
                port = g.port(),
                mac = g.mac,
                argv = argv.join(" "),
                i = g.instance,
            );
            let _ = writeln!(
                script,
                "ip netns add {ns}\n{enter} sh -c {side}",
                ns = g.netns(),
                enter = self.enter(g.node.name),
                side = quote(&node_side)
            );
        }
        let sockets: Vec<String> = guests
            .iter()
            .map(|g| {
                format!(
                    "[ -S /run/spx-nodes/{}/spinifex/qmp-{}.sock ]",
                    g.node.name, g.instance
                )
            })
            .collect();
        let _ = writeln!(
            script,
            "k=0; until {}; do k=$((k+1)); [ $k -lt 1200 ] || exit 1; sleep 0.1; done",
            sockets.join(" && ")
        );
        self.vm.ok(&script);
        let mut config = String::from("set -e\n");
        for g in guests {
            self.ask(json!({
                "op": "relay", "instance": g.instance, "tap": g.tap(),
                "netns": g.netns(), "ifname": "gnic",
            }));
            let _ = writeln!(
                config,
                "ip -n {ns} -b - <<'EOF'\nlink set lo up\nlink set gnic address {mac} mtu 9000 up\naddr add {ip}/24 dev gnic\nroute add default via {gw}\nEOF",
                ns = g.netns(),
                mac = g.mac,
                ip = g.ip,
                gw = g.subnet.gateway()
            );
        }
        self.vm.ok(&config);
    }

    /// The in-guest daemon ([`super::ovn_lab_daemon`]), started once, in
    /// the background: it reads the requests written before it was up.
    fn start_daemon(&self) {
        let dir = format!("{GUEST_FILES}/ovnlab");
        self.vm.ok(&format!(
            "mkdir -p {dir} && ({} >/tmp/ovn-lab-daemon.log 2>&1 &)",
            vm::helper(None, &["ovn-lab-daemon", &dir])
        ));
    }

    /// Ask the daemon; its answer (panics on its error or its silence).
    fn ask(&self, request: Value) -> Value {
        let n = self.next.get();
        self.next.set(n + 1);
        let req = self.daemon.join("req");
        std::fs::create_dir_all(&req).unwrap();
        let tmp = req.join(format!(".{n}.partial"));
        std::fs::write(&tmp, request.to_string()).unwrap();
        std::fs::rename(&tmp, req.join(format!("{n}.json"))).unwrap();
        let out = self.daemon.join("out").join(format!("{n}.json"));
        let until = Instant::now() + Duration::from_secs(300);
        loop {
            if let Ok(text) = std::fs::read_to_string(&out) {
                let v: Value = serde_json::from_str(&text).expect("daemon answer");
                assert!(v.get("error").is_none(), "lab daemon: {request} -> {v}");
                return v;
            }
            assert!(
                Instant::now() < until,
                "the lab daemon did not answer {request}: {}",
                self.vm.sh("tail -20 /tmp/ovn-lab-daemon.log").stdout
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stop `guests`' QEMUs and start them again with `host_mtu=mtu` and
    /// their taps at `mtu`, as a stop/start of the instances does after an
    /// MTU change (all at once).
    pub fn restart_guests(&self, guests: &[Guest], mtu: u32) {
        let mut script = String::from("set -e\n");
        for g in guests {
            self.ask(json!({ "op": "unrelay", "instance": g.instance }));
            let _ = writeln!(
                script,
                "{enter} sh -c {stop}\nip netns del {ns}",
                enter = self.enter(g.node.name),
                stop = quote(&format!(
                    "pid=$(cat /run/spinifex/{i}.pid); kill $pid; while kill -0 $pid 2>/dev/null; do sleep 0.1; done; ovs-vsctl del-port br-int {tap}; ip link del {tap}; rm -f /run/spinifex/*{i}*",
                    i = g.instance,
                    tap = g.tap()
                )),
                ns = g.netns()
            );
        }
        self.vm.ok(&script);
        self.start_guests(guests, mtu);
        self.nbctl(&["--wait=hv", "--timeout=120", "sync"].map(str::to_owned));
        self.warm(guests);
    }

    /// A small frame from each of `guests` to another guest and back, each
    /// until it arrives: neighbours resolved, the datapath's flows made
    /// (an upcall to ovs-vswitchd under emulation can take over a second),
    /// so that a test's first probe meets the path, not its set-up.
    pub fn warm(&self, guests: &[Guest]) {
        for g in guests {
            for other in GUESTS.iter().filter(|o| o.instance != g.instance).take(2) {
                for (s, r) in [(g, other), (other, g)] {
                    let sent = Sent::from_json(&self.ask(json!({
                        "op": "probe", "from": s.netns(), "to": r.netns(),
                        "dst": r.ip, "size": 576, "wait_ms": 3000, "tries": 10,
                    })));
                    assert!(
                        sent.arrived,
                        "{} -> {}: a 576-byte frame never arrived",
                        s.instance, r.instance
                    );
                }
            }
        }
    }

    /// Start sshd on every node (its wan address, as the node).
    fn start_sshd(&self) {
        let mut s = String::from("mkdir -p /run/sshd\n");
        for (i, node) in NODES.iter().enumerate() {
            let _ = writeln!(
                s,
                "({enter} /usr/sbin/sshd -D -e -f {cfg} >/tmp/sshd-{n}.log 2>&1 &)",
                n = node.name,
                enter = self.enter(node.name),
                cfg = self.files.seen(&format!("sshd_{i}"))
            );
        }
        self.vm.ok(&s);
        let listening: Vec<String> = NODES
            .iter()
            .map(|n| format!("grep -q 'Server listening' /tmp/sshd-{}.log", n.name))
            .collect();
        assert!(
            self.vm
                .wait_until(&listening.join(" && "), Duration::from_secs(60)),
            "sshd did not start: {}",
            self.vm.sh("cat /tmp/sshd-spx*.log").stdout
        );
    }

    /// The ssh_config a coordinator is pointed at (`--ssh-config`).
    pub fn ssh_config(&self) -> String {
        self.files.seen("ssh_config")
    }

    /// Run the doctor cargo built as `node`, with a clean environment.
    pub fn doctor(&self, node: &str, args: &[&str]) -> GuestOutput {
        let mut line = format!(
            "exec {} env -i PATH={GUEST_BIN}:/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent-spx-test-home spx-doctor",
            self.enter(node)
        );
        for a in args {
            line.push(' ');
            line.push_str(&quote(a));
        }
        self.vm.sh_within(&line, Duration::from_secs(300))
    }

    // ---- The fabric's knobs.

    /// Node `node`'s switch port at `mtu` (a real switch port: frames over
    /// it are dropped without a word, both ways).
    pub fn set_switch_port(&self, node: Node, mtu: u32) {
        self.fabric.borrow_mut().port_mtu[node.n as usize - 1] = mtu;
        let mut rules = String::new();
        for (i, m) in self.fabric.borrow().port_mtu.iter().enumerate() {
            if *m < 9000 {
                let _ = writeln!(
                    rules,
                    "add rule bridge spx_switch forward oifname \"p{n}\" meta length > {m} drop\nadd rule bridge spx_switch forward iifname \"p{n}\" meta length > {m} drop",
                    n = i + 1
                );
            }
        }
        self.vm.ok(&format!(
            "ip -n sw link set {port} mtu {mtu}\nip netns exec sw nft -f - <<'EOF'\nflush chain bridge spx_switch forward\n{rules}EOF",
            port = node.port()
        ));
    }

    /// Node `node`'s own underlay link (`eth1` and `br-vpc`) at `mtu`.
    pub fn set_node_underlay(&self, node: Node, mtu: u32) {
        if self.userspace {
            self.vm.ok(&format!(
                "ip -n {n} link set eth1 mtu {mtu} && {enter} ovs-vsctl set Interface br-vpc mtu_request={mtu}",
                n = node.name,
                enter = self.enter(node.name)
            ));
            return;
        }
        self.vm.ok(&format!(
            "ip -n {n} link set eth1 mtu {mtu} && ip -n {n} link set br-vpc mtu {mtu}",
            n = node.name
        ));
    }

    /// A firewall on `node` dropping what arrives from the underlay above
    /// `limit` bytes (geneve, and echo requests: its own echo replies are
    /// not limited), or none: one direction of every path into `node`
    /// narrowed, in a way the nodes' own DF echo probes can see.
    pub fn limit_arrivals(&self, node: Node, limit: Option<u32>) {
        let script = match limit {
            Some(l) => format!(
                "ip netns exec {n} nft -f - <<'EOF'\ntable inet spx_lab_limit {{\n chain input {{\n  type filter hook input priority 0; policy accept;\n  udp dport 6081 meta length > {l} drop\n  icmp type echo-request meta length > {l} drop\n }}\n}}\nEOF",
                n = node.name
            ),
            None => format!(
                "ip netns exec {} nft delete table inet spx_lab_limit",
                node.name
            ),
        };
        self.vm.ok(&script);
    }

    /// The subnet's DHCP_Options `mtu`.
    pub fn set_dhcp_mtu(&self, subnet: Subnet, mtu: u32) {
        let uuid = self.nbctl(&[
            "--bare".into(),
            "--columns=_uuid".into(),
            "find".into(),
            "DHCP_Options".into(),
            format!("external_ids:\"spinifex:subnet_id\"={}", subnet.id),
        ]);
        self.nbctl(&[
            "set".into(),
            "DHCP_Options".into(),
            uuid.trim().to_owned(),
            format!("options:mtu={mtu}"),
        ]);
    }

    /// `gateway_mtu` on the subnet's router port, or none.
    pub fn set_gateway_mtu(&self, subnet: Subnet, mtu: Option<u32>) {
        let args: Vec<String> = match mtu {
            Some(m) => vec![
                "set".into(),
                "Logical_Router_Port".into(),
                subnet.router_port(),
                format!("options:gateway_mtu={m}"),
            ],
            None => vec![
                "remove".into(),
                "Logical_Router_Port".into(),
                subnet.router_port(),
                "options".into(),
                "gateway_mtu".into(),
            ],
        };
        let mut all = vec!["--wait=hv".to_owned()];
        all.extend(args);
        self.nbctl(&all);
    }

    /// Replace the tenant rules (priority 1000) of `sg` with `rules`: the
    /// old ones deleted, then the new ones added (ovn-nbctl refuses to add,
    /// in the transaction that deletes it, an ACL of the same direction,
    /// priority and match).
    pub fn set_rules(&self, sg: SecurityGroup, rules: &[Rule]) {
        let pg = sg.port_group();
        let mut all = self.rules.borrow_mut();
        let (_, current) = all.iter_mut().find(|(g, _)| *g == sg).expect("a lab group");
        let mut delete: Vec<String> = vec!["--wait=hv".into()];
        for r in current.iter() {
            delete.extend([
                "--type=port-group".into(),
                "acl-del".into(),
                pg.clone(),
                if r.ingress { "to-lport" } else { "from-lport" }.into(),
                "1000".into(),
                r.acl_match(&pg),
                "--".into(),
            ]);
        }
        let mut add: Vec<String> = vec!["--wait=hv".into()];
        for r in rules {
            add.extend(rule_acl(&pg, r));
            add.push("--".into());
        }
        for mut args in [delete, add] {
            if args.len() > 1 {
                args.pop();
                self.nbctl(&args);
            }
        }
        *current = rules.to_vec();
    }

    /// The ports of `sg`'s port group: `guests` (as
    /// `SetPortSecurityGroups` leaves them).
    pub fn set_members(&self, sg: SecurityGroup, guests: &[Guest], more: &[&str]) {
        let mut args = vec![
            "--wait=hv".to_owned(),
            "pg-set-ports".into(),
            sg.port_group(),
        ];
        args.extend(guests.iter().map(Guest::port));
        args.extend(more.iter().map(|p| format!("port-{p}")));
        self.nbctl(&args);
    }

    // ---- The truth.

    /// How long each probe of the truth waits for its frame or for the
    /// sender to be told: [`PROBE_WAIT_MS`] unless a case needs longer.
    pub fn set_probe_wait(&self, ms: u64) {
        self.wait_ms.set(ms);
    }

    /// One DF echo request of `size` bytes of IP from `from` to `to`.
    pub fn probe(&self, from: &Guest, to: &Guest, size: u32) -> Sent {
        Sent::from_json(&self.ask(json!({
            "op": "probe", "from": from.netns(), "to": to.netns(),
            "dst": to.ip, "size": size, "wait_ms": self.wait_ms.get(),
        })))
    }

    /// The largest DF frame `from` gets to `to` (576 must cross; 9000 is
    /// the most the guest interface sends): `hint` and one byte more are
    /// tried first, then a bisection.
    pub fn largest(&self, from: &Guest, to: &Guest, hint: u32) -> Ladder {
        let t = Instant::now();
        let v = self.ask(json!({
            "op": "ladder", "from": from.netns(), "to": to.netns(),
            "dst": to.ip, "size": 576, "lo": 576, "hi": 9000, "hint": hint,
            "wait_ms": self.wait_ms.get(),
        }));
        let largest = v["largest"].as_u64().unwrap_or_else(|| {
            panic!(
                "{} -> {}: not even 576 bytes cross: {v}",
                from.instance, to.instance
            )
        }) as u32;
        let ladder = Ladder {
            largest,
            refused: v
                .get("refused")
                .filter(|r| !r.is_null())
                .map(Sent::from_json),
            probes: v["probes"].as_array().map_or(0, Vec::len),
        };
        note(&format!(
            "truth {} -> {}: {} crosses, {} does not ({}; {} probes, {:.1}s)",
            from.instance,
            to.instance,
            ladder.largest,
            ladder.largest + 1,
            match &ladder.refused {
                Some(Sent {
                    frag_needed: Some(m),
                    frag_ms,
                    ..
                }) => format!(
                    "the sender is told: fragmentation needed, mtu {m}, {} ms after the send",
                    frag_ms.unwrap_or_default()
                ),
                Some(_) => "silently".to_owned(),
                None => "9000 is the most a guest sends".to_owned(),
            },
            ladder.probes,
            t.elapsed().as_secs_f64()
        ));
        ladder
    }
}

/// The guest script building the fabric and the node holders.
fn fabric_script(userspace: bool) -> String {
    let mut s = String::from("set -e\n");
    // /var/run is a link to /run in Debian; each node gets its own.
    s.push_str("[ -L /var/run ] && rm /var/run && mkdir /var/run\n");
    // ip netns exec binds /etc/netns/NODE/spinifex over an existing
    // /etc/spinifex only.
    s.push_str("mkdir -p /run/spinifex /run/spx-nodes /etc/spinifex\n");
    let _ = writeln!(
        s,
        "mkdir -p {GUEST_BIN} && cp {GUEST_FILES}/{BIN_DIR}/spx-doctor {GUEST_BIN}/spx-doctor"
    );
    let mut top = vec!["netns add sw".to_owned(), "netns add wsw".to_owned()];
    top.extend(NODES.iter().map(|n| format!("netns add {}", n.name)));
    let _ = writeln!(s, "ip -b - <<'EOF'\n{}\nEOF", top.join("\n"));
    let mut sw = vec![
        "link add br0 type bridge".to_owned(),
        "link set br0 mtu 9000 up".to_owned(),
    ];
    let mut wsw = vec![
        "link add br0 type bridge".to_owned(),
        "link set br0 up".to_owned(),
    ];
    for node in NODES {
        let n = node.n;
        // The underlay bridge: Linux's here, or OVS's once the node's OVS
        // is up (`OvnLab::ovn_script`) for the userspace datapath.
        let bridge = if userspace {
            "link set eth1 mtu 9000 up".to_owned()
        } else {
            format!(
                "link add br-vpc type bridge\nlink set eth1 mtu 9000 master br-vpc up\nlink set br-vpc mtu 9000 up\naddr add {}/24 dev br-vpc",
                node.underlay()
            )
        };
        let _ = writeln!(
            s,
            "ip -n {name} -b - <<'EOF'\nlink set lo up\nlink add eth1 type veth peer name p{n} netns sw\nlink add eth0 type veth peer name w{n} netns wsw\n{bridge}\naddr add {w}/24 dev eth0\nlink set eth0 up\nEOF",
            name = node.name,
            w = node.wan()
        );
        sw.push(format!("link set p{n} mtu 9000 master br0 up"));
        wsw.push(format!("link set w{n} master br0 up"));
        let _ = writeln!(
            s,
            "mkdir -p /etc/netns/{name}/spinifex /run/spx-nodes/{name}/spinifex\ncp {GUEST_FILES}/spinifex-{name}.toml /etc/netns/{name}/spinifex/spinifex.toml\ncp {GUEST_FILES}/passwd /etc/netns/{name}/passwd\necho {id} >/etc/netns/{name}/machine-id",
            name = node.name,
            id = super::nats::machine_id(node.name)
        );
    }
    let _ = writeln!(s, "ip -n sw -b - <<'EOF'\n{}\nEOF", sw.join("\n"));
    let _ = writeln!(s, "ip -n wsw -b - <<'EOF'\n{}\nEOF", wsw.join("\n"));
    // The switch's per-port rules live in one chain, rewritten whole.
    s.push_str(
        "ip netns exec sw nft -f - <<'EOF'\ntable bridge spx_switch {\n chain forward {\n  type filter hook forward priority 0; policy accept;\n }\n}\nEOF\n",
    );
    // The holders, then their pids once each has made its mounts.
    for node in NODES {
        let _ = writeln!(
            s,
            "(ip netns exec {n} sh {GUEST_FILES}/ovn-lab-node-init {n} >/tmp/holder-{n}.log 2>&1 &)",
            n = node.name
        );
    }
    for node in NODES {
        let _ = writeln!(
            s,
            "i=0; until [ -e /run/spx-nodes/{n}.ready ]; do i=$((i+1)); [ $i -lt 300 ] || exit 1; sleep 0.1; done\n\
             pgrep -P \"$(cat /run/spx-nodes/{n}.unshare)\" >/run/spx-nodes/{n}.holder\n\
             [ -s /run/spx-nodes/{n}.holder ]",
            n = node.name
        );
    }
    s
}

/// A node's spinifex.toml: every node of the lab by its wan address, IPsec
/// and the underlay MTU as given, vpcd's NB and SB.
pub fn node_config(me: &str, ipsec: bool, underlay_mtu: u32, nb: &str, sb: &str) -> String {
    let mut t = format!(
        "version = \"lab\"\nnode = \"{me}\"\n[network]\nipsec_enabled = {ipsec}\nunderlay_mtu = {underlay_mtu}\n"
    );
    for node in NODES {
        let _ = write!(
            t,
            "[nodes.{name}]\nhost = \"{w}\"\nadvertise = \"{w}\"\n[nodes.{name}.vpcd]\novn_nb_addr = \"{nb}\"\novn_sb_addr = \"{sb}\"\nexternal_interface = \"br-wan\"\n",
            name = node.name,
            w = node.wan()
        );
    }
    t
}

/// Spinifex's QEMU command line for `g` (spinifex/vm: `Config.Execute` with
/// `buildBaseVMConfig`'s paths under the daemon's runtime directory,
/// `/run/spinifex`), one vCPU (so one queue: `TapNetDev` adds `queues=` only
/// above one), paused (`-S`) with a null-co boot disk.
pub fn qemu_argv(g: &Guest, mtu: u32, vhost: bool) -> Vec<String> {
    let (rt, i) = ("/run/spinifex", g.instance);
    [
        "/usr/bin/qemu-system-x86_64".to_owned(),
        "-pidfile".into(),
        format!("{rt}/{i}.pid"),
        "-qmp".into(),
        format!("unix:{rt}/qmp-{i}.sock,server,nowait"),
        "-qmp".into(),
        format!("unix:{rt}/qmp-telemetry-{i}.sock,server,nowait"),
        "-display".into(),
        "none".into(),
        "-chardev".into(),
        format!("socket,id=console0,path={rt}/serial-{i}.sock,server=on,wait=off,logfile={rt}/console-{i}.log"),
        "-serial".into(),
        "chardev:console0".into(),
        "-smp".into(),
        "1".into(),
        "-m".into(),
        "64".into(),
        "-object".into(),
        "iothread,id=ioth-os".into(),
        "-drive".into(),
        "driver=null-co,size=1048576,if=none,id=os,cache=none".into(),
        "-device".into(),
        "virtio-blk-pci,drive=os,iothread=ioth-os,num-queues=1,bootindex=1".into(),
        "-device".into(),
        format!(
            "virtio-net-pci,netdev=net0,mac={},host_mtu={mtu},rx_queue_size=1024",
            g.mac
        ),
        "-netdev".into(),
        format!(
            "tap,id=net0,ifname={},script=no,downscript=no,vhost={}",
            g.tap(),
            if vhost { "on" } else { "off" }
        ),
        "-M".into(),
        "q35".into(),
        "-S".into(),
    ]
    .to_vec()
}

/// `ovn-nbctl` arguments (`--`-separated commands) for one ACL of `rule`.
fn rule_acl(pg: &str, r: &Rule) -> Vec<String> {
    vec![
        "--type=port-group".into(),
        "acl-add".into(),
        pg.to_owned(),
        if r.ingress { "to-lport" } else { "from-lport" }.into(),
        "1000".into(),
        r.acl_match(pg),
        if r.stateless {
            "allow-stateless"
        } else {
            "allow-related"
        }
        .into(),
    ]
}

/// The NB topology in one transaction: the VPC's router, both subnets
/// (switch, router port pair, DHCP_Options), every ENI's port, the
/// security groups' port groups and ACLs.
fn topology_commands() -> Vec<String> {
    let mut c: Vec<Vec<String>> = Vec::new();
    let ext = |pairs: &[(&str, &str)]| -> Vec<String> {
        pairs
            .iter()
            .map(|(k, v)| format!("external_ids:\"spinifex:{k}\"=\"{v}\""))
            .collect()
    };
    let router = format!("vpc-{VPC}");
    c.push(vec!["lr-add".into(), router.clone()]);
    let mut set = vec!["set".into(), "Logical_Router".into(), router.clone()];
    set.extend(ext(&[
        ("vpc_id", VPC),
        ("vni", "4242"),
        ("cidr", "10.0.0.0/16"),
    ]));
    c.push(set);
    for s in SUBNETS {
        let ids = ext(&[("subnet_id", s.id), ("vpc_id", VPC)]);
        let (sw, rp) = (s.switch(), s.router_port());
        let lsp = format!("rtr-port-{}", s.id);
        c.push(vec!["ls-add".into(), sw.clone()]);
        c.push(
            [
                vec!["set".into(), "Logical_Switch".into(), sw.clone()],
                ids.clone(),
            ]
            .concat(),
        );
        c.push(vec![
            "lrp-add".into(),
            router.clone(),
            rp.clone(),
            s.router_mac.into(),
            format!("{}/24", s.gateway()),
        ]);
        c.push(
            [
                vec!["set".into(), "Logical_Router_Port".into(), rp.clone()],
                ids.clone(),
            ]
            .concat(),
        );
        c.push(vec!["lsp-add".into(), sw.clone(), lsp.clone()]);
        c.push(vec!["lsp-set-type".into(), lsp.clone(), "router".into()]);
        c.push(vec![
            "lsp-set-addresses".into(),
            lsp.clone(),
            "router".into(),
        ]);
        c.push(vec![
            "lsp-set-options".into(),
            lsp.clone(),
            format!("router-port={rp}"),
        ]);
        c.push(
            [
                vec!["set".into(), "Logical_Switch_Port".into(), lsp],
                ids.clone(),
            ]
            .concat(),
        );
        let mut dhcp = vec![
            format!("--id=@dhcp{}", s.prefix.replace('.', "")),
            "create".into(),
            "DHCP_Options".into(),
            format!("cidr={}", s.cidr()),
        ];
        dhcp.extend(ids.clone());
        dhcp.extend([
            format!("options:server_id={}", s.gateway()),
            format!("options:server_mac=\"{}\"", s.router_mac),
            "options:lease_time=3600".into(),
            format!("options:router={}", s.gateway()),
            "options:dns_server=\"{8.8.8.8, 1.1.1.1}\"".into(),
            "options:mtu=8942".into(),
        ]);
        c.push(dhcp);
    }
    let unbound = (UNBOUND_ENI, UNBOUND_MAC, UNBOUND_IP, S1);
    let ports = GUESTS
        .iter()
        .map(|g| (g.eni, g.mac, g.ip, g.subnet))
        .chain(std::iter::once(unbound));
    for (eni, mac, ip, s) in ports {
        let port = format!("port-{eni}");
        let addr = format!("{mac} {ip}");
        c.push(vec!["lsp-add".into(), s.switch(), port.clone()]);
        c.push(vec!["lsp-set-addresses".into(), port.clone(), addr.clone()]);
        c.push(vec!["lsp-set-port-security".into(), port.clone(), addr]);
        let mut set = vec!["set".into(), "Logical_Switch_Port".into(), port];
        set.extend(ext(&[
            ("eni_id", eni),
            ("subnet_id", s.id),
            ("vpc_id", VPC),
        ]));
        set.push(format!("dhcpv4_options=@dhcp{}", s.prefix.replace('.', "")));
        c.push(set);
    }
    for sg in [SG_VPC, SG_A] {
        let pg = sg.port_group();
        let mut add = vec!["pg-add".into(), pg.clone()];
        add.extend(GUESTS.iter().filter(|g| g.sg == sg).map(Guest::port));
        if sg == SG_VPC {
            add.push(format!("port-{UNBOUND_ENI}"));
        }
        c.push(add);
        // network/policy/sg.go's InfrastructureACLs.
        let acl = |extra: &[&str], dir: &str, prio: &str, m: String, action: &str| {
            let mut v: Vec<String> = vec!["--type=port-group".into()];
            v.extend(extra.iter().map(|e| (*e).to_owned()));
            v.extend([
                "acl-add".into(),
                pg.clone(),
                dir.into(),
                prio.into(),
                m,
                action.into(),
            ]);
            v
        };
        c.push(acl(
            &[
                "--log",
                "--severity=info",
                &format!("--name={pg}-deny-ingress"),
            ],
            "to-lport",
            "900",
            format!("outport == @{pg} && ip4"),
            "drop",
        ));
        c.push(acl(
            &[
                "--log",
                "--severity=info",
                &format!("--name={pg}-deny-egress"),
            ],
            "from-lport",
            "800",
            format!("inport == @{pg} && ip4"),
            "drop",
        ));
        c.push(acl(
            &[&format!("--name={pg}-allow-dhcp-egress")],
            "from-lport",
            "1050",
            format!("inport == @{pg} && udp && udp.src == 68 && udp.dst == 67"),
            "allow",
        ));
        c.push(acl(
            &[&format!("--name={pg}-allow-dhcp-ingress")],
            "to-lport",
            "1050",
            format!("outport == @{pg} && udp && udp.src == 67 && udp.dst == 68"),
            "allow",
        ));
        for r in vpc_rules() {
            c.push(rule_acl(&pg, &r));
        }
    }
    let mut args = Vec::new();
    for cmd in c {
        if !args.is_empty() {
            args.push("--".to_owned());
        }
        args.extend(cmd);
    }
    args
}
