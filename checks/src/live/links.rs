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
//! **The bound.** Everything here is read-only and bounded. All the
//! receives of one request (one answer, or every part of a dump) share one
//! bound: [`NETLINK_TIMEOUT`] from when the request is sent, cut to the
//! deadline it is given (a check's reads are given the run's deadline,
//! through [`crate::host::HostRef`]). Before each receive, `SO_RCVTIMEO` is
//! set to what is left of that bound; a kernel that has not answered by
//! then is a probe error saying so, never a hang, and a request made after
//! the deadline fails at once.
//!
//! **The socket.** Each thread (each check runs on its own) asks on one
//! socket of its own, opened on its first request, and matches answers to
//! requests by sequence number; a socket whose exchange failed is closed,
//! so that a late answer can never be taken for the next request's
//! (`Channel`).
//!
//! The netlink socket belongs to the network namespace of the process, so a
//! run under `ip netns exec` sees that namespace's routes and links.
//!
//! Reused by: `mtu.path` (egress interface per peer, and its ports),
//! `mtu.overlay` (taps and the underlay bridge), the NIC checks' interface
//! choice ([`crate::targets::underlay_nics`]), the preflight runbooks (the bridge and
//! its ports), `underlay.on-link` (is the peer on-link or behind a gateway).

use std::cell::RefCell;
use std::io;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
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
/// `deadline`. The egress interface's name is asked by index
/// (`SIOCGIFNAME`); an interface gone since is [`ProbeError::NotFound`].
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
    let interface = interface_name(oif)?;
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

pub(super) fn io_err(what: &str, e: io::Error) -> ProbeError {
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

/// Send one request on this thread's NETLINK_ROUTE socket ([`Channel`])
/// and collect the answers: one message, or every message of a dump up to
/// NLMSG_DONE, all by [`answer_by`] (`TimedOut` past it). A netlink error
/// answer becomes the matching `io::Error`.
pub(super) fn request(
    inner: RouteNetlinkMessage,
    dump: bool,
    deadline: Option<Instant>,
) -> io::Result<Vec<RouteNetlinkMessage>> {
    let by = answer_by(deadline);
    if Instant::now() >= by {
        return Err(io::ErrorKind::TimedOut.into());
    }
    with_channel(|channel| {
        let seq = channel.send(inner, dump).map_err(Failure::Channel)?;
        channel.answer(seq, dump, by)
    })
}

/// The name of interface `index` (`SIOCGIFNAME`, the ioctl behind
/// `if_indextoname`), asked on this thread's rtnetlink socket, so of the
/// same network namespace as its routes: the one fact of a link a route
/// needs, without a whole `RTM_GETLINK` answer. A vanished index is
/// [`ProbeError::NotFound`], as [`link_by_index`] says it.
fn interface_name(index: u32) -> Result<String, ProbeError> {
    let what = format!("interface index {index}");
    match with_channel(|channel| channel.interface_name(index).map_err(Failure::Answer)) {
        Ok(name) => Ok(name),
        Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {
            Err(ProbeError::NotFound(format!("network device {what}")))
        }
        Err(e) => Err(io_err(&format!("link lookup for {what}"), e)),
    }
}

nix::ioctl_readwrite_bad!(siocgifname, libc::SIOCGIFNAME, libc::ifreq);

/// The receive buffer: a dump's datagrams are at most 32 KiB
/// (`SKB_WITH_OVERHEAD(32768)` in the kernel's netlink_dump).
const RECEIVE_BUFFER: usize = 1 << 16;

/// One thread's NETLINK_ROUTE socket, opened on its first request and kept
/// for the thread's life: a check asks one route per peer, and a socket
/// per request was five more syscalls each (socket, bind, getsockname,
/// connect, close) and a 64 KiB buffer zeroed each time.
///
/// Requests on it carry increasing sequence numbers, and only messages
/// with the sequence number of the request being answered are taken
/// ([`absorb`]): anything else (the late answer of a request that timed
/// out) is passed over. A socket whose exchange failed (a timeout, a
/// receive error, an answer that does not parse) is closed besides, so that
/// no stale answer waits on the socket the next request uses; a netlink
/// error answer (ENODEV, ENETUNREACH) ends its request cleanly and keeps it.
struct Channel {
    socket: Socket,
    seq: u32,
    rx: Vec<u8>,
}

thread_local! {
    static CHANNEL: RefCell<Option<Channel>> = const { RefCell::new(None) };
}

/// Why an exchange ended without an answer: the kernel's error answer
/// (the channel stays good), or a failure of the channel itself (it is
/// closed).
#[derive(Debug)]
enum Failure {
    Answer(io::Error),
    Channel(io::Error),
}

/// Run `f` on this thread's [`Channel`], opening it first if need be, and
/// closing it when `f` fails with [`Failure::Channel`].
fn with_channel<T>(f: impl FnOnce(&mut Channel) -> Result<T, Failure>) -> io::Result<T> {
    CHANNEL.with(|cell| {
        let mut slot = cell.borrow_mut();
        let channel = match &mut *slot {
            Some(channel) => channel,
            empty => empty.insert(Channel::open()?),
        };
        match f(channel) {
            Ok(v) => Ok(v),
            Err(Failure::Answer(e)) => Err(e),
            Err(Failure::Channel(e)) => {
                *slot = None;
                Err(e)
            }
        }
    })
}

impl Channel {
    fn open() -> io::Result<Channel> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        Ok(Channel {
            socket,
            seq: 0,
            rx: vec![0u8; RECEIVE_BUFFER],
        })
    }

    /// Send `inner` under the next sequence number (never 0, which the
    /// kernel's notifications carry), and return that number.
    fn send(&mut self, inner: RouteNetlinkMessage, dump: bool) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1).max(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | if dump { NLM_F_DUMP } else { 0 };
        header.sequence_number = self.seq;
        let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(inner));
        msg.finalize();
        let mut buf = vec![0u8; msg.buffer_len()];
        msg.serialize(&mut buf);
        self.socket.send(&buf, 0)?;
        Ok(self.seq)
    }

    /// Receive the answer to request `seq` by `by`: each receive bounded
    /// (`SO_RCVTIMEO`) by what is left of it.
    fn answer(
        &mut self,
        seq: u32,
        dump: bool,
        by: Instant,
    ) -> Result<Vec<RouteNetlinkMessage>, Failure> {
        let mut out = Vec::new();
        loop {
            let left = by.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Failure::Channel(io::ErrorKind::TimedOut.into()));
            }
            crate::live::set_receive_timeout(&self.socket, left).map_err(Failure::Channel)?;
            let n = self
                .socket
                .recv(&mut &mut self.rx[..], 0)
                .map_err(Failure::Channel)?;
            if n == 0 {
                return Err(Failure::Channel(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "netlink socket closed",
                )));
            }
            if absorb(&self.rx[..n], seq, dump, &mut out)? {
                return Ok(out);
            }
        }
    }

    fn interface_name(&self, index: u32) -> io::Result<String> {
        let index =
            libc::c_int::try_from(index).map_err(|_| io::Error::from_raw_os_error(libc::ENODEV))?;
        // SAFETY: ifreq is plain old data; all-zero is a valid value.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        ifr.ifr_ifru.ifru_ifindex = index;
        // SAFETY: `ifr` is a live ifreq; SIOCGIFNAME reads its index and
        // writes a NUL-terminated name of at most IFNAMSIZ bytes into it.
        unsafe { siocgifname(self.socket.as_raw_fd(), &mut ifr) }.map_err(io::Error::from)?;
        let name: Vec<u8> = ifr
            .ifr_name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

/// Add what one datagram holds of the answer to request `seq` to `out`;
/// true when the answer is complete (the one message of a plain request,
/// NLMSG_DONE or an acknowledgement of a dump). Messages of other sequence
/// numbers are passed over; a netlink error answer is
/// [`Failure::Answer`], a datagram that does not parse a
/// [`Failure::Channel`].
fn absorb(
    datagram: &[u8],
    seq: u32,
    dump: bool,
    out: &mut Vec<RouteNetlinkMessage>,
) -> Result<bool, Failure> {
    let mut offset = 0;
    while offset < datagram.len() {
        let parsed = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&datagram[offset..])
            .map_err(|e| {
                Failure::Channel(io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
            })?;
        let len = parsed.header.length as usize;
        if len == 0 {
            return Err(Failure::Channel(io::Error::new(
                io::ErrorKind::InvalidData,
                "zero-length netlink message",
            )));
        }
        offset += (len + 3) & !3;
        if parsed.header.sequence_number != seq {
            continue;
        }
        match parsed.payload {
            NetlinkPayload::Done(_) => return Ok(true),
            NetlinkPayload::Error(e) => {
                if e.code.is_none() {
                    return Ok(true);
                }
                return Err(Failure::Answer(e.to_io()));
            }
            NetlinkPayload::InnerMessage(m) => {
                out.push(m);
                if !dump {
                    return Ok(true);
                }
            }
            _ => {}
        }
    }
    Ok(false)
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

    /// One datagram of netlink messages, each under its sequence number.
    fn datagram(parts: Vec<(u32, NetlinkPayload<RouteNetlinkMessage>)>) -> Vec<u8> {
        let mut out = Vec::new();
        for (seq, payload) in parts {
            let mut header = NetlinkHeader::default();
            header.sequence_number = seq;
            let mut msg = NetlinkMessage::new(header, payload);
            msg.finalize();
            let mut buf = vec![0u8; msg.buffer_len()];
            msg.serialize(&mut buf);
            buf.resize((buf.len() + 3) & !3, 0);
            out.extend_from_slice(&buf);
        }
        out
    }

    fn new_link(index: u32) -> NetlinkPayload<RouteNetlinkMessage> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        msg.attributes
            .push(LinkAttribute::IfName(format!("if{index}")));
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(msg))
    }

    fn done() -> NetlinkPayload<RouteNetlinkMessage> {
        NetlinkPayload::Done(netlink_packet_core::DoneMessage::default())
    }

    fn error(errno: i32) -> NetlinkPayload<RouteNetlinkMessage> {
        let mut e = netlink_packet_core::ErrorMessage::default();
        e.code = std::num::NonZeroI32::new(-errno);
        e.header = vec![0; 16];
        NetlinkPayload::Error(e)
    }

    fn indexes(out: &[RouteNetlinkMessage]) -> Vec<u32> {
        out.iter()
            .map(|m| match m {
                RouteNetlinkMessage::NewLink(l) => l.header.index,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn only_the_answer_to_this_request_is_taken() {
        // The late answer of request 4 (a dump that timed out) ahead of
        // request 5's, in one datagram.
        let both = datagram(vec![
            (4, new_link(9)),
            (4, done()),
            (5, new_link(1)),
            (5, done()),
        ]);
        let mut out = Vec::new();
        assert!(absorb(&both, 5, true, &mut out).unwrap());
        assert_eq!(indexes(&out), [1]);
        // As a plain request, request 4 takes its one message and stops.
        let mut out = Vec::new();
        assert!(absorb(&both, 4, false, &mut out).unwrap());
        assert_eq!(indexes(&out), [9]);

        // A stale error answer is no answer to this request…
        let mut out = Vec::new();
        let stale = datagram(vec![(6, error(libc::ENODEV))]);
        assert!(!absorb(&stale, 7, false, &mut out).unwrap());
        assert!(out.is_empty());
        // …and the next datagram holds it.
        assert!(absorb(&datagram(vec![(7, new_link(2))]), 7, false, &mut out).unwrap());
        assert_eq!(indexes(&out), [2]);

        // A dump over several datagrams ends at its NLMSG_DONE.
        let mut out = Vec::new();
        let first = datagram(vec![(8, new_link(1)), (8, new_link(2))]);
        assert!(!absorb(&first, 8, true, &mut out).unwrap());
        assert!(absorb(
            &datagram(vec![(8, new_link(3)), (8, done())]),
            8,
            true,
            &mut out
        )
        .unwrap());
        assert_eq!(indexes(&out), [1, 2, 3]);
    }

    #[test]
    fn error_answers_and_broken_datagrams_are_told_apart() {
        let mut out = Vec::new();
        match absorb(
            &datagram(vec![(3, error(libc::ENETUNREACH))]),
            3,
            false,
            &mut out,
        ) {
            Err(Failure::Answer(e)) => assert_eq!(e.raw_os_error(), Some(libc::ENETUNREACH)),
            other => panic!("{other:?}"),
        }
        // An acknowledgement (code 0) ends a request with what it has.
        let mut ack = netlink_packet_core::ErrorMessage::default();
        ack.header = vec![0; 16];
        let acked = datagram(vec![(3, NetlinkPayload::Error(ack))]);
        assert!(absorb(&acked, 3, true, &mut out).unwrap());
        assert!(out.is_empty());
        // Bytes that are no netlink message fail the channel.
        for junk in [&[1u8, 2, 3][..], &[0u8; 20][..]] {
            assert!(matches!(
                absorb(junk, 3, true, &mut out),
                Err(Failure::Channel(_))
            ));
        }
    }

    fn this_threads_socket() -> Option<(i32, u32)> {
        CHANNEL.with(|c| c.borrow().as_ref().map(|c| (c.socket.as_raw_fd(), c.seq)))
    }

    #[test]
    fn one_socket_per_thread_and_late_answers_passed_over() {
        let lo = link_by_name("lo", None).unwrap();
        let (fd, seq) = this_threads_socket().expect("opened by the first request");
        // Three requests whose answers nobody reads, as if each had timed
        // out: an error answer, a route, a dump.
        with_channel(|c| {
            let mut absent = LinkMessage::default();
            absent.header.index = 999_999;
            c.send(RouteNetlinkMessage::GetLink(absent), false)
                .map_err(Failure::Channel)?;
            let mut route = RouteMessage::default();
            route.header.address_family = AddressFamily::Inet;
            route.header.destination_prefix_length = 32;
            route
                .attributes
                .push(RouteAttribute::Destination(Ipv4Addr::LOCALHOST.into()));
            c.send(RouteNetlinkMessage::GetRoute(route), false)
                .map_err(Failure::Channel)?;
            c.send(RouteNetlinkMessage::GetLink(LinkMessage::default()), true)
                .map_err(Failure::Channel)
        })
        .unwrap();
        // Each later request takes its own answer, not the one waiting.
        assert_eq!(link_by_name("lo", None).unwrap(), lo);
        let r = route_via(IpAddr::V4(Ipv4Addr::LOCALHOST), None, None).unwrap();
        assert_eq!((r.interface.as_str(), r.local), ("lo", true));
        let dump = links(None).unwrap();
        assert_eq!(named(&dump, "lo"), Some(&lo));
        let mut seen: Vec<u32> = dump.iter().map(|l| l.index).collect();
        seen.dedup();
        assert_eq!(seen.len(), dump.len(), "one dump, not two: {dump:?}");
        // All on the one socket, under increasing sequence numbers.
        let (same_fd, later) = this_threads_socket().unwrap();
        assert_eq!(same_fd, fd);
        assert_eq!(later, seq + 6);
        // Another thread has a socket of its own.
        let other = std::thread::spawn(|| {
            link_by_index(1, None).unwrap();
            this_threads_socket().unwrap().1
        })
        .join()
        .unwrap();
        assert_eq!(other, 1);
    }

    #[test]
    fn a_failed_channel_is_closed_and_an_error_answer_keeps_it() {
        link_by_index(1, None).unwrap();
        let (fd, _) = this_threads_socket().unwrap();
        assert!(matches!(
            link_by_index(999_999, None),
            Err(ProbeError::NotFound(_))
        ));
        assert_eq!(this_threads_socket().unwrap().0, fd);
        let failed: io::Result<()> =
            with_channel(|_| Err(Failure::Channel(io::ErrorKind::TimedOut.into())));
        assert_eq!(failed.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert_eq!(this_threads_socket(), None);
        // The next request opens a fresh one.
        assert_eq!(link_by_index(1, None).unwrap().name, "lo");
        assert_eq!(this_threads_socket().unwrap().1, 1);
    }

    #[test]
    fn interface_names_by_index_agree_with_the_link_dump() {
        // The dump's IFLA_IFNAME is the oracle of SIOCGIFNAME.
        for link in links(None).unwrap() {
            match interface_name(link.index) {
                Ok(name) => assert_eq!(name, link.name),
                // Gone since the dump (another test's device moved away).
                Err(ProbeError::NotFound(_)) => assert!(link_by_index(link.index, None).is_err()),
                Err(e) => panic!("{}: {e}", link.name),
            }
        }
        assert_eq!(interface_name(1).unwrap(), "lo");
        assert!(matches!(
            interface_name(999_999),
            Err(ProbeError::NotFound(_))
        ));
        assert!(matches!(
            interface_name(u32::MAX),
            Err(ProbeError::NotFound(_))
        ));
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
