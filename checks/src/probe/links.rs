//! Routes, links and local addresses, asked of the kernel over rtnetlink.
//!
//! Why netlink and not sysfs alone: the route the kernel would use for one
//! destination (`ip route get`) exists only as an `RTM_GETROUTE` answer, and
//! a device's *maximum* MTU (`IFLA_MAX_MTU`, the ceiling `ip link set mtu`
//! runs into) is not in sysfs at all. Everything here is read-only and
//! bounded: every socket has a receive timeout, so a stuck kernel answer
//! cannot hang a run.
//!
//! The netlink socket belongs to the network namespace of the process, so a
//! run under `ip netns exec` sees that namespace's routes and links.
//!
//! Reused by: `mtu.path` (egress interface per peer), the NIC checks (link
//! facts), `underlay.on-link` (is the peer on-link or behind a gateway).

use std::io;
use std::net::IpAddr;
use std::time::Duration;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{InfoKind, LinkAttribute, LinkInfo, LinkMessage};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage, RouteType};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

use super::ProbeError;

/// How long one netlink request may take. The kernel answers these from
/// memory in microseconds; the bound is only there so nothing can hang.
const NETLINK_TIMEOUT: Duration = Duration::from_secs(2);

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

/// The route the kernel would use to reach `addr` (`RTM_GETROUTE` with
/// `RTA_DST`, the same question `ip route get ADDR` asks).
///
/// No route at all (ENETUNREACH, EHOSTUNREACH, an unreachable or blackhole
/// route) is [`ProbeError::NotFound`] naming the destination, so callers can
/// tell "no route" from a netlink failure.
pub fn route_to(addr: IpAddr) -> Result<Route, ProbeError> {
    route_via(addr, None)
}

/// [`route_to`] out of interface `oif` when given (`ip route get ADDR oif
/// DEV`): a link-local IPv6 peer is reachable only on the interface its
/// scope names.
pub fn route_via(addr: IpAddr, oif: Option<u32>) -> Result<Route, ProbeError> {
    let mut msg = RouteMessage::default();
    msg.header.address_family = family_of(addr);
    msg.header.destination_prefix_length = if addr.is_ipv4() { 32 } else { 128 };
    msg.attributes
        .push(RouteAttribute::Destination(addr.into()));
    if let Some(oif) = oif {
        msg.attributes.push(RouteAttribute::Oif(oif));
    }
    let answers = match request(RouteNetlinkMessage::GetRoute(msg), false) {
        Ok(a) => a,
        Err(e) if is_no_route(&e) => return Err(ProbeError::NotFound(format!("route to {addr}"))),
        Err(e) => return Err(io_err(&format!("route lookup for {addr}"), e)),
    };
    let route = answers
        .into_iter()
        .find_map(|m| match m {
            RouteNetlinkMessage::NewRoute(r) => Some(r),
            _ => None,
        })
        .ok_or_else(|| ProbeError::Other(format!("route lookup for {addr}: no answer")))?;
    match route.header.kind {
        RouteType::Unicast | RouteType::Local => {}
        _ => return Err(ProbeError::NotFound(format!("route to {addr}"))),
    }
    let mut oif = None;
    let mut gateway = None;
    let mut preferred_source = None;
    for attr in &route.attributes {
        match attr {
            RouteAttribute::Oif(i) => oif = Some(*i),
            RouteAttribute::Gateway(a) => gateway = route_ip(a),
            RouteAttribute::PrefSource(a) => preferred_source = route_ip(a),
            _ => {}
        }
    }
    let oif =
        oif.ok_or_else(|| ProbeError::Other(format!("route to {addr} has no egress interface")))?;
    let interface = link_by_index(oif)?.name;
    Ok(Route {
        destination: addr,
        oif,
        interface,
        gateway,
        preferred_source,
        local: route.header.kind == RouteType::Local,
    })
}

/// One link by name. A missing device is [`ProbeError::NotFound`].
pub fn link_by_name(name: &str) -> Result<Link, ProbeError> {
    crate::validate::interface(name).map_err(ProbeError::Other)?;
    let mut msg = LinkMessage::default();
    msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
    single_link(msg, name)
}

/// One link by index. A missing device is [`ProbeError::NotFound`].
pub fn link_by_index(index: u32) -> Result<Link, ProbeError> {
    let mut msg = LinkMessage::default();
    msg.header.index = index;
    single_link(msg, &format!("interface index {index}"))
}

/// Every link in this network namespace, in index order.
pub fn links() -> Result<Vec<Link>, ProbeError> {
    let answers = request(RouteNetlinkMessage::GetLink(LinkMessage::default()), true)
        .map_err(|e| io_err("link dump", e))?;
    let mut links: Vec<Link> = answers
        .into_iter()
        .filter_map(|m| match m {
            RouteNetlinkMessage::NewLink(l) => Some(link_from(&l)),
            _ => None,
        })
        .collect();
    links.sort_by_key(|l| l.index);
    Ok(links)
}

/// The ports of bridge (or bond) `master`: every link whose `IFLA_MASTER`
/// is its index, in index order.
pub fn ports_of(host: crate::host::HostRef<'_>, master: &Link) -> Result<Vec<Link>, ProbeError> {
    Ok(host
        .links()?
        .into_iter()
        .filter(|l| l.master == Some(master.index))
        .collect())
}

/// Every address configured on this host (both families, every
/// interface, loopback included): what "this host's own addresses" means
/// when excluding peers.
pub fn local_addresses() -> Result<Vec<IpAddr>, ProbeError> {
    let answers = request(
        RouteNetlinkMessage::GetAddress(AddressMessage::default()),
        true,
    )
    .map_err(|e| io_err("address dump", e))?;
    let mut addrs = Vec::new();
    for m in answers {
        if let RouteNetlinkMessage::NewAddress(a) = m {
            for attr in a.attributes {
                if let AddressAttribute::Address(ip) | AddressAttribute::Local(ip) = attr {
                    if !addrs.contains(&ip) {
                        addrs.push(ip);
                    }
                }
            }
        }
    }
    Ok(addrs)
}

fn single_link(msg: LinkMessage, what: &str) -> Result<Link, ProbeError> {
    let answers = match request(RouteNetlinkMessage::GetLink(msg), false) {
        Ok(a) => a,
        Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {
            return Err(ProbeError::NotFound(format!("network device {what}")))
        }
        Err(e) => return Err(io_err(&format!("link lookup for {what}"), e)),
    };
    answers
        .into_iter()
        .find_map(|m| match m {
            RouteNetlinkMessage::NewLink(l) => Some(link_from(&l)),
            _ => None,
        })
        .ok_or_else(|| ProbeError::NotFound(format!("network device {what}")))
}

fn link_from(msg: &LinkMessage) -> Link {
    let mut link = Link {
        index: msg.header.index,
        name: String::new(),
        mtu: 0,
        min_mtu: None,
        max_mtu: None,
        master: None,
        kind: None,
        up: false,
    };
    const IFF_UP: u32 = libc::IFF_UP as u32;
    const IFF_LOWER_UP: u32 = libc::IFF_LOWER_UP as u32;
    let flags = msg.header.flags.bits();
    link.up = flags & IFF_UP != 0 && flags & IFF_LOWER_UP != 0;
    for attr in &msg.attributes {
        match attr {
            LinkAttribute::IfName(n) => link.name = n.clone(),
            LinkAttribute::Mtu(m) => link.mtu = *m,
            LinkAttribute::MinMtu(m) => link.min_mtu = Some(*m),
            LinkAttribute::MaxMtu(m) => link.max_mtu = Some(*m),
            LinkAttribute::Controller(i) => link.master = Some(*i),
            LinkAttribute::LinkInfo(infos) => {
                for info in infos {
                    if let LinkInfo::Kind(kind) = info {
                        link.kind = Some(match kind {
                            InfoKind::Other(s) => s.clone(),
                            k => k.to_string(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    link
}

fn family_of(addr: IpAddr) -> AddressFamily {
    if addr.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    }
}

fn route_ip(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    }
}

fn is_no_route(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENETUNREACH | libc::EHOSTUNREACH | libc::EINVAL | libc::EACCES)
    )
}

fn io_err(what: &str, e: io::Error) -> ProbeError {
    if e.kind() == io::ErrorKind::PermissionDenied {
        return ProbeError::PermissionDenied {
            what: what.to_owned(),
            needs: format!("permission to use rtnetlink for {what}"),
        };
    }
    ProbeError::Io {
        what: format!("netlink {what}"),
        source: e,
    }
}

/// Send one request on a fresh NETLINK_ROUTE socket and collect the
/// answers: one message, or every message of a dump up to NLMSG_DONE. A
/// netlink error answer becomes the matching `io::Error`.
fn request(inner: RouteNetlinkMessage, dump: bool) -> io::Result<Vec<RouteNetlinkMessage>> {
    let mut socket = Socket::new(NETLINK_ROUTE)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    super::set_receive_timeout(&socket, NETLINK_TIMEOUT)?;

    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | if dump { NLM_F_DUMP } else { 0 };
    header.sequence_number = 1;
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(inner));
    msg.finalize();
    let mut buf = vec![0u8; msg.buffer_len()];
    msg.serialize(&mut buf);
    socket.send(&buf, 0)?;

    let mut out = Vec::new();
    let mut rx = vec![0u8; 1 << 16];
    loop {
        let n = socket.recv(&mut &mut rx[..], 0)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "netlink socket closed",
            ));
        }
        let mut offset = 0;
        while offset < n {
            let bytes = &rx[offset..n];
            let parsed = NetlinkMessage::<RouteNetlinkMessage>::deserialize(bytes)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            let len = parsed.header.length as usize;
            if len == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "zero-length netlink message",
                ));
            }
            offset += (len + 3) & !3;
            if parsed.header.sequence_number != 1 {
                continue;
            }
            match parsed.payload {
                NetlinkPayload::Done(_) => return Ok(out),
                NetlinkPayload::Error(e) => {
                    if e.code.is_none() {
                        return Ok(out);
                    }
                    return Err(e.to_io());
                }
                NetlinkPayload::InnerMessage(m) => {
                    out.push(m);
                    if !dump {
                        return Ok(out);
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn loopback_link_and_route() {
        let lo = link_by_name("lo").unwrap();
        assert_eq!(lo.index, 1);
        assert_eq!(
            lo.mtu as u64,
            crate::probe::sysfs_net::attr_u64(crate::host::live(), "lo", "mtu").unwrap()
        );
        assert!(!lo.is_bridge());
        assert_eq!(link_by_index(1).unwrap().name, "lo");
        let r = route_to(IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap();
        assert_eq!(r.interface, "lo");
        assert!(r.local && r.on_link());
        let addrs = local_addresses().unwrap();
        assert!(
            addrs.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)),
            "{addrs:?}"
        );
        assert!(links().unwrap().iter().any(|l| l.name == "lo"));
        if addrs.contains(&IpAddr::V6(Ipv6Addr::LOCALHOST)) {
            assert_eq!(
                route_to(IpAddr::V6(Ipv6Addr::LOCALHOST)).unwrap().interface,
                "lo"
            );
        }
    }

    #[test]
    fn missing_device_is_not_found() {
        assert!(matches!(
            link_by_name("nosuchdev0"),
            Err(ProbeError::NotFound(_))
        ));
        assert!(link_by_name("../etc").is_err());
        assert!(matches!(
            link_by_index(999_999),
            Err(ProbeError::NotFound(_))
        ));
    }
}
