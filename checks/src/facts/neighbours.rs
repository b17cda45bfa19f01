//! The kernel's neighbour tables and their entries, as rtnetlink reports
//! them: `RTM_GETNEIGHTBL` (one message per table, ARP's `arp_cache` and
//! IPv6's `ndisc_cache`, with its thresholds, how many entries it holds and
//! its statistics) and `RTM_GETNEIGH` (one message per entry of this network
//! namespace: a next hop, its interface, its state).
//!
//! Why they matter: a node of a 1,000-node cluster has a neighbour for every
//! other node on every plane's segment, and the table is one for the whole
//! kernel, every network namespace's entries counted together against
//! `gc_thresh3` (1024 by default; the initial namespace's
//! `net.ipv4.neigh.default.gc_thresh*` apply to all). Once it is full the
//! kernel cannot add an entry for a new next hop and drops what was to be
//! sent to it. On Debian's 6.1 kernel (`gc_thresh3` lowered to 16, 118
//! destinations on one segment) every UDP and raw ICMP `sendto` returned
//! success while the packets were dropped; the only traces were the table's
//! `table_fulls` counter (103 after the run) and "neighbor table overflow!"
//! in the kernel log. (The same kernel says ENOBUFS to a socket that sets
//! IP_RECVERR, as ping and mtu.path's probes do: measured in the kernel
//! lab; without it raw and UDP sockets hide ENOBUFS.) `table_fulls` is read
//! here, and what the table holds.
//!
//! Pure: the bytes of a dump in, typed facts out, so recorded dumps are
//! parsed and fuzzed alike. The socket is [`crate::live::neighbours`]'s; the
//! table messages are whole-kernel in any namespace (thresholds, entries and
//! statistics are the table's, not the namespace's).

use std::io;
use std::net::IpAddr;

use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourMessage};
use netlink_packet_route::neighbour_table::{NeighbourTableAttribute, NeighbourTableMessage};
use netlink_packet_route::RouteNetlinkMessage;
use serde::{Deserialize, Serialize};

use crate::facts::ProbeError;

/// `AF_INET`: the ARP table's family.
pub const AF_INET: u8 = 2;
/// `AF_INET6`: the IPv6 neighbour discovery table's family.
pub const AF_INET6: u8 = 10;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const RTM_NEWNEIGH: u16 = 28;
const RTM_NEWNEIGHTBL: u16 = 64;
/// `struct nlmsghdr`.
const HEADER_LEN: usize = 16;

/// `NUD_*`: a neighbour entry's state bits (`include/uapi/linux/neighbour.h`).
pub const NUD_INCOMPLETE: u16 = 0x01;
pub const NUD_REACHABLE: u16 = 0x02;
pub const NUD_STALE: u16 = 0x04;
pub const NUD_DELAY: u16 = 0x08;
pub const NUD_PROBE: u16 = 0x10;
pub const NUD_FAILED: u16 = 0x20;
pub const NUD_NOARP: u16 = 0x40;
pub const NUD_PERMANENT: u16 = 0x80;
/// `NUD_VALID`: a link-layer address is known, so packets leave at once.
pub const NUD_VALID: u16 =
    NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_PROBE | NUD_STALE | NUD_DELAY;

/// One neighbour table, whole-kernel, as `ip -s ntable show` prints it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeighbourTable {
    /// `arp_cache` (IPv4) or `ndisc_cache` (IPv6).
    pub name: String,
    /// Its address family: [`AF_INET`] or [`AF_INET6`].
    pub family: u8,
    /// Below this many entries the garbage collector leaves the table alone.
    pub gc_thresh1: u32,
    /// Above this many, entries unused for 5 s are collected.
    pub gc_thresh2: u32,
    /// The most entries the table holds: past it, no new next hop can be
    /// added and what was to be sent to one is dropped.
    pub gc_thresh3: u32,
    /// Entries held now, in every network namespace (`NDTA_CONFIG`'s
    /// `ndtc_entries`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u32>,
    /// Times an entry could not be added because the table was full, since
    /// boot (`NDTA_STATS`'s `ndts_table_fulls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_fulls: Option<u64>,
    /// Times the table was collected because it was over `gc_thresh2` or
    /// `gc_thresh3`, since boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced_gc_runs: Option<u64>,
}

impl NeighbourTable {
    pub fn is_ipv4(&self) -> bool {
        self.family == AF_INET
    }

    pub fn is_ipv6(&self) -> bool {
        self.family == AF_INET6
    }

    /// Where its thresholds are set, in the initial network namespace:
    /// `net.ipv4.neigh.default` (`gc_thresh1` … beneath it).
    pub fn sysctl_prefix(&self) -> Option<&'static str> {
        sysctl_prefix(self.family)
    }

    /// `gc_thresh1`, `gc_thresh2`, `gc_thresh3`.
    pub fn thresholds(&self) -> [u32; 3] {
        [self.gc_thresh1, self.gc_thresh2, self.gc_thresh3]
    }

    /// As the checks' evidence shows it; none for a family that has no
    /// sysctls of its own.
    pub fn seen(&self) -> Option<TableSeen> {
        Some(TableSeen {
            table: self.name.clone(),
            sysctl: self.sysctl_prefix()?.to_owned(),
            gc_thresh1: self.gc_thresh1,
            gc_thresh2: self.gc_thresh2,
            gc_thresh3: self.gc_thresh3,
            entries: self.entries,
        })
    }
}

/// A table as the checks' evidence names it: which, where its thresholds
/// are set, the thresholds and what it holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSeen {
    /// `arp_cache` or `ndisc_cache`.
    pub table: String,
    /// Where its thresholds are set: `net.ipv4.neigh.default`.
    pub sysctl: String,
    pub gc_thresh1: u32,
    pub gc_thresh2: u32,
    pub gc_thresh3: u32,
    /// Entries it holds, every network namespace's together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u32>,
}

impl TableSeen {
    pub fn thresholds(&self) -> [u32; 3] {
        [self.gc_thresh1, self.gc_thresh2, self.gc_thresh3]
    }
}

/// `net.ipv4.neigh.default` or `net.ipv6.neigh.default`: where the
/// thresholds of `family`'s table are set.
pub fn sysctl_prefix(family: u8) -> Option<&'static str> {
    match family {
        AF_INET => Some("net.ipv4.neigh.default"),
        AF_INET6 => Some("net.ipv6.neigh.default"),
        _ => None,
    }
}

/// The family of the table that holds `addr`'s next hops.
pub fn family_of(addr: IpAddr) -> u8 {
    if addr.is_ipv4() {
        AF_INET
    } else {
        AF_INET6
    }
}

/// The table of `family` among `tables` (ARP for IPv4, ND for IPv6).
pub fn table_of(tables: &[NeighbourTable], family: u8) -> Option<&NeighbourTable> {
    tables.iter().find(|t| t.family == family)
}

/// One neighbour entry of this network namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbour {
    /// The interface it is on.
    pub ifindex: u32,
    /// The next hop (`NDA_DST`).
    pub address: IpAddr,
    /// `NUD_*` bits.
    pub state: u16,
}

impl Neighbour {
    /// A link-layer address is known (reachable, stale, delay, probe,
    /// permanent, noarp).
    pub fn resolved(&self) -> bool {
        self.state & NUD_VALID != 0
    }

    pub fn state_name(&self) -> &'static str {
        state_name(self.state)
    }
}

/// `ip neigh`'s word for a state: `reachable`, `incomplete`, …
pub fn state_name(state: u16) -> &'static str {
    for (bit, name) in [
        (NUD_PERMANENT, "permanent"),
        (NUD_NOARP, "noarp"),
        (NUD_REACHABLE, "reachable"),
        (NUD_STALE, "stale"),
        (NUD_DELAY, "delay"),
        (NUD_PROBE, "probe"),
        (NUD_FAILED, "failed"),
        (NUD_INCOMPLETE, "incomplete"),
    ] {
        if state & bit != 0 {
            return name;
        }
    }
    "none"
}

/// The entry for next hop `address` on interface `ifindex`, if the
/// namespace holds one.
pub fn entry_for(neighbours: &[Neighbour], ifindex: u32, address: IpAddr) -> Option<&Neighbour> {
    neighbours
        .iter()
        .find(|n| n.ifindex == ifindex && n.address == address)
}

/// What one or more `recv`s of a dump held, and whether its end was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dump<T> {
    pub items: Vec<T>,
    /// `NLMSG_DONE` (or an acknowledgement) was seen: nothing more follows.
    pub done: bool,
}

impl<T> Default for Dump<T> {
    fn default() -> Dump<T> {
        Dump {
            items: Vec::new(),
            done: false,
        }
    }
}

/// The tables in an `RTM_GETNEIGHTBL` dump. The messages that carry only a
/// device's parameters (no thresholds) are passed over.
pub fn parse_table_dump(bytes: &[u8]) -> Result<Dump<NeighbourTable>, ProbeError> {
    let mut out = Dump::default();
    out.done = walk(bytes, "RTM_GETNEIGHTBL", RTM_NEWNEIGHTBL, |m| {
        if let RouteNetlinkMessage::NewNeighbourTable(t) = m {
            out.items.extend(table_from(&t));
        }
    })?;
    Ok(out)
}

/// The entries in an `RTM_GETNEIGH` dump that name an IP next hop.
pub fn parse_neighbour_dump(bytes: &[u8]) -> Result<Dump<Neighbour>, ProbeError> {
    let mut out = Dump::default();
    out.done = walk(bytes, "RTM_GETNEIGH", RTM_NEWNEIGH, |m| {
        if let RouteNetlinkMessage::NewNeighbour(n) = m {
            out.items.extend(neighbour_from(&n));
        }
    })?;
    Ok(out)
}

/// One table from its `RTM_NEWNEIGHTBL` message; `None` for a message of a
/// device's parameters only (no `NDTA_THRESH3`).
pub fn table_from(msg: &NeighbourTableMessage) -> Option<NeighbourTable> {
    let mut name = None;
    let (mut t1, mut t2, mut t3) = (None, None, None);
    let mut entries = None;
    let mut stats = None;
    for attr in &msg.attributes {
        match attr {
            NeighbourTableAttribute::Name(n) => name = Some(n.clone()),
            NeighbourTableAttribute::Threshold1(v) => t1 = Some(*v),
            NeighbourTableAttribute::Threshold2(v) => t2 = Some(*v),
            NeighbourTableAttribute::Threshold3(v) => t3 = Some(*v),
            NeighbourTableAttribute::Config(c) => entries = Some(c.entries),
            NeighbourTableAttribute::Stats(s) => stats = Some(*s),
            _ => {}
        }
    }
    Some(NeighbourTable {
        name: name?,
        family: u8::from(msg.header.family),
        gc_thresh1: t1.unwrap_or(0),
        gc_thresh2: t2.unwrap_or(0),
        gc_thresh3: t3?,
        entries,
        table_fulls: stats.map(|s| s.table_fulls),
        forced_gc_runs: stats.map(|s| s.forced_gc_runs),
    })
}

/// One entry from its `RTM_NEWNEIGH` message; `None` without an IP
/// `NDA_DST` (a bridge's FDB entry, a multicast one of another family).
pub fn neighbour_from(msg: &NeighbourMessage) -> Option<Neighbour> {
    let address = msg.attributes.iter().find_map(|a| match a {
        NeighbourAttribute::Destination(NeighbourAddress::Inet(v4)) => Some(IpAddr::V4(*v4)),
        NeighbourAttribute::Destination(NeighbourAddress::Inet6(v6)) => Some(IpAddr::V6(*v6)),
        _ => None,
    })?;
    Some(Neighbour {
        ifindex: msg.header.ifindex,
        address,
        state: u16::from(msg.header.state),
    })
}

/// Hand every message of type `entry` in `bytes` to `each`; true once the
/// dump's end was seen. Lengths are checked before a message is parsed; an
/// error answer becomes the probe error it means.
fn walk(
    bytes: &[u8],
    request: &str,
    entry: u16,
    mut each: impl FnMut(RouteNetlinkMessage),
) -> Result<bool, ProbeError> {
    let what = format!("netlink {request} dump");
    let mut offset = 0;
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        if rest.len() < HEADER_LEN {
            return Err(ProbeError::parse(
                &what,
                format!("{} trailing bytes", rest.len()),
            ));
        }
        let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if len < HEADER_LEN || len > rest.len() {
            return Err(ProbeError::parse(
                &what,
                format!("message length {len} with {} bytes left", rest.len()),
            ));
        }
        let kind = u16::from_ne_bytes([rest[4], rest[5]]);
        offset = offset.saturating_add((len + 3) & !3);
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                // -errno after the header; 0 is an acknowledgement.
                let code = rest
                    .get(HEADER_LEN..HEADER_LEN + 4)
                    .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                    .ok_or_else(|| ProbeError::parse(&what, "an error answer without its code"))?;
                if code == 0 {
                    return Ok(true);
                }
                let errno = i32::try_from(code.unsigned_abs()).unwrap_or(i32::MAX);
                return Err(ProbeError::Io {
                    what,
                    source: io::Error::from_raw_os_error(errno),
                });
            }
            k if k == entry => {
                let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&rest[..len])
                    .map_err(|e| ProbeError::parse(&what, e.to_string()))?;
                if let NetlinkPayload::InnerMessage(m) = msg.payload {
                    each(m);
                }
            }
            // Not part of this dump.
            _ => {}
        }
    }
    Ok(false)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A capture in `checks/testdata/neigh/` (provenance in its `#` lines):
    /// every `recv()` of the dump, joined.
    pub(crate) fn capture(name: &str) -> Vec<u8> {
        crate::facts::hex_capture("neigh", name)
    }

    #[test]
    fn the_host_tables_read_as_ip_ntable_shows_them() {
        // Captured in a child namespace of this machine's 6.18 kernel; `ip
        // -s ntable show` then said thresh1 128 thresh2 512 thresh3 1024,
        // entries 6, table_fulls 0 (the provenance lines).
        let dump = parse_table_dump(&capture("host-6.18.ntables")).unwrap();
        assert!(dump.done);
        let arp = table_of(&dump.items, AF_INET).unwrap();
        assert_eq!(arp.name, "arp_cache");
        assert_eq!(
            (arp.gc_thresh1, arp.gc_thresh2, arp.gc_thresh3),
            (128, 512, 1024)
        );
        assert_eq!(arp.entries, Some(6));
        assert_eq!(arp.table_fulls, Some(0));
        assert_eq!(arp.sysctl_prefix(), Some("net.ipv4.neigh.default"));
        let nd = table_of(&dump.items, AF_INET6).unwrap();
        assert_eq!(nd.name, "ndisc_cache");
        assert_eq!(nd.sysctl_prefix(), Some("net.ipv6.neigh.default"));
        // One message per table; the per-device parameter messages are not
        // tables.
        assert_eq!(
            dump.items.iter().filter(|t| t.name == "arp_cache").count(),
            1
        );
    }

    #[test]
    fn the_lab_neighbours_read_as_ip_neigh_shows_them() {
        let dump = parse_neighbour_dump(&capture("lab-6.18.neighbours")).unwrap();
        assert!(dump.done);
        let state = |a: &str| {
            let addr: IpAddr = a.parse().unwrap();
            dump.items
                .iter()
                .find(|n| n.address == addr)
                .map(Neighbour::state_name)
        };
        assert_eq!(state("198.18.7.2"), Some("reachable"));
        assert_eq!(state("198.18.7.9"), Some("incomplete"));
        assert_eq!(state("198.18.7.50"), Some("permanent"));
        assert_eq!(state("fd00:198:18:7::2"), Some("reachable"));
        let two = dump
            .items
            .iter()
            .find(|n| n.address == "198.18.7.2".parse::<IpAddr>().unwrap())
            .unwrap();
        assert!(two.resolved());
        assert_eq!(entry_for(&dump.items, two.ifindex, two.address), Some(two));
        assert_eq!(entry_for(&dump.items, two.ifindex + 1, two.address), None);
        let nine = "198.18.7.9".parse().unwrap();
        assert!(!entry_for(&dump.items, two.ifindex, nine)
            .unwrap()
            .resolved());
    }

    #[test]
    fn the_lab_kernel_after_its_overflow_reads_as_ip_ntable_showed_it() {
        // Debian's 6.1 in the kernel lab, right after mtu.path ran 42 peers
        // into a table of 16: `ip -s ntable` said table_fulls 312.
        let dump = parse_table_dump(&capture("overflowed-6.1.ntables")).unwrap();
        assert!(dump.done);
        let arp = table_of(&dump.items, AF_INET).unwrap();
        assert_eq!((arp.gc_thresh1, arp.gc_thresh2, arp.gc_thresh3), (4, 8, 16));
        assert_eq!(arp.table_fulls, Some(312));
        assert!(arp.entries.unwrap() <= 16 + 3, "{arp:?}");
        assert!(arp.forced_gc_runs.unwrap() > 0, "{arp:?}");
        // The prober's entries then: every responder address that answered
        // and the two peers resolved first, and none of the ones dropped.
        let entries = parse_neighbour_dump(&capture("overflowed-6.1.neighbours")).unwrap();
        assert!(entries.done);
        let v4: Vec<&Neighbour> = entries
            .items
            .iter()
            .filter(|n| n.address.is_ipv4())
            .collect();
        assert!(!v4.is_empty() && v4.len() <= 16, "{v4:?}");
        assert!(v4.iter().all(|n| n.resolved()), "{v4:?}");
        let hole: IpAddr = "198.18.0.3".parse().unwrap();
        assert!(v4.iter().any(|n| n.address == hole));
    }

    #[test]
    fn a_dump_split_over_recvs_ends_only_at_its_done() {
        let whole = capture("host-6.18.ntables");
        // Everything before NLMSG_DONE (the last 20 bytes): not done yet.
        let (head, done) = whole.split_at(whole.len() - 20);
        let first = parse_table_dump(head).unwrap();
        assert!(!first.done);
        assert_eq!(first.items, parse_table_dump(&whole).unwrap().items);
        assert!(parse_table_dump(done).unwrap().done);
    }

    #[test]
    fn broken_dumps_are_parse_errors_and_error_answers_io_errors() {
        for junk in [&[1u8, 2, 3][..], &[0u8; 20][..], &[0xffu8; 40][..]] {
            assert!(
                matches!(parse_table_dump(junk), Err(ProbeError::Parse { .. })),
                "{junk:?}"
            );
        }
        // An NLMSG_ERROR answer with -EPERM, and one with i32::MIN.
        for (code, errno) in [(-1i32, 1), (i32::MIN, i32::MAX)] {
            let mut msg = Vec::new();
            msg.extend_from_slice(&36u32.to_ne_bytes());
            msg.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
            msg.extend_from_slice(&[0u8; 10]);
            msg.extend_from_slice(&code.to_ne_bytes());
            msg.extend_from_slice(&[0u8; 16]);
            match parse_neighbour_dump(&msg) {
                Err(ProbeError::Io { source, .. }) => {
                    assert_eq!(source.raw_os_error(), Some(errno))
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn states_read_as_ip_neigh_names_them() {
        assert_eq!(state_name(0), "none");
        assert_eq!(state_name(NUD_FAILED), "failed");
        assert_eq!(state_name(NUD_STALE), "stale");
        let n = |state| Neighbour {
            ifindex: 2,
            address: "198.18.0.2".parse().unwrap(),
            state,
        };
        for s in [NUD_INCOMPLETE, NUD_FAILED, 0] {
            assert!(!n(s).resolved(), "{s}");
        }
        for s in [
            NUD_REACHABLE,
            NUD_STALE,
            NUD_DELAY,
            NUD_PROBE,
            NUD_PERMANENT,
        ] {
            assert!(n(s).resolved(), "{s}");
        }
    }
}
