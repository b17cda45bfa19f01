//! A full neighbour table as its own cause. The kernel's ARP (and IPv6
//! ND) table is one for the whole kernel; once it holds `gc_thresh3`
//! entries, a probe to a next hop that has no entry yet is dropped before
//! it leaves. On Debian's 6.1 kernel a raw or UDP socket without
//! IP_RECVERR is told the probe was sent; the probes' socket sets it and is
//! told ENOBUFS (measured in the kernel lab), which also means a full
//! device queue. Such a peer looks exactly like one that answered no echo
//! request. What
//! tells them apart: the table's `table_fulls` counter grew while the
//! probes ran (or the socket refused the probe, with EINVAL or ENOBUFS),
//! and the peer's next hop has no entry at all: the kernel never made one,
//! so no ARP or neighbour solicitation went out either. A next hop with an
//! entry, even one that never resolved (incomplete, failed), was asked
//! for: then silence is the peer's.

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::{PathFacts, PeerFacts};
use crate::expect::neighbour_thresholds;
use crate::facts::neighbours::{
    entry_for, family_of, table_of, Neighbour, NeighbourTable, TableSeen, AF_INET, AF_INET6,
};
use crate::spinifex;

/// The next hop a peer's probes need a neighbour entry for: the route's
/// gateway, or the peer itself when it is on-link, on the egress interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextHop {
    pub address: IpAddr,
    pub ifindex: u32,
}

/// The kernel's neighbour tables around the probes, and this namespace's
/// entries after them (read only when a peer gave no answer at all).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NeighbourReadings {
    pub before: Option<Vec<NeighbourTable>>,
    pub after: Option<Vec<NeighbourTable>>,
    pub entries: Option<Vec<Neighbour>>,
    /// What could not be read, and why.
    pub unread: Vec<String>,
}

/// One neighbour table as mtu.path read it around its probes (what it
/// holds: after them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableReading {
    #[serde(flatten)]
    pub seen: TableSeen,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_fulls_before: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_fulls_after: Option<u64>,
}

/// Why the kernel dropped a peer's probes, when it was the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TableFull {
    /// `net.ipv4.neigh.default`.
    pub sysctl: &'static str,
    pub gc_thresh3: u32,
    /// Distinct next hops of this run's peers on the same interface.
    pub segment: usize,
}

impl TableFull {
    /// The peer's detail, as its cell and its subject say it.
    pub(super) fn said(&self) -> String {
        format!(
            "the kernel dropped the probes: its neighbour table is full ({}.gc_thresh3 = {}, {} on this segment)",
            self.sysctl,
            self.gc_thresh3,
            peers(self.segment)
        )
    }
}

fn peers(n: usize) -> String {
    if n == 1 {
        "1 peer".to_owned()
    } else {
        format!("{n} peers")
    }
}

/// The table's part in `p`'s silence, if it had one: no answer at all,
/// the table of its next hop's family overflowed during the probes (or the
/// socket refused them), and that next hop has no entry.
pub(super) fn table_full(p: &PeerFacts, facts: &PathFacts) -> Option<TableFull> {
    if p.probe.reachable() {
        return None;
    }
    let hop = p.next_hop?;
    let family = family_of(hop.address);
    let readings = &facts.neighbour;
    let after = readings
        .after
        .as_deref()
        .and_then(|t| table_of(t, family))?;
    let before = readings.before.as_deref().and_then(|t| table_of(t, family));
    let grew = matches!(
        (before.and_then(|b| b.table_fulls), after.table_fulls),
        (Some(b), Some(a)) if a > b
    );
    let refused = p.probe.refused_at_send > 0;
    if !(grew || refused) {
        return None;
    }
    if let Some(entries) = &readings.entries {
        if entry_for(entries, hop.ifindex, hop.address).is_some() {
            return None;
        }
    }
    Some(TableFull {
        sysctl: after.sysctl_prefix()?,
        gc_thresh3: after.gc_thresh3,
        segment: segment(facts, hop.ifindex),
    })
}

/// Distinct next hops this run's peers need on interface `ifindex`.
fn segment(facts: &PathFacts, ifindex: u32) -> usize {
    facts
        .peers
        .iter()
        .filter_map(|p| p.next_hop)
        .filter(|h| h.ifindex == ifindex)
        .map(|h| h.address)
        .collect::<BTreeSet<_>>()
        .len()
}

/// Distinct next hops this run's peers need in `family`'s table.
fn needed(facts: &PathFacts, family: u8) -> u64 {
    facts
        .peers
        .iter()
        .filter_map(|p| p.next_hop)
        .filter(|h| family_of(h.address) == family)
        .map(|h| (h.ifindex, h.address))
        .collect::<BTreeSet<_>>()
        .len() as u64
}

/// The tables of the families the peers' next hops are in, as read
/// before and after the probes.
pub(super) fn readings(facts: &PathFacts) -> Vec<TableReading> {
    let Some(after) = facts.neighbour.after.as_deref() else {
        return Vec::new();
    };
    [AF_INET, AF_INET6]
        .into_iter()
        .filter(|f| needed(facts, *f) > 0)
        .filter_map(|f| {
            let t = table_of(after, f)?;
            let before = facts
                .neighbour
                .before
                .as_deref()
                .and_then(|b| table_of(b, f));
            Some(TableReading {
                seen: t.seen()?,
                table_fulls_before: before.and_then(|b| b.table_fulls),
                table_fulls_after: t.table_fulls,
            })
        })
        .collect()
}

/// The fix for each family whose table dropped probes: its three
/// thresholds raised above what this run needs, in the sysctl.d file
/// setup.sh writes, then loaded.
pub(super) fn fixes(facts: &PathFacts, full: &[&TableFull]) -> Vec<String> {
    let mut steps = Vec::new();
    let mut done: Vec<&str> = Vec::new();
    for f in full {
        if done.contains(&f.sysctl) {
            continue;
        }
        done.push(f.sysctl);
        let family = if f.sysctl.contains("ipv6") {
            AF_INET6
        } else {
            AF_INET
        };
        let Some(table) = facts
            .neighbour
            .after
            .as_deref()
            .and_then(|t| table_of(t, family))
        else {
            continue;
        };
        let need = needed(facts, family);
        let [add, load] = spinifex::raise_neigh_thresholds(
            f.sysctl,
            neighbour_thresholds(need, table.thresholds()),
        );
        steps.push(format!(
            "the kernel's {} table is full ({} of gc_thresh3 {}, every network namespace's entries together), so it dropped probes to next hops it could not add: raise its thresholds above the {need} next hops this run needs, on the host (the table is the whole kernel's, set in its initial network namespace): {add}, then `{load}`; `spx doctor --check sysctl.neigh` checks them against the whole cluster",
            table.name,
            table
                .entries
                .map_or("its entries".to_owned(), |e| format!("{e} entries")),
            table.gc_thresh3
        ));
    }
    steps
}
