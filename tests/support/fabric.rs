//! A throw-away underlay fabric built from network namespaces: a Linux
//! bridge "switch", nodes plugged into it with their own and their switch
//! port's MTU, and a router namespace with a far link behind it. Every
//! namespace is a [`Netns`], so everything is removed when the fabric is
//! dropped, even when a test fails.
//!
//! Addresses (benchmarking range and ULA only): the switch LAN is
//! 198.18.0.0/24 and fd00:198:18::/64, node `i` (from 0) gets .i+1 and
//! ::i+1; the router is .254 / ::fe on the LAN and 198.18.1.1 /
//! fd00:198:19::1 on its far link, whose one node is 198.18.1.2 /
//! fd00:198:19::2.
//!
//! A switch port at 1500 behaves like a real 1500-byte switch: a frame
//! carrying more than 1500 bytes of IP is dropped without a word (measured
//! here with `ping -M do -s 1472` passing and `-s 1473` vanishing).

use std::process::Command;

use super::netns::Netns;

pub const LAN_V4_PREFIX: &str = "198.18.0";
pub const LAN_V6_PREFIX: &str = "fd00:198:18:";
pub const ROUTER_V4: &str = "198.18.0.254";
pub const ROUTER_V6: &str = "fd00:198:18::fe";
pub const FAR_V4: &str = "198.18.1.2";
pub const FAR_V6: &str = "fd00:198:19::2";

/// How a node is plugged in.
#[derive(Clone, Copy, Debug)]
pub struct NodeSpec {
    /// The node's own link (its "NIC").
    pub mtu: u32,
    /// The switch port it is plugged into.
    pub port_mtu: u32,
    /// Also give it an IPv6 address.
    pub ipv6: bool,
}

impl NodeSpec {
    /// A jumbo node behind a switch port that carries only 1500: the
    /// measured black hole (no "fragmentation needed" comes back).
    pub const BLACK_HOLE: NodeSpec = NodeSpec {
        mtu: 9000,
        port_mtu: 1500,
        ipv6: true,
    };

    pub fn jumbo() -> NodeSpec {
        NodeSpec {
            mtu: 9000,
            port_mtu: 9000,
            ipv6: true,
        }
    }
}

pub struct Node {
    pub ns: Netns,
    pub v4: String,
    pub v6: Option<String>,
}

impl Node {
    /// The real `spx` binary run from this node.
    pub fn spx(&self) -> Command {
        self.ns.spx()
    }

    /// Stop answering ICMP echo (a firewall dropping echo-request).
    pub fn ignore_echo(&self) {
        self.ns.sysctl("net.ipv4.icmp_echo_ignore_all=1");
        self.ns.sysctl("net.ipv6.icmp.echo_ignore_all=1");
    }

    /// Let unprivileged ICMP datagram ("ping") sockets be opened here.
    pub fn allow_ping_sockets(&self) {
        self.ns.sysctl("net.ipv4.ping_group_range=0 2147483647");
    }

    /// `ping -M do -s SIZE -c 1 -W 1 ADDR` from this node: the independent
    /// oracle for what a path carries.
    pub fn ping_df(&self, addr: &str, payload: u32) -> bool {
        self.ns.try_exec(&[
            "ping",
            "-n",
            "-q",
            "-M",
            "do",
            "-s",
            &payload.to_string(),
            "-c",
            "1",
            "-W",
            "1",
            addr,
        ])
    }
}

pub struct Fabric {
    pub switch: Netns,
    pub nodes: Vec<Node>,
    /// The router and its far node, when added.
    pub router: Option<Netns>,
    pub far: Option<Node>,
}

impl Fabric {
    /// A switch (bridge `sw`, MTU 9000) with nothing plugged in.
    pub fn new() -> Fabric {
        let switch = quiet_ns();
        switch.ip(&["link", "add", "sw", "type", "bridge"]);
        switch.ip(&["link", "set", "sw", "mtu", "9000", "up"]);
        Fabric {
            switch,
            nodes: Vec::new(),
            router: None,
            far: None,
        }
    }

    /// Plug a new node into the switch; returns its index.
    pub fn add_node(&mut self, spec: NodeSpec) -> usize {
        let i = self.nodes.len();
        assert!(i < 200, "the LAN has room for 200 nodes");
        let ns = quiet_ns();
        let port = format!("p{i}");
        self.plug(&ns, &port, spec.mtu, spec.port_mtu);
        let v4 = format!("{LAN_V4_PREFIX}.{}", i + 1);
        ns.ip(&["addr", "add", &format!("{v4}/24"), "dev", "eth0"]);
        let v6 = spec.ipv6.then(|| {
            let v6 = format!("{LAN_V6_PREFIX}:{:x}", i + 1);
            ns.ip(&[
                "-6",
                "addr",
                "add",
                &format!("{v6}/64"),
                "dev",
                "eth0",
                "nodad",
            ]);
            v6
        });
        if self.router.is_some() {
            route_far(&ns);
        }
        self.nodes.push(Node { ns, v4, v6 });
        i
    }

    /// A router on the switch whose far link (both ends) has `far_mtu`, with
    /// one node behind it. Every node, present and future, routes the far
    /// network through it. A packet too big for the far link gets
    /// "fragmentation needed" from the router.
    pub fn add_router(&mut self, far_mtu: u32) {
        assert!(self.router.is_none(), "one router per fabric");
        let router = quiet_ns();
        self.plug(&router, "prt", 9000, 9000);
        router.ip(&["addr", "add", &format!("{ROUTER_V4}/24"), "dev", "eth0"]);
        router.ip(&[
            "-6",
            "addr",
            "add",
            &format!("{ROUTER_V6}/64"),
            "dev",
            "eth0",
            "nodad",
        ]);
        router.sysctl("net.ipv4.ip_forward=1");
        router.sysctl("net.ipv6.conf.all.forwarding=1");
        let far = quiet_ns();
        router.veth("far", &far, "eth0");
        let m = far_mtu.to_string();
        router.ip(&["link", "set", "far", "mtu", &m]);
        far.ip(&["link", "set", "eth0", "mtu", &m]);
        router.ip(&["addr", "add", "198.18.1.1/24", "dev", "far"]);
        router.ip(&[
            "-6",
            "addr",
            "add",
            "fd00:198:19::1/64",
            "dev",
            "far",
            "nodad",
        ]);
        far.ip(&["addr", "add", &format!("{FAR_V4}/24"), "dev", "eth0"]);
        far.ip(&[
            "-6",
            "addr",
            "add",
            &format!("{FAR_V6}/64"),
            "dev",
            "eth0",
            "nodad",
        ]);
        far.ip(&["route", "add", "default", "via", "198.18.1.1"]);
        far.ip(&["-6", "route", "add", "default", "via", "fd00:198:19::1"]);
        for n in &self.nodes {
            route_far(&n.ns);
        }
        self.router = Some(router);
        self.far = Some(Node {
            ns: far,
            v4: FAR_V4.to_owned(),
            v6: Some(FAR_V6.to_owned()),
        });
    }

    /// A veth from `ns` (`eth0`, MTU `mtu`) to switch port `port` (MTU
    /// `port_mtu`).
    fn plug(&self, ns: &Netns, port: &str, mtu: u32, port_mtu: u32) {
        ns.veth("eth0", &self.switch, port);
        ns.ip(&["link", "set", "eth0", "mtu", &mtu.to_string()]);
        self.switch.ip(&[
            "link",
            "set",
            port,
            "mtu",
            &port_mtu.to_string(),
            "master",
            "sw",
        ]);
    }

    pub fn node(&self, i: usize) -> &Node {
        &self.nodes[i]
    }
}

/// A namespace whose new interfaces skip IPv6 duplicate address detection,
/// so link-local addresses (neighbour discovery's source) are usable at once
/// instead of "tentative" for a second or two.
fn quiet_ns() -> Netns {
    let ns = Netns::new();
    ns.sysctl("net.ipv6.conf.all.accept_dad=0");
    ns.sysctl("net.ipv6.conf.default.accept_dad=0");
    ns
}

/// Reach the router's far network (both families) through the router.
fn route_far(ns: &Netns) {
    ns.ip(&["route", "add", "198.18.1.0/24", "via", ROUTER_V4]);
    ns.ip(&["-6", "route", "add", "fd00:198:19::/64", "via", ROUTER_V6]);
}

impl Default for Fabric {
    fn default() -> Self {
        Fabric::new()
    }
}
