//! Which network interfaces the NIC checks look at, decided in one place
//! ([`select`]) and the same way for every check that asks (`nic.queues`,
//! `nic.rings`, `nic.offloads`, `nic.tso`, and the interfaces cpu.softirq
//! and tcp.reordering name):
//!
//! 1. `--interface IF` (repeatable) always wins; each name is validated.
//! 2. The ports of the vpc plane's bridge: br-vpc, else br-lan, else br-wan
//!    (planes collapse on nodes with fewer NICs). The physical NIC is the
//!    bridge's port.
//! 3. The egress interfaces of the routes to the peers (`--peer`, else
//!    discovered: OVN SB `Encap`, peers.nft, the config's nodes; see
//!    [`super::peers`]), as the kernel would pick them (`RTM_GETROUTE`, the
//!    question `ip route get` asks).
//! 4. The interface of the IPv4 default route: with nothing above naming
//!    the underlay (no config yet, or inside a guest, whose NIC name is
//!    distro-dependent: enp0s16, eth0…), the NIC this host's traffic
//!    leaves by is the one an operator means. Every check says so in a note
//!    (`underlay-nic-from-default-route`) and its evidence
//!    (`interface_source: "default route"`), so that a
//!    verdict on it is never read as a verdict on a named underlay.
//!
//! Nothing found is a skip that says how to name one.
//!
//! Which devices exist, which is a Linux bridge and what its ports are come
//! from one rtnetlink link dump per choice ([`crate::live::links`]: `IFLA_MASTER`
//! names a port's bridge); only the lower devices of a stacked interface
//! and a driver that ethtool does not name come from sysfs
//! ([`crate::read::sysfs_net`]).

use std::net::IpAddr;

use crate::ctx::Ctx;
use crate::finding::{Finding, NoteKind, SkipReason};
use crate::host::HostRef;
use crate::settings::Options;

use crate::facts::links::{self, Link};
use crate::facts::ProbeError;
use crate::read::sysfs_net;

/// The interfaces chosen and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub interfaces: Vec<String>,
    /// "--interface", "ports of br-vpc", "routes to peers", [`DEFAULT_ROUTE`].
    pub source: String,
}

pub const NOTHING_FOUND: &str = "no underlay interface found (pass --interface IF)";

/// `interface_source` of a choice made by the default route (source 4).
pub const DEFAULT_ROUTE: &str = "default route";

impl Selection {
    /// True when nothing named the underlay and the default route's
    /// interface was taken.
    pub fn by_default_route(&self) -> bool {
        self.source == DEFAULT_ROUTE
    }

    /// `finding` with a note saying how the interface was chosen when
    /// nothing named the underlay: a verdict on the default route's NIC is
    /// not a verdict on a named underlay, and `--interface` corrects it.
    /// Every NIC check says it alike, so it is a [`crate::finding::Note`], said once on
    /// the first screen, never text in the summary.
    pub fn annotate(&self, finding: Finding) -> Finding {
        if !self.by_default_route() {
            return finding;
        }
        finding.note(
            NoteKind::UnderlayNicFromDefaultRoute,
            format!(
                "{} is the default route's interface: nothing named the underlay; pass --interface IF to judge another",
                self.interfaces.join(", ")
            ),
        )
    }
}

/// The interfaces the NIC checks look at: sources 1–4 of the module doc, in
/// order, from one link dump. Nothing found is a skip saying how to name one.
pub fn select(ctx: &Ctx) -> Result<Selection, Finding> {
    let host = ctx.host();
    let dump = host.links().map_err(Finding::from)?;
    if let Some(sel) = from_flag(&dump, &ctx.opts)? {
        return Ok(sel);
    }
    if let Some(sel) = from_bridge(&dump)? {
        return Ok(sel);
    }
    // Discovery is consulted only when no bridge answered: it may ask OVN.
    let peers: Vec<IpAddr> = crate::targets::peers::discover(ctx)
        .peers
        .into_iter()
        .map(|p| p.address)
        .collect();
    if let Some(sel) = from_peer_routes(host, &dump, &peers)? {
        return Ok(sel);
    }
    match default_route_interface(host, &dump) {
        Some(name) => Ok(Selection {
            interfaces: vec![name],
            source: DEFAULT_ROUTE.to_owned(),
        }),
        None => Err(Finding::skip(SkipReason::NotApplicable(
            NOTHING_FOUND.to_owned(),
        ))),
    }
}

fn from_flag(dump: &[Link], opts: &Options) -> Result<Option<Selection>, Finding> {
    if opts.interfaces.is_empty() {
        return Ok(None);
    }
    let mut names = Vec::new();
    for name in &opts.interfaces {
        crate::validate::interface(name)
            .map_err(|e| Finding::probe_failed(format!("--interface: {e}")))?;
        if links::named(dump, name).is_none() {
            return Err(Finding::probe_failed(format!(
                "--interface {name}: no such interface in this network namespace"
            )));
        }
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    Ok(Some(Selection {
        interfaces: names,
        source: "--interface".to_owned(),
    }))
}

fn from_bridge(dump: &[Link]) -> Result<Option<Selection>, Finding> {
    let Some(bridge) = links::underlay_bridge(dump) else {
        return Ok(None);
    };
    // Not a Linux bridge (an OVS bridge of that name, whose ports are the
    // datapath's): fall through to the routes.
    if !bridge.is_bridge() {
        return Ok(None);
    }
    let ports = links::port_names(dump, bridge);
    if ports.is_empty() {
        return Err(Finding::skip(SkipReason::NotApplicable(format!(
            "{} has no ports, so there is no underlay NIC to inspect (pass --interface IF)",
            bridge.name
        ))));
    }
    Ok(Some(Selection {
        interfaces: ports,
        source: format!("ports of {}", bridge.name),
    }))
}

fn from_peer_routes(
    host: HostRef<'_>,
    dump: &[Link],
    peers: &[IpAddr],
) -> Result<Option<Selection>, Finding> {
    let mut names: Vec<String> = Vec::new();
    for &addr in peers {
        let route = match host.route(addr, None) {
            Ok(r) => r,
            Err(ProbeError::NotFound(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        if route.local {
            continue;
        }
        // A route through a bridge means its ports carry the traffic.
        let egress = match links::by_index(dump, route.oif) {
            Some(link) if link.is_bridge() => links::port_names(dump, link),
            _ => vec![route.interface],
        };
        for name in egress {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    if names.is_empty() {
        return Ok(None);
    }
    Ok(Some(Selection {
        interfaces: names,
        source: "routes to peers".to_owned(),
    }))
}

/// The interface of the IPv4 default route with the lowest metric
/// (/proc/net/route, through procfs's parser), when it is in the link dump
/// `dump`.
pub fn default_route_interface(host: HostRef<'_>, dump: &[Link]) -> Option<String> {
    use procfs::FromBufRead;
    let text = host.read_file("/proc/net/route").ok()?;
    let routes = procfs::net::RouteEntries::from_buf_read(text.as_bytes()).ok()?;
    routes
        .0
        .into_iter()
        .filter(|r| r.destination.is_unspecified() && r.mask.is_unspecified())
        .min_by_key(|r| r.metrics)
        .map(|r| r.iface)
        .filter(|name| links::named(dump, name).is_some())
}

/// The devices under each selected interface: a VLAN, bond or macvlan
/// port has no rings, channels or TSO counters of its own; its lower
/// devices (`/sys/class/net/IF/lower_*`, followed down) do. Interfaces
/// without lower devices are kept as they are.
pub fn hardware(host: HostRef<'_>, sel: Selection) -> Selection {
    let mut out: Vec<String> = Vec::new();
    let mut changed = false;
    for name in &sel.interfaces {
        let lowest = lowest_devices(host, name, 0);
        if lowest.len() != 1 || lowest[0] != *name {
            changed = true;
        }
        for l in lowest {
            if !out.contains(&l) {
                out.push(l);
            }
        }
    }
    if !changed {
        return sel;
    }
    Selection {
        interfaces: out,
        source: format!("{}, lower devices", sel.source),
    }
}

fn lowest_devices(host: HostRef<'_>, name: &str, depth: usize) -> Vec<String> {
    let lowers = sysfs_net::lower_devices(host, name);
    if lowers.is_empty() || depth > 8 {
        return vec![name.to_owned()];
    }
    lowers
        .iter()
        .flat_map(|l| lowest_devices(host, l, depth + 1))
        .collect()
}

/// Run one ethtool read on every selected interface, in order. Any probe
/// error becomes the check's finding (permission → skip naming the
/// capability, a vanished interface → not applicable, else error).
pub fn read_each<T>(
    host: HostRef<'_>,
    sel: &Selection,
    read: impl Fn(HostRef<'_>, &str) -> Result<T, ProbeError>,
) -> Result<Vec<(String, T)>, Finding> {
    sel.interfaces
        .iter()
        .map(|name| {
            read(host, name)
                .map(|v| (name.clone(), v))
                .map_err(Finding::from)
        })
        .collect()
}

/// The driver of an interface: `ethtool -i`'s answer, else sysfs's link.
pub fn driver(host: HostRef<'_>, name: &str) -> Option<String> {
    match host.ethtool_drvinfo(name) {
        Ok(crate::facts::ethtool::Reported::Yes(d)) if !d.driver.is_empty() => Some(d.driver),
        _ => sysfs_net::driver(host, name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;

    #[test]
    fn flag_wins_and_is_validated() {
        let opts = Options {
            interfaces: vec!["lo".into(), "lo".into()],
            ..Options::default()
        };
        let dump = crate::live::test_host().links().unwrap();
        let sel = from_flag(&dump, &opts).unwrap().unwrap();
        assert_eq!(sel.interfaces, ["lo"]);
        assert_eq!(sel.source, "--interface");
        for bad in ["a/b", "this-is-too-long0", "eth0\n"] {
            let opts = Options {
                interfaces: vec![bad.into()],
                ..Options::default()
            };
            assert_eq!(
                from_flag(&dump, &opts).unwrap_err().status,
                Status::Error,
                "{bad:?}"
            );
        }
        let opts = Options {
            interfaces: vec!["nosuchdev0".into()],
            ..Options::default()
        };
        assert_eq!(from_flag(&dump, &opts).unwrap_err().status, Status::Error);
        assert_eq!(from_flag(&dump, &Options::default()).unwrap(), None);
    }

    #[test]
    fn peers_on_loopback_are_not_underlay() {
        // A route to one of our own addresses is local: not a NIC.
        let host = crate::live::test_host();
        let dump = host.links().unwrap();
        assert_eq!(
            from_peer_routes(host, &dump, &["127.0.0.1".parse().unwrap()]).unwrap(),
            None
        );
        assert_eq!(from_peer_routes(host, &dump, &[]).unwrap(), None);
    }
}
