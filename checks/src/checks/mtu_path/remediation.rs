//! What to do about it: the commands that fix a local link below the
//! target, and what to ask of the fabric for a path that does not carry it.

use super::text::words;
use super::{LocalLink, PathFacts, PeerReport, PeerVerdict, VLAN_SLACK};
use crate::expect::UNDERLAY_MTU_FLOOR;
use crate::spinifex;

pub(super) fn remediation(
    facts: &PathFacts,
    reports: &[PeerReport],
    local: &[&LocalLink],
) -> Vec<String> {
    let target = facts.target_mtu;
    let config = &facts.config_file;
    let failing: Vec<&PeerReport> = reports.iter().filter(|r| r.failing()).collect();
    let mut steps = Vec::new();
    // Local interfaces first: nothing else matters until they are raised.
    let raise: Vec<String> = below_target(&failing, local, target)
        .into_iter()
        .map(|d| d.interface.clone())
        .collect();
    let mut capped: Vec<String> = Vec::new();
    for l in local_links_of(&failing, local) {
        for dev in l.capped(target) {
            let note = format!(
                "{} cannot be raised to {target}: its driver's maximum MTU (IFLA_MAX_MTU) is {}",
                dev.interface,
                dev.max_mtu.unwrap_or(0)
            );
            if !capped.contains(&note) {
                capped.push(note);
            }
        }
    }
    let fabric: Vec<&PeerReport> = failing
        .iter()
        .copied()
        .filter(|r| r.fabric_limited())
        .collect();
    if !raise.is_empty() {
        let mut step = format!(
            "raise this host's side first, bridge ports before the bridge: {}; both ends and {} must carry {target} before the path can be tested",
            spinifex::set_mtus(&raise, target, ", then "),
            spinifex::VPC_BRIDGE
        );
        if fabric.iter().any(|r| r.verdict == PeerVerdict::LocalMtu) {
            step.push_str(
                " (that alone does not fix the path: something beyond this host drops less, see below)",
            );
        }
        steps.push(step);
    }
    for note in capped {
        steps.push(format!(
            "{note}: keep underlay_mtu at or below that maximum"
        ));
    }
    let hole = same_size_black_hole(reports);
    if let Some(hole) = &hole {
        // Every peer at one size: one narrow point on every path from
        // here, not one at each peer.
        let at = match reports.iter().find_map(|r| r.local_mtu) {
            Some(l) => format!("even at this host's {l} bytes, "),
            None => String::new(),
        };
        steps.push(format!(
            "{at}all {} peers black-hole frames above {} bytes, at the same size: the narrow point is on every path from this node, so most likely on this node's side, its own switch port or link (or, when every node reports the same, the switch they all share): configure this node's switch port (and any VLAN on it) for {target}, or revert as below",
            hole.peers, hole.size
        ));
    }
    for r in fabric.iter().filter(|_| hole.is_none()) {
        let mtu = r
            .path_mtu
            .map_or("its path MTU".to_owned(), |m| m.to_string());
        let at = match (r.verdict, r.local_mtu) {
            (PeerVerdict::LocalMtu, Some(l)) => format!(" even at this host's {l} bytes,"),
            _ => String::new(),
        };
        let what = match r.fabric_verdict() {
            PeerVerdict::TooBig => format!(
                "{at} the router {} forwards at most {mtu} bytes towards {}",
                r.reported_by
                    .map_or("on the path".to_owned(), |a| a.to_string()),
                r.label()
            ),
            _ => format!(
                "{at} a switch port or the peer's own interface on the path to {} silently drops frames above {mtu} bytes",
                r.label()
            ),
        };
        steps.push(format!(
            "either make the path carry {target} ({}; every switch port, VLAN and router on it, and the peer's own interface, must carry {target}), or revert as below",
            what.trim_start()
        ));
    }
    // Revert to what every path carries, as a usable setting.
    let carried = failing.iter().filter_map(|r| r.usable_mtu).min();
    let measured = failing
        .iter()
        .filter(|r| r.usable_mtu == carried)
        .filter_map(|r| r.path_mtu)
        .min();
    if let Some(carried) = carried {
        let mut devs: Vec<String> = Vec::new();
        for l in local {
            for dev in l.ports.iter().chain(std::iter::once(*l)) {
                if dev.mtu > carried && !devs.contains(&dev.interface) {
                    devs.push(dev.interface.clone());
                }
            }
        }
        let why = match measured {
            Some(m) if m > carried => format!(
                " (probes of {m} bytes passed: a {carried}-byte link lets a VLAN tag's {VLAN_SLACK} bytes more through, so {carried} is the setting that explains them)"
            ),
            _ => String::new(),
        };
        if carried < UNDERLAY_MTU_FLOOR {
            steps.push(format!(
                "the path carries only {carried} bytes, below the {UNDERLAY_MTU_FLOOR} Spinifex accepts for underlay_mtu (smaller values are taken as 1500): the overlay cannot run over it until the fabric is fixed"
            ));
        } else if !fabric.is_empty() {
            let here = if devs.is_empty() {
                String::new()
            } else {
                format!(" (here: {})", spinifex::set_mtus(&devs, carried, ", "))
            };
            steps.push(format!(
                "to revert: `{}` on both ends and on {}{here}, then {} on every node{why}",
                spinifex::set_mtu("<dev>", carried),
                spinifex::VPC_BRIDGE,
                spinifex::set_network_key("underlay_mtu", carried, config)
            ));
        } else {
            steps.push(format!(
                "until then keep `underlay_mtu` at {carried} (what the path carries) under [network] in {config}{why}"
            ));
        }
    }
    steps.push("re-check: `spx doctor --check mtu.path`".to_owned());
    steps
}

/// One step per peer that answered nothing, in its family's words.
pub(super) fn unreachable_fixes(unreachable: &[&PeerReport]) -> Vec<String> {
    let mut steps = Vec::new();
    for r in unreachable {
        let detail = r.detail.as_deref().unwrap_or("no echo reply");
        if detail == "no route" {
            steps.push(format!(
                "{} (no route): this host has no route to it (`ip route get {}` finds none); fix the routing table or the peer list",
                r.label(),
                r.label()
            ));
            continue;
        }
        let w = words(r.address);
        steps.push(format!(
            "{} ({detail}): the node firewall there must accept {} for DF probes to prove the path, e.g. {}, and `sysctl {}` must be 0",
            r.label(),
            w.icmp_types,
            w.nft_rule,
            w.echo_sysctl
        ));
    }
    steps
}

/// Every peer black-holing at one size.
pub(super) struct SameHole {
    /// How many peers.
    pub(super) peers: usize,
    /// The size they carry: `1500`, or `1500 to 1504` where the VLAN
    /// slack of the links differs.
    pub(super) size: String,
}

/// Two or more peers, every one concluded and black-holing beyond this
/// host at the same usable size (1500 and 1504 are one 1500-byte link):
/// the narrow point is common to every path from this node.
pub(super) fn same_size_black_hole(reports: &[PeerReport]) -> Option<SameHole> {
    if reports.len() < 2
        || !reports
            .iter()
            .all(|r| r.failing() && r.fabric_verdict() == PeerVerdict::BlackHole)
    {
        return None;
    }
    let usable = reports[0].usable_mtu?;
    if reports.iter().any(|r| r.usable_mtu != Some(usable)) {
        return None;
    }
    let sizes: Vec<u32> = reports.iter().filter_map(|r| r.path_mtu).collect();
    let (lo, hi) = (sizes.iter().min()?, sizes.iter().max()?);
    Some(SameHole {
        peers: reports.len(),
        size: if lo == hi {
            lo.to_string()
        } else {
            format!("{lo} to {hi}")
        },
    })
}

/// The local links the local-mtu peers among `failing` leave by, once each.
fn local_links_of<'a>(failing: &[&PeerReport], local: &[&'a LocalLink]) -> Vec<&'a LocalLink> {
    let mut out: Vec<&LocalLink> = Vec::new();
    for r in failing
        .iter()
        .filter(|r| r.verdict == PeerVerdict::LocalMtu)
    {
        if let Some(l) = local
            .iter()
            .copied()
            .find(|l| Some(&l.interface) == r.interface.as_ref())
        {
            if !out.iter().any(|o| o.interface == l.interface) {
                out.push(l);
            }
        }
    }
    out
}

/// This host's devices below `target` on the paths of the local-mtu peers
/// among `failing`, bridge ports before their bridge: what must be raised
/// first, in that order.
pub(super) fn below_target<'a>(
    failing: &[&PeerReport],
    local: &[&'a LocalLink],
    target: u32,
) -> Vec<&'a LocalLink> {
    let mut out: Vec<&LocalLink> = Vec::new();
    for l in local_links_of(failing, local) {
        for dev in l.ports.iter().chain(std::iter::once(l)) {
            if dev.mtu < target && !out.iter().any(|o| o.interface == dev.interface) {
                out.push(dev);
            }
        }
    }
    out
}
