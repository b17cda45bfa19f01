//! How `mtu.overlay` says what [`super::analyse`] found: each kind's
//! subject, summary and fix beside it, the headline, and the evidence.

use std::fmt::Display;

use super::analyse::{is_ipv6_cidr, Analysis, Holds, Nb, Place, Problem};
use super::{DhcpFacts, DhcpMtu, OverlayFacts, OverlayMtuEvidence, OverlayMtuKind, RaMtu};
use crate::endpoint;
use crate::expect;
use crate::finding::{Finding, SkipReason, Subject};
use crate::kind::most_severe;
use crate::spinifex;

/// `ovn-nbctl` against the NB raft members, running `set`.
pub fn nbctl(nb_db: impl Display, set: &str) -> String {
    format!("ovn-nbctl --db=\"{nb_db}\" {set}")
}

/// The `set` that gives a DHCP_Options row the guest MTU.
pub fn set_dhcp_mtu(uuid: impl Display, mtu: impl Display) -> String {
    format!("set DHCP_Options {uuid} options:mtu={mtu}")
}

/// The `set` that makes a router port advertise the guest MTU.
pub fn set_ra_mtu(port: impl Display, mtu: impl Display) -> String {
    format!("set Logical_Router_Port {port} ipv6_ra_configs:mtu={mtu}")
}

/// What every fail adds: the guests themselves hold the old MTU.
pub const RESTART_GUESTS: &str = "running guests need a stop/start (not a reboot from inside): QEMU's host_mtu and the DHCP lease (up to an hour) keep the old MTU";

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn dhcp_subject(cidr: &str, uuid: &str) -> String {
    format!("DHCP_Options {cidr} ({uuid})")
}

fn dhcp_shown(mtu: Option<&str>) -> String {
    mtu.map_or("no options:mtu (guests default to 1500)".to_owned(), |m| {
        format!("options:mtu={m}")
    })
}

fn ra_said(mtu: &str) -> String {
    format!("advertises ipv6_ra_configs:mtu={mtu}")
}

impl Holds {
    fn subject(&self, underlay_mtu: u32) -> Subject {
        match self {
            Holds::Dhcp { cidr, uuid, mtu } => Subject::new(
                OverlayMtuKind::Ok,
                dhcp_subject(cidr, uuid),
                dhcp_shown(Some(mtu)),
            ),
            Holds::Ra { port, mtu } => Subject::new(
                OverlayMtuKind::Ok,
                format!("Logical_Router_Port {port}"),
                ra_said(mtu),
            ),
            Holds::Tap { tap, mtu } => Subject::new(OverlayMtuKind::Ok, tap, format!("MTU {mtu}")),
            Holds::Bridge { bridge, mtu } => Subject::new(
                OverlayMtuKind::Ok,
                bridge,
                format!("MTU {mtu}, carries underlay_mtu {underlay_mtu}"),
            ),
        }
    }
}

impl Problem {
    pub fn kind(&self) -> OverlayMtuKind {
        match self {
            Problem::DhcpMtu { .. } => OverlayMtuKind::DhcpMtu,
            Problem::RaMtu { .. } => OverlayMtuKind::RaMtu,
            Problem::TapMtu { .. } => OverlayMtuKind::TapMtu,
            Problem::BridgeBelowUnderlay { .. } => OverlayMtuKind::BridgeBelowUnderlay,
        }
    }

    /// The subject and what it has, as the headline lists it.
    fn mismatch(&self, underlay_mtu: u32) -> String {
        match self {
            Problem::DhcpMtu { cidr, uuid, mtu } => format!(
                "{} has {}",
                dhcp_subject(cidr, uuid),
                dhcp_shown(mtu.as_deref())
            ),
            Problem::RaMtu { port, mtu } => {
                format!("Logical_Router_Port {port} {}", ra_said(mtu))
            }
            Problem::TapMtu { tap, mtu } => format!("tap {tap} has MTU {mtu}"),
            Problem::BridgeBelowUnderlay { bridge, mtu, .. } => {
                format!("underlay bridge {bridge} has MTU {mtu}, below underlay_mtu {underlay_mtu}")
            }
        }
    }

    fn subject(&self, want: u32, underlay_mtu: u32) -> Subject {
        let kind = self.kind();
        match self {
            Problem::DhcpMtu { cidr, uuid, mtu } => Subject::new(
                kind,
                dhcp_subject(cidr, uuid),
                format!(
                    "{}, expected options:mtu={want}",
                    dhcp_shown(mtu.as_deref())
                ),
            ),
            Problem::RaMtu { port, mtu } => Subject::new(
                kind,
                format!("Logical_Router_Port {port}"),
                format!("{}, expected {want}", ra_said(mtu)),
            ),
            Problem::TapMtu { tap, mtu } => {
                Subject::new(kind, tap, format!("MTU {mtu}, expected {want}"))
            }
            Problem::BridgeBelowUnderlay { bridge, mtu, .. } => Subject::new(
                kind,
                bridge,
                format!("MTU {mtu}, below underlay_mtu {underlay_mtu}"),
            ),
        }
    }
}

/// The fixes, in the order of the places: one per NB row, one for every
/// wrong tap together (where the first is), one for the bridge.
fn fixes(problems: &[&Problem], nb_db: &str, want: u32, underlay_mtu: u32) -> Vec<String> {
    let mut fixes = Vec::new();
    let taps: Vec<&str> = problems
        .iter()
        .filter_map(|p| match p {
            Problem::TapMtu { tap, .. } => Some(tap.as_str()),
            _ => None,
        })
        .collect();
    for problem in problems {
        match problem {
            Problem::DhcpMtu { uuid, .. } => fixes.push(nbctl(nb_db, &set_dhcp_mtu(uuid, want))),
            Problem::RaMtu { port, .. } => fixes.push(nbctl(nb_db, &set_ra_mtu(port, want))),
            Problem::TapMtu { tap, .. } if taps.first() == Some(&tap.as_str()) => fixes.push(format!(
                "stop and start the guests on {} (the daemon recreates the tap and QEMU's host_mtu={want}); meanwhile, for the host side only: {}",
                taps.join(", "),
                spinifex::set_mtus(&taps, want, ", ")
            )),
            Problem::TapMtu { .. } => {}
            Problem::BridgeBelowUnderlay { bridge, ports, .. } => {
                let mut devs = ports.clone();
                devs.push(bridge.clone());
                fixes.push(format!(
                    "raise the NIC first, then the bridge: {} (and persist it in the host's network configuration)",
                    spinifex::set_mtus(&devs, underlay_mtu, ", then ")
                ));
            }
        }
    }
    fixes
}

/// What the NB read adds to a summary: why it was not read, what of IPv6
/// was not judged.
struct NbNotes {
    /// No NB endpoint known.
    not_checked: Option<String>,
    /// The read failed.
    error: Option<String>,
    /// The read failed for want of this privilege.
    denied: Option<String>,
    ipv6: Option<String>,
}

impl NbNotes {
    fn of(nb: &Nb) -> NbNotes {
        let mut notes = NbNotes {
            not_checked: None,
            error: None,
            denied: None,
            ipv6: None,
        };
        match nb {
            Nb::Read {
                ra_ports,
                dhcpv6_rows,
                silent_ra_ports,
                ..
            } => {
                if *dhcpv6_rows > 0 || *silent_ra_ports > 0 {
                    let mut parts = Vec::new();
                    if *dhcpv6_rows > 0 {
                        parts.push(format!(
                            "{} not judged (DHCPv6 carries no MTU; IPv6 guests learn it from router advertisements)",
                            plural(*dhcpv6_rows, "DHCPv6 row", "DHCPv6 rows")
                        ));
                    }
                    if *silent_ra_ports > 0 {
                        parts.push(format!(
                            "{} router advertisements without ipv6_ra_configs:mtu (their guests use the virtio host_mtu)",
                            plural(*silent_ra_ports, "router port sends", "router ports send")
                        ));
                    } else if *ra_ports == 0 {
                        parts.push("no router port sets ipv6_ra_configs:mtu".to_owned());
                    }
                    notes.ipv6 = Some(format!("IPv6: {}", parts.join("; ")));
                }
            }
            Nb::Unreadable { error, needs } => {
                notes.denied = needs
                    .as_ref()
                    .map(|needs| format!("{needs} (to read DHCP_Options)"));
                notes.error = Some(format!("DHCP_Options could not be read: {error}"));
            }
            Nb::NotConfigured { why } => {
                notes.not_checked = Some(format!("DHCP_Options not checked: {why}"));
            }
        }
        notes
    }
}

/// The finding for `facts`, as `analysis` judged them.
pub fn finding(facts: &OverlayFacts, analysis: &Analysis) -> Finding {
    let want = analysis.want;
    let underlay_mtu = facts.underlay_mtu;
    let problems: Vec<&Problem> = analysis.problems().collect();
    let mismatches: Vec<String> = problems.iter().map(|p| p.mismatch(underlay_mtu)).collect();
    let subjects: Vec<Subject> = analysis
        .places
        .iter()
        .map(|place| match place {
            Place::Holds(h) => h.subject(underlay_mtu),
            Place::Wrong(p) => p.subject(want, underlay_mtu),
        })
        .collect();
    let notes = NbNotes::of(&analysis.nb);
    let ipsec = if facts.ipsec_enabled { "on" } else { "off" };
    let family = if facts.underlay_family.family.is_ipv6() {
        ", IPv6 underlay"
    } else {
        ""
    };
    let finding = if let Some(kind) = most_severe(problems.iter().map(|p| p.kind())) {
        let mut fixes = fixes(
            &problems,
            &endpoint::join(&facts.nb_endpoints),
            want,
            underlay_mtu,
        );
        fixes.push(RESTART_GUESTS.to_owned());
        let also = [notes.error.as_deref(), notes.not_checked.as_deref()]
            .into_iter()
            .flatten()
            .map(|s| format!("; {s}"))
            .collect::<String>();
        Finding::new(
            kind,
            format!(
                "expected guest MTU {want} (underlay {underlay_mtu}{family}, IPsec {ipsec}), but {}{also}",
                mismatches.join(", ")
            ),
        )
        .fixes(fixes)
    } else if let Some(needs) = notes.denied {
        // The taps and the bridge were fine, but the DHCP rows were out of
        // reach: not a pass, and a privilege matter, not an outage.
        Finding::skip(SkipReason::NeedsPrivilege(needs))
    } else if let Some(err) = notes.error {
        Finding::new(OverlayMtuKind::NbUnreachable, err)
    } else if analysis.nothing_judged() {
        let notes: Vec<String> = [notes.not_checked, notes.ipv6]
            .into_iter()
            .flatten()
            .collect();
        Finding::skip(SkipReason::NothingToMeasure(format!(
            "no IPv4 DHCP_Options rows, no router port with an RA MTU, no VPC taps and no underlay bridge here{}",
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            }
        )))
    } else {
        let (ipv4_rows, ra_ports) = match analysis.nb {
            Nb::Read {
                ipv4_rows,
                ra_ports,
                ..
            } => (ipv4_rows, ra_ports),
            _ => (0, 0),
        };
        let mut summary = format!(
            "guest MTU {want} (underlay {underlay_mtu}{family}, IPsec {ipsec}) in {} and {}",
            plural(ipv4_rows, "DHCP_Options row", "DHCP_Options rows"),
            plural(facts.taps.len(), "VPC tap", "VPC taps")
        );
        if ra_ports > 0 {
            summary.push_str(&format!(
                ", and in the router advertisements of {}",
                plural(ra_ports, "router port", "router ports")
            ));
        }
        if let Some(b) = &facts.underlay_bridge {
            summary.push_str(&format!("; {} at {}", b.name, b.mtu));
        }
        for note in [notes.not_checked, notes.ipv6].into_iter().flatten() {
            summary.push_str(&format!("; {note}"));
        }
        Finding::new(OverlayMtuKind::Ok, summary)
    };
    finding
        .evidence(&evidence(facts, mismatches))
        .subjects(subjects)
}

/// Every place as it was read, and what did not match.
fn evidence(facts: &OverlayFacts, mismatches: Vec<String>) -> OverlayMtuEvidence {
    let (dhcp_mtus, ra_mtus, nb_endpoint) = match &facts.dhcp {
        DhcpFacts::Read(a) => (
            Some(
                a.value
                    .dhcp
                    .iter()
                    .map(|r| DhcpMtu {
                        cidr: r.cidr.clone(),
                        uuid: r.uuid.clone(),
                        mtu: r.mtu.clone(),
                        family: if is_ipv6_cidr(&r.cidr) {
                            expect::Family::Ipv6
                        } else {
                            expect::Family::Ipv4
                        },
                    })
                    .collect(),
            ),
            Some(
                a.value
                    .router_ports
                    .iter()
                    .map(|p| RaMtu {
                        port: p.name.clone(),
                        uuid: p.uuid.clone(),
                        address_mode: p.address_mode.clone(),
                        mtu: p.mtu.clone(),
                    })
                    .collect(),
            ),
            Some(a.endpoint.to_string()),
        ),
        DhcpFacts::Unreadable(_) | DhcpFacts::NotConfigured(_) => (None, None, None),
    };
    OverlayMtuEvidence {
        expected_guest_mtu: facts.expected_guest_mtu,
        underlay_mtu: facts.underlay_mtu,
        underlay_family: facts.underlay_family.clone(),
        dhcp_mtus,
        ra_mtus,
        taps: facts.taps.clone(),
        underlay_bridge: facts.underlay_bridge.clone(),
        mismatches,
        nb_endpoint,
    }
}
