//! Links and routes as facts ([`Link`], [`Route`]), and the pure helpers
//! that answer from one link dump. The rtnetlink reads are [`crate::live::links`]'s.
use std::net::IpAddr;
use std::time::Duration;

/// How long one rtnetlink request may take at most, all its receives
/// together (less when the deadline it is given comes first). The kernel
/// answers these from memory in microseconds; the bound is only there so
/// nothing can hang.
pub const NETLINK_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether `addr` is one a peer could name this host by: not loopback,
/// unspecified, multicast or link-local. `ip addr` lists loopback first,
/// so "the host's first address" is never the one to name.
pub fn nameable(addr: IpAddr) -> bool {
    !addr.is_loopback()
        && !addr.is_unspecified()
        && !addr.is_multicast()
        && match addr {
            IpAddr::V4(v4) => !v4.is_link_local(),
            IpAddr::V6(v6) => !v6.is_unicast_link_local(),
        }
}

/// The route the kernel picks for one destination, as `ip route get ADDR`
/// shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Route {
    pub destination: IpAddr,
    /// Egress interface index (`RTA_OIF`).
    pub oif: u32,
    /// Egress interface name, resolved from `oif`.
    pub interface: String,
    /// Next hop when the destination is not on-link (`RTA_GATEWAY`).
    pub gateway: Option<IpAddr>,
    /// The source address the kernel would use (`RTA_PREFSRC`).
    pub preferred_source: Option<IpAddr>,
    /// True when the destination is one of this host's own addresses.
    pub local: bool,
}

impl Route {
    /// The destination is directly on the egress link (no gateway).
    pub fn on_link(&self) -> bool {
        self.gateway.is_none()
    }
}

/// One network device as `RTM_GETLINK` reports it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Link {
    pub index: u32,
    pub name: String,
    pub mtu: u32,
    /// `IFLA_MIN_MTU`; absent on old kernels and some virtual devices.
    pub min_mtu: Option<u32>,
    /// `IFLA_MAX_MTU`: the largest MTU the driver accepts. A NIC whose
    /// maximum is below the target can never carry it.
    pub max_mtu: Option<u32>,
    /// Index of the master device (`IFLA_MASTER`): the bridge this device is
    /// a port of, or a bond.
    pub master: Option<u32>,
    /// `IFLA_INFO_KIND`: "bridge", "veth", "vlan"…; None for physical NICs.
    pub kind: Option<String>,
    /// Administratively and operationally up (`IFF_UP` and `IFF_LOWER_UP`).
    pub up: bool,
}

impl Link {
    pub fn is_bridge(&self) -> bool {
        self.kind.as_deref() == Some("bridge")
    }
}

/// The link named `name` in a dump.
pub fn named<'a>(links: &'a [Link], name: &str) -> Option<&'a Link> {
    links.iter().find(|l| l.name == name)
}

/// The link with index `index` in a dump.
pub fn by_index(links: &[Link], index: u32) -> Option<&Link> {
    links.iter().find(|l| l.index == index)
}

/// The vpc plane's bridge in a dump: the first of br-vpc, br-lan, br-wan
/// (planes collapse vpc → lan → wan on nodes with fewer NICs) that is
/// there, whatever its kind: an Open vSwitch bridge of that name is found
/// too, and is no Linux bridge ([`Link::is_bridge`]), so it has no ports
/// here.
pub fn underlay_bridge(links: &[Link]) -> Option<&Link> {
    crate::spinifex::UNDERLAY_BRIDGES
        .into_iter()
        .find_map(|b| named(links, b))
}

/// The ports of bridge (or bond) `master` in a dump: every link whose
/// `IFLA_MASTER` is its index, in index order.
pub fn ports_of<'a>(links: &'a [Link], master: &Link) -> Vec<&'a Link> {
    links
        .iter()
        .filter(|l| l.master == Some(master.index))
        .collect()
}

/// The names of the ports of Linux bridge `bridge`, sorted by name (the
/// order reports have always listed them in); none when `bridge` is not a
/// Linux bridge (an Open vSwitch bridge's ports are the datapath's, not its
/// own).
pub fn port_names(links: &[Link], bridge: &Link) -> Vec<String> {
    if !bridge.is_bridge() {
        return Vec::new();
    }
    let mut names: Vec<String> = ports_of(links, bridge)
        .into_iter()
        .map(|l| l.name.clone())
        .collect();
    names.sort();
    names
}
