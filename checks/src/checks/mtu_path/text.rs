//! How a peer's result reads in a summary: the words per address family,
//! the per-peer sentence, the labels.

use std::net::IpAddr;
use std::time::Duration;

use super::{PeerReport, PeerVerdict};

/// The family-dependent words for a peer.
pub(super) struct Words {
    /// The ICMP error a router sends for a DF packet too big to forward.
    pub(super) too_big: &'static str,
    /// The sysctl that makes a host ignore echo requests.
    pub(super) echo_sysctl: &'static str,
    /// The ICMP types the peer's firewall must let in for DF probes.
    pub(super) icmp_types: &'static str,
    pub(super) nft_rule: &'static str,
}

pub(super) fn words(addr: IpAddr) -> Words {
    if addr.is_ipv4() {
        Words {
            too_big: "fragmentation needed",
            echo_sysctl: "net.ipv4.icmp_echo_ignore_all",
            icmp_types: "ICMP echo-request and destination-unreachable (fragmentation needed)",
            nft_rule: "`nft add rule inet filter input icmp type { echo-request, destination-unreachable } accept`",
        }
    } else {
        Words {
            too_big: "packet too big",
            echo_sysctl: "net.ipv6.icmp.echo_ignore_all",
            icmp_types: "ICMPv6 echo-request and packet-too-big",
            nft_rule: "`nft add rule inet filter input icmpv6 type { echo-request, packet-too-big } accept`",
        }
    }
}

/// One peer's outcome in a line, for its entry in `findings`.
pub(super) fn peer_text(r: &PeerReport, target: u32) -> String {
    if !r.concluded() {
        return "probing cut short by --timeout: nothing concluded".to_owned();
    }
    match r.verdict {
        PeerVerdict::Ok => format!(
            "carries {target}-byte DF packets{}",
            r.rtt_ms
                .map_or(String::new(), |ms| format!(" (echo {ms:.3} ms)"))
        ),
        PeerVerdict::Unreachable => format!(
            "no echo reply ({}): path MTU unproven",
            r.detail.as_deref().unwrap_or("silent")
        ),
        PeerVerdict::NeighbourTableFull => format!(
            "{}: path MTU unproven",
            r.detail
                .as_deref()
                .unwrap_or("the kernel dropped the probes: its neighbour table is full")
        ),
        _ => {
            let said = describe(r, target);
            let label = r.label();
            said.strip_prefix(&label)
                .map(|rest| rest.trim_start_matches(':').trim_start().to_owned())
                .unwrap_or(said)
        }
    }
}

/// The first `shown` labels and how many more: `a, b, c and 9 more`.
pub(super) fn few(reports: &[&PeerReport], shown: usize) -> String {
    let mut out: Vec<String> = reports.iter().take(shown).map(|r| r.label()).collect();
    if reports.len() > shown {
        out.push(format!("and {} more", reports.len() - shown));
        let last = out.pop().unwrap_or_default();
        return format!("{} {last}", out.join(", "));
    }
    out.join(", ")
}

pub(super) fn labels(reports: &[&PeerReport]) -> String {
    reports
        .iter()
        .map(|r| r.label())
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// What stops the path beyond this host, as the summary says it.
pub(super) fn beyond_text(r: &PeerReport, verdict: PeerVerdict, mtu: &str) -> String {
    let w = words(r.address);
    match verdict {
        PeerVerdict::TooBig => format!(
            "{} answered \"{}\", path MTU {mtu}",
            r.reported_by.map_or("a hop".to_owned(), |a| a.to_string()),
            w.too_big
        ),
        _ => format!(
            "black-holes packets above {mtu} bytes (no \"{}\" comes back)",
            w.too_big
        ),
    }
}

pub(super) fn describe(r: &PeerReport, target: u32) -> String {
    let mtu = r.path_mtu.map_or("?".to_owned(), |m| m.to_string());
    let via = r.interface.as_deref().unwrap_or("?");
    match r.verdict {
        PeerVerdict::BlackHole => format!(
            "{} {}",
            r.label(),
            beyond_text(r, PeerVerdict::BlackHole, &mtu)
        ),
        PeerVerdict::TooBig => format!(
            "{}: {}",
            r.label(),
            beyond_text(r, PeerVerdict::TooBig, &mtu)
        ),
        PeerVerdict::LocalMtu => match (r.beyond, r.local_mtu) {
            (Some(beyond), Some(local)) => format!(
                "{}: this host's {via} is below {target} (it lets out {local}), and beyond it the path {}",
                r.label(),
                beyond_text(r, beyond, &mtu)
            ),
            _ => format!(
                "{}: this host's {via} is below {target}, path MTU {mtu}",
                r.label()
            ),
        },
        _ => String::new(),
    }
}
