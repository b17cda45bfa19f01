//! Routes, links and local addresses, asked of the kernel over rtnetlink:
//! the one source of a network device's facts.
//!
//! A device's name, its existence, its MTU (with `IFLA_MIN_MTU` and
//! `IFLA_MAX_MTU`), whether it is a Linux bridge (`IFLA_INFO_KIND`), the
//! bridge (or bond) it is a port of (`IFLA_MASTER`) and whether it is up are
//! read here and nowhere else, as one [`Link`]. Every check reads them the
//! same way: one [`links`] dump (`RTM_GETLINK` with `NLM_F_DUMP`) where it
//! needs several devices or a bridge's ports, so that they all come from
//! one moment, and a by-name lookup where one device is enough. The pure
//! helpers below ([`crate::facts::links::named`], [`crate::facts::links::by_index`], [`crate::facts::links::underlay_bridge`],
//! [`crate::facts::links::ports_of`], [`crate::facts::links::port_names`]) answer from such a dump. sysfs keeps only
//! what rtnetlink does not carry ([`crate::read::sysfs_net`]).
//!
//! Why netlink and not sysfs: the route the kernel would use for one
//! destination (`ip route get`) exists only as an `RTM_GETROUTE` answer, a
//! device's *maximum* MTU (`IFLA_MAX_MTU`, the ceiling `ip link set mtu`
//! runs into) is not in sysfs at all, and a dump is one consistent answer
//! where a walk of `/sys/class/net` is one read per file, racing with
//! devices that come and go (a guest's tap).
//!
//! **The bound.** Everything here is read-only and bounded. Each request
//! opens its own socket, and all the receives of one request (one answer,
//! or every part of a dump) share one bound: [`NETLINK_TIMEOUT`] from when
//! the request is sent, cut to the deadline it is given (a check's reads
//! are given the run's deadline, through [`crate::host::HostRef`]). Before
//! each receive, `SO_RCVTIMEO` is set to what is left of that bound; a
//! kernel that has not answered by then is a probe error saying so, never a
//! hang, and a request made after the deadline fails at once.
//!
//! The netlink socket belongs to the network namespace of the process, so a
//! run under `ip netns exec` sees that namespace's routes and links.
//!
//! Reused by: `mtu.path` (egress interface per peer, and its ports),
//! `mtu.overlay` (taps and the underlay bridge), the NIC checks' interface
//! choice ([`crate::targets::underlay_nics`]), the preflight runbooks (the bridge and
//! its ports), `underlay.on-link` (is the peer on-link or behind a gateway).

use std::io;
use std::net::IpAddr;
use std::time::Instant;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{InfoKind, LinkAttribute, LinkInfo, LinkMessage};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage, RouteType};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

use crate::facts::links::{Link, Route, NETLINK_TIMEOUT};
use crate::facts::ProbeError;

/// The route the kernel would use to reach `addr` (`RTM_GETROUTE` with
/// `RTA_DST`, the same question `ip route get ADDR` asks).
///
/// No route at all (ENETUNREACH, EHOSTUNREACH, an unreachable or blackhole
/// route) is [`ProbeError::NotFound`] naming the destination, so callers can
/// tell "no route" from a netlink failure. Out of interface `oif` when given
/// (`ip route get ADDR oif DEV`): a link-local IPv6 peer is reachable only
/// on the interface its scope names. Bounded as the module says, within
/// `deadline`.
pub fn route_via(
    addr: IpAddr,
    oif: Option<u32>,
    deadline: Option<Instant>,
) -> Result<Route, ProbeError> {
    let mut msg = RouteMessage::default();
    msg.header.address_family = family_of(addr);
    msg.header.destination_prefix_length = if addr.is_ipv4() { 32 } else { 128 };
    msg.attributes
        .push(RouteAttribute::Destination(addr.into()));
    if let Some(oif) = oif {
        msg.attributes.push(RouteAttribute::Oif(oif));
    }
    let answers = match request(RouteNetlinkMessage::GetRoute(msg), false, deadline) {
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
    let interface = link_by_index(oif, deadline)?.name;
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
pub fn link_by_name(name: &str, deadline: Option<Instant>) -> Result<Link, ProbeError> {
    crate::validate::interface(name).map_err(ProbeError::Other)?;
    let mut msg = LinkMessage::default();
    msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
    single_link(msg, name, deadline)
}

/// One link by index. A missing device is [`ProbeError::NotFound`].
pub fn link_by_index(index: u32, deadline: Option<Instant>) -> Result<Link, ProbeError> {
    let mut msg = LinkMessage::default();
    msg.header.index = index;
    single_link(msg, &format!("interface index {index}"), deadline)
}

/// Every link in this network namespace, in index order: one dump.
pub fn links(deadline: Option<Instant>) -> Result<Vec<Link>, ProbeError> {
    let answers = request(
        RouteNetlinkMessage::GetLink(LinkMessage::default()),
        true,
        deadline,
    )
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

/// Every address configured on this host (both families, every
/// interface, loopback included): what "this host's own addresses" means
/// when excluding peers.
pub fn local_addresses(deadline: Option<Instant>) -> Result<Vec<IpAddr>, ProbeError> {
    let answers = request(
        RouteNetlinkMessage::GetAddress(AddressMessage::default()),
        true,
        deadline,
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

fn single_link(
    msg: LinkMessage,
    what: &str,
    deadline: Option<Instant>,
) -> Result<Link, ProbeError> {
    let answers = match request(RouteNetlinkMessage::GetLink(msg), false, deadline) {
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
    match e.kind() {
        io::ErrorKind::PermissionDenied => {
            return ProbeError::PermissionDenied {
                what: what.to_owned(),
                needs: format!("permission to use rtnetlink for {what}"),
            }
        }
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            return ProbeError::Other(format!(
                "the kernel did not answer the rtnetlink {what} in time (within {NETLINK_TIMEOUT:?}, or by the run's deadline)"
            ))
        }
        _ => {}
    }
    ProbeError::Io {
        what: format!("netlink {what}"),
        source: e,
    }
}

/// The instant one request must be answered by: [`NETLINK_TIMEOUT`] from
/// now, or `deadline` when that comes first.
fn answer_by(deadline: Option<Instant>) -> Instant {
    let bound = Instant::now() + NETLINK_TIMEOUT;
    deadline.map_or(bound, |d| d.min(bound))
}

/// Send one request on a fresh NETLINK_ROUTE socket and collect the
/// answers: one message, or every message of a dump up to NLMSG_DONE, all
/// by [`answer_by`] (`TimedOut` past it). A netlink error answer becomes
/// the matching `io::Error`.
fn request(
    inner: RouteNetlinkMessage,
    dump: bool,
    deadline: Option<Instant>,
) -> io::Result<Vec<RouteNetlinkMessage>> {
    let by = answer_by(deadline);
    if Instant::now() >= by {
        return Err(io::ErrorKind::TimedOut.into());
    }
    let mut socket = Socket::new(NETLINK_ROUTE)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;

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
        let left = by.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        crate::live::set_receive_timeout(&socket, left)?;
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
    use crate::facts::links::{by_index, named, port_names, ports_of, underlay_bridge};
    use std::net::{Ipv4Addr, Ipv6Addr};
    use std::time::Duration;

    #[test]
    fn loopback_link_and_route() {
        let lo = link_by_name("lo", None).unwrap();
        assert_eq!(lo.index, 1);
        // sysfs as the independent oracle of the MTU.
        let sysfs = std::fs::read_to_string("/sys/class/net/lo/mtu").unwrap();
        assert_eq!(lo.mtu.to_string(), sysfs.trim());
        assert!(!lo.is_bridge());
        assert_eq!(link_by_index(1, None).unwrap().name, "lo");
        let r = route_via(IpAddr::V4(Ipv4Addr::LOCALHOST), None, None).unwrap();
        assert_eq!(r.interface, "lo");
        assert!(r.local && r.on_link());
        let addrs = local_addresses(None).unwrap();
        assert!(
            addrs.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)),
            "{addrs:?}"
        );
        let dump = links(None).unwrap();
        assert_eq!(named(&dump, "lo"), Some(&lo));
        assert_eq!(by_index(&dump, 1), Some(&lo));
        if addrs.contains(&IpAddr::V6(Ipv6Addr::LOCALHOST)) {
            assert_eq!(
                route_via(IpAddr::V6(Ipv6Addr::LOCALHOST), None, None)
                    .unwrap()
                    .interface,
                "lo"
            );
        }
    }

    #[test]
    fn missing_device_is_not_found() {
        assert!(matches!(
            link_by_name("nosuchdev0", None),
            Err(ProbeError::NotFound(_))
        ));
        assert!(link_by_name("../etc", None).is_err());
        assert!(matches!(
            link_by_index(999_999, None),
            Err(ProbeError::NotFound(_))
        ));
    }

    #[test]
    fn nothing_is_asked_past_the_deadline() {
        let past = Some(Instant::now() - Duration::from_millis(1));
        for err in [
            links(past).unwrap_err(),
            link_by_name("lo", past).unwrap_err(),
            local_addresses(past).unwrap_err(),
            route_via(IpAddr::V4(Ipv4Addr::LOCALHOST), None, past).unwrap_err(),
        ] {
            let text = err.to_string();
            assert!(text.contains("did not answer"), "{text}");
            assert!(text.contains("deadline"), "{text}");
        }
        // A deadline beyond the bound: the bound decides.
        let later = Instant::now() + 10 * NETLINK_TIMEOUT;
        assert!(answer_by(Some(later)) <= Instant::now() + NETLINK_TIMEOUT);
        assert!(links(Some(later)).is_ok());
    }

    fn link(index: u32, name: &str, kind: Option<&str>, master: Option<u32>) -> Link {
        Link {
            index,
            name: name.into(),
            mtu: 1500,
            min_mtu: None,
            max_mtu: None,
            master,
            kind: kind.map(str::to_owned),
            up: true,
        }
    }

    #[test]
    fn bridges_and_their_ports_from_one_dump() {
        let dump = [
            link(1, "lo", None, None),
            link(2, "br-lan", Some("bridge"), None),
            link(3, "zport", Some("veth"), Some(2)),
            link(4, "aport", Some("veth"), Some(2)),
            link(5, "br-vpc", Some("openvswitch"), Some(6)),
            link(6, "ovs-system", Some("openvswitch"), None),
            link(7, "bond0", Some("bond"), None),
            link(8, "enp1s0", None, Some(7)),
        ];
        // br-vpc comes first whatever it is; it is no Linux bridge.
        let vpc = underlay_bridge(&dump).unwrap();
        assert_eq!(vpc.name, "br-vpc");
        assert!(port_names(&dump, vpc).is_empty());
        let lan = named(&dump, "br-lan").unwrap();
        assert!(lan.is_bridge());
        assert_eq!(underlay_bridge(&dump[..4]).unwrap().name, "br-lan");
        // IFLA_MASTER: in index order as ports, by name as names.
        let ports: Vec<&str> = ports_of(&dump, lan)
            .iter()
            .map(|l| l.name.as_str())
            .collect();
        assert_eq!(ports, ["zport", "aport"]);
        assert_eq!(port_names(&dump, lan), ["aport", "zport"]);
        // A bond's ports are its ports, but it is no bridge.
        let bond = named(&dump, "bond0").unwrap();
        assert_eq!(ports_of(&dump, bond)[0].name, "enp1s0");
        assert!(port_names(&dump, bond).is_empty());
        assert_eq!(underlay_bridge(&dump[..1]), None);
        assert_eq!(by_index(&dump, 9), None);
    }
}
