//! One peer's verdict from what was measured: the path MTU, exact or
//! not, and what the local link allows.

use super::neighbour::TableFull;
use super::text::ms;
use super::{LocalLink, PathMtuKind, PeerFacts, PeerReport, PeerVerdict, VLAN_SLACK};
use crate::facts::icmp::{self, COMMON_MTUS};

/// The verdict on one peer and its path MTU.
pub fn peer_verdict(p: &PeerFacts, target: u32) -> (PeerVerdict, Option<u32>, bool) {
    let probe = &p.probe;
    if !probe.reachable() {
        return (PeerVerdict::Unreachable, None, false);
    }
    if probe.target_answered() {
        return (PeerVerdict::Ok, Some(target), false);
    }
    let (path_mtu, inexact) = match probe.exact_path_mtu() {
        Some(m) => (Some(m), false),
        None => (probe.largest_answered, true),
    };
    let verdict = if local_mtu(p).is_some_and(|l| l < target) {
        PeerVerdict::LocalMtu
    } else if probe.too_big.is_some() {
        PeerVerdict::TooBig
    } else {
        PeerVerdict::BlackHole
    };
    (verdict, path_mtu, inexact)
}

/// The most this host lets out towards a peer: the smaller of what the
/// kernel refused locally (EMSGSIZE) and its narrowest link on the path.
pub(super) fn local_mtu(p: &PeerFacts) -> Option<u32> {
    let link = p.egress.as_ref().ok().map(LocalLink::narrowest);
    match (p.probe.local_limit, link) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// For a peer this host's own link limits: what limits the path beyond
/// it, when sizes the local link lets out did not pass (a size at or
/// below `local` was refused by silence or by a hop).
pub(super) fn beyond_local(p: &PeerFacts, local: u32) -> Option<PeerVerdict> {
    let refused = p.probe.smallest_refused?;
    (refused <= local).then(|| {
        if p.probe.too_big.is_some_and(|t| t.mtu < local) {
            PeerVerdict::TooBig
        } else {
            PeerVerdict::BlackHole
        }
    })
}

/// The underlay_mtu a measured path allows, as a setting: a hop that
/// reported its MTU is exact; a silent drop above `measured` comes from a
/// link whose MTU is `measured` or up to [`VLAN_SLACK`] below it, taken as
/// the largest common MTU in that window (1504 → 1500), else `measured`.
pub fn usable_mtu(measured: u32, reported: bool) -> u32 {
    if reported {
        return measured;
    }
    COMMON_MTUS
        .iter()
        .copied()
        .filter(|m| *m <= measured && measured - *m <= VLAN_SLACK)
        .max()
        .unwrap_or(measured)
}

/// One peer's row; `full` when its silence was a full neighbour table's.
pub(super) fn report(p: &PeerFacts, target: u32, full: Option<&TableFull>) -> PeerReport {
    let (mut verdict, path_mtu, inexact) = peer_verdict(p, target);
    if verdict == PeerVerdict::Unreachable && full.is_some() {
        verdict = PeerVerdict::NeighbourTableFull;
    }
    let local = (verdict == PeerVerdict::LocalMtu)
        .then(|| local_mtu(p))
        .flatten();
    let beyond = local.and_then(|l| beyond_local(p, l));
    let hop = |v: PeerVerdict| match v {
        PeerVerdict::TooBig => p.probe.too_big.and_then(|t| t.from),
        _ => None,
    };
    let usable = path_mtu.and_then(|m| match (verdict, beyond) {
        (PeerVerdict::Ok | PeerVerdict::Unreachable | PeerVerdict::NeighbourTableFull, _) => None,
        (PeerVerdict::TooBig, _) | (_, Some(PeerVerdict::TooBig)) => Some(usable_mtu(m, true)),
        (PeerVerdict::LocalMtu, None) => Some(local.map_or(m, |l| l.min(m))),
        _ => Some(usable_mtu(m, false)),
    });
    let detail = match verdict {
        PeerVerdict::Unreachable => Some(match (&p.egress, &p.probe.other_error) {
            (Err(why), _) => why.clone(),
            (_, Some(err)) => err.clone(),
            _ => format!(
                "no echo reply to a minimal {}-byte probe",
                icmp::min_probe(p.peer.address).min(target)
            ),
        }),
        PeerVerdict::NeighbourTableFull => full.map(TableFull::said),
        _ => None,
    };
    PeerReport {
        address: p.peer.address,
        scope: p.peer.scope.clone(),
        source: p.peer.source,
        node: p.peer.node.clone(),
        interface: p.egress.as_ref().ok().map(|l| l.interface.clone()),
        verdict,
        path_mtu,
        rtt_ms: p.probe.rtt.map(ms),
        rounds: p.probe.rounds,
        reported_by: hop(beyond.unwrap_or(verdict)),
        path_mtu_inexact: inexact,
        local_mtu: local,
        beyond,
        usable_mtu: usable,
        cut_short: p.probe.cut_short,
        refused_at_send: p.probe.refused_at_send,
        detail,
    }
}

/// The kind of one peer's outcome: its verdict, or why nothing was
/// concluded for it.
pub(super) fn peer_kind(r: &PeerReport) -> PathMtuKind {
    if !r.concluded() {
        return PathMtuKind::CutShort;
    }
    match r.verdict {
        PeerVerdict::Ok => PathMtuKind::Ok,
        PeerVerdict::BlackHole => PathMtuKind::BlackHole,
        PeerVerdict::TooBig => PathMtuKind::TooBig,
        PeerVerdict::LocalMtu => PathMtuKind::LocalMtu,
        PeerVerdict::Unreachable => PathMtuKind::Unreachable,
        PeerVerdict::NeighbourTableFull => PathMtuKind::NeighbourTableFull,
    }
}
