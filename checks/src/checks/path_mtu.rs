//! `mtu.path`: prove the underlay carries the target MTU to every peer, and
//! find the real path MTU, to the byte, when it does not.
//!
//! Raising the NIC and br-vpc to 9000 on all four nodes of a cluster whose
//! switch carried 1500 black-holed every frame above 1500 (performance
//! tuning §4: payload 1472 answered, 1972 and 8972 did not). An L2 switch
//! sends no "fragmentation needed", so path MTU discovery never recovers and
//! tracepath reports 9000 after ~90 s of "no reply". The manual proof,
//! `ping -M do -s 8972 -c 3` per peer in turn, took 29 s for 4 peers and
//! answered only yes or no. This check probes every peer at once with DF
//! echo requests that exactly fill M bytes and says, per peer, what the path
//! carries: see [`crate::probe::icmp_probe`] for how.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;

use crate::check::Check;
use crate::ctx::Ctx;
use crate::finding::{Finding, SkipReason};
use crate::probe::icmp_probe::{self, PathProbe, Settings, SocketKind, Target};
use crate::probe::links::{self, Link};
use crate::probe::peers::{self, Peer, PeerSet};
use crate::probe::ProbeError;

pub struct PathMtu;

/// At most this many probe rounds (a ladder, then refinement).
pub const MAX_ROUNDS: u32 = 3;
const CONFIG_FILE: &str = "/etc/spinifex/spinifex.toml";
/// Time kept back from the run's deadline to judge and report.
const JUDGE_MARGIN: Duration = Duration::from_millis(100);

/// What one peer's path was found to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerVerdict {
    /// The target size passes.
    Ok,
    /// Small probes answer, large ones vanish: a silent drop (an L2 switch
    /// port below the target).
    #[serde(rename = "blackhole")]
    BlackHole,
    /// A hop answered "fragmentation needed"/"packet too big".
    TooBig,
    /// Not even a minimal probe answered.
    Unreachable,
    /// This host's own egress interface (or a port of its bridge) is below
    /// the target: the probe cannot leave.
    LocalMtu,
}

/// Where the target MTU came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TargetSource {
    #[serde(rename = "--mtu")]
    Flag,
    #[serde(rename = "underlay_mtu")]
    Config,
}

/// This host's side of one peer's path: the egress interface and, when it
/// is a bridge, its ports (the physical NIC under br-vpc).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocalLink {
    pub interface: String,
    pub mtu: u32,
    /// IFLA_MAX_MTU: the largest MTU the driver accepts.
    pub max_mtu: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<LocalLink>,
}

impl LocalLink {
    fn from_link(link: &Link, ports: &[Link]) -> LocalLink {
        LocalLink {
            interface: link.name.clone(),
            mtu: link.mtu,
            max_mtu: link.max_mtu,
            kind: link.kind.clone(),
            ports: ports.iter().map(|p| LocalLink::from_link(p, &[])).collect(),
        }
    }

    /// This device and its ports whose MTU is below `target`.
    fn below(&self, target: u32) -> Vec<&LocalLink> {
        std::iter::once(self)
            .chain(self.ports.iter())
            .filter(|l| l.mtu < target)
            .collect()
    }

    /// This device and its ports whose driver cannot go up to `target`.
    fn capped(&self, target: u32) -> Vec<&LocalLink> {
        std::iter::once(self)
            .chain(self.ports.iter())
            .filter(|l| l.max_mtu.is_some_and(|m| m < target))
            .collect()
    }
}

/// Everything measured about one peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerFacts {
    pub peer: Peer,
    /// The egress interface, or why there is none ("no route").
    pub egress: Result<LocalLink, String>,
    pub probe: PathProbe,
}

/// Everything `judge` needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathFacts {
    pub target_mtu: u32,
    pub target_source: TargetSource,
    pub peers: Vec<PeerFacts>,
    pub socket: SocketKind,
    pub discovery: PeerSet,
    /// `--probe-timeout`: one round's bound.
    pub probe_timeout: Duration,
}

/// One row of the `peers` evidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeerReport {
    pub address: IpAddr,
    pub source: peers::PeerSource,
    pub interface: Option<String>,
    pub verdict: PeerVerdict,
    /// Exact path MTU for every peer that is not `ok` (null when
    /// unreachable); for `ok`, the target, the largest size probed.
    pub path_mtu: Option<u32>,
    pub rtt_ms: Option<f64>,
    /// Probe rounds this peer took (at most 3).
    pub rounds: u32,
    /// For too-big: the hop that said so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_by: Option<IpAddr>,
    /// False when lost probes left a gap after the last round; path_mtu is
    /// then the largest size proven to pass.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub path_mtu_inexact: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Check for PathMtu {
    fn id(&self) -> &'static str {
        "mtu.path"
    }

    fn title(&self) -> &'static str {
        "The underlay carries the target MTU to every peer"
    }

    fn explain(&self) -> &'static str {
        "Sends don't-fragment ICMP echo requests that exactly fill the target underlay MTU \
         (payload M-28 on IPv4, M-48 on IPv6; IP_PMTUDISC_PROBE so a cached path MTU cannot \
         hide the answer) to every peer at once, and when the target does not pass, finds \
         the path MTU to the byte in at most 3 rounds (parallel ladders of sizes, then \
         refinement), each bounded by --probe-timeout.\n\
         \n\
         Target: --mtu N, else [network] underlay_mtu. Peers, first source that names any: \
         --peer, the OVN southbound Encap table, `define spinifex_encap_peers` in \
         /etc/spinifex/firewall/peers.nft, [nodes.*] advertise/host. This host's own \
         addresses and its ovn-encap-ip are excluded.\n\
         \n\
         Per peer: ok; blackhole (small probes answer, large ones vanish: a switch drops \
         them silently); too-big (a hop answered \"fragmentation needed\" with its MTU); \
         local-mtu (this host's egress interface or a port of its bridge is below the \
         target, so the probe cannot leave); unreachable (no echo reply at all: the peer's \
         firewall must accept ICMP echo-request and destination-unreachable). Fails on \
         blackhole, too-big or local-mtu; an unreachable peer makes the result an error \
         (nothing was proven); else passes.\n\
         \n\
         Why: raising the NIC and br-vpc to 9000 on a cluster whose switch carried 1500 \
         black-holed every frame above 1500. An L2 switch sends no \"fragmentation \
         needed\", so path MTU discovery cannot recover, and tracepath reports 9000 on such \
         a path after ~90 s. The manual proof, `ping -M do -s 8972 -c 3` per peer in turn, \
         took 29 s for 4 peers and only said yes or no.\n\
         \n\
         Fix: configure every switch port and router between the nodes for the target, or \
         revert: `ip link set dev <dev> mtu <path_mtu>` on both ends and on br-vpc, and keep \
         underlay_mtu at what the path carries. Needs root or a ping_group_range that \
         includes this user to open ICMP sockets."
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let (target_mtu, target_source) = match ctx.opts.mtu {
            Some(m) => (m, TargetSource::Flag),
            None => match ctx.expectations() {
                Ok(e) => (e.underlay_mtu, TargetSource::Config),
                Err(skip) => return skip,
            },
        };
        let discovery = peers::discover(ctx);
        if discovery.is_empty() {
            let why = discovery.why_empty();
            let mut f = Finding::skip(SkipReason::NothingToMeasure(if why.is_empty() {
                "no peers to probe".to_owned()
            } else {
                format!("no peers to probe ({why})")
            }))
            .with("target_mtu", target_mtu);
            if !discovery.excluded.is_empty() {
                f = f.with("excluded", &discovery.excluded);
            }
            return f;
        }
        match gather(ctx, target_mtu, target_source, discovery) {
            Ok(facts) => judge(&facts),
            Err(e) => Finding::from(e).with("target_mtu", target_mtu),
        }
    }
}

/// Route lookups, local links and the probes themselves.
pub fn gather(
    ctx: &Ctx,
    target_mtu: u32,
    target_source: TargetSource,
    discovery: PeerSet,
) -> Result<PathFacts, ProbeError> {
    let mut local: BTreeMap<u32, Result<LocalLink, String>> = BTreeMap::new();
    let mut egress = Vec::with_capacity(discovery.peers.len());
    for peer in &discovery.peers {
        let e = match links::route_to(peer.address) {
            Ok(route) => local
                .entry(route.oif)
                .or_insert_with(|| local_link(route.oif))
                .clone(),
            Err(ProbeError::NotFound(_)) => Err("no route".to_owned()),
            Err(e) => Err(e.to_string()),
        };
        egress.push(e);
    }
    let targets: Vec<Target> = discovery
        .peers
        .iter()
        .map(|p| Target {
            addr: p.address,
            target_mtu,
        })
        .collect();
    // Stop probing a little before the run's deadline so that the verdict
    // (with what was cut short) is reported instead of a bare timeout.
    let deadline = ctx
        .deadline()
        .checked_sub(JUDGE_MARGIN)
        .unwrap_or_else(std::time::Instant::now);
    let settings = Settings {
        round_timeout: ctx.opts.probe_timeout,
        deadline,
        max_rounds: MAX_ROUNDS,
    };
    let (probes, socket) = icmp_probe::measure(&targets, &settings)?;
    let peers = discovery
        .peers
        .iter()
        .cloned()
        .zip(egress)
        .zip(probes)
        .map(|((peer, egress), probe)| PeerFacts {
            peer,
            egress,
            probe,
        })
        .collect();
    Ok(PathFacts {
        target_mtu,
        target_source,
        peers,
        socket,
        discovery,
        probe_timeout: ctx.opts.probe_timeout,
    })
}

fn local_link(oif: u32) -> Result<LocalLink, String> {
    let link = links::link_by_index(oif).map_err(|e| e.to_string())?;
    let ports = if link.is_bridge() {
        links::ports_of(&link).map_err(|e| e.to_string())?
    } else {
        Vec::new()
    };
    Ok(LocalLink::from_link(&link, &ports))
}

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
    let local_short = probe.local_limit.is_some_and(|l| l < target)
        || p.egress.as_ref().is_ok_and(|l| !l.below(target).is_empty());
    let verdict = if local_short {
        PeerVerdict::LocalMtu
    } else if probe.too_big.is_some() {
        PeerVerdict::TooBig
    } else {
        PeerVerdict::BlackHole
    };
    (verdict, path_mtu, inexact)
}

/// The verdict on everything measured.
pub fn judge(facts: &PathFacts) -> Finding {
    let target = facts.target_mtu;
    let mut reports = Vec::with_capacity(facts.peers.len());
    for p in &facts.peers {
        let (verdict, path_mtu, inexact) = peer_verdict(p, target);
        let detail = match verdict {
            PeerVerdict::Unreachable => Some(match (&p.egress, &p.probe.other_error) {
                (Err(why), _) => why.clone(),
                (_, Some(err)) => err.clone(),
                _ => "no echo reply to a minimal probe".to_owned(),
            }),
            _ => None,
        };
        reports.push(PeerReport {
            address: p.peer.address,
            source: p.peer.source,
            interface: p.egress.as_ref().ok().map(|l| l.interface.clone()),
            verdict,
            path_mtu,
            rtt_ms: p.probe.rtt.map(ms),
            rounds: p.probe.rounds,
            reported_by: match verdict {
                PeerVerdict::TooBig => p.probe.too_big.and_then(|t| t.from),
                _ => None,
            },
            path_mtu_inexact: inexact,
            detail,
        });
    }
    let mut local: Vec<&LocalLink> = Vec::new();
    for l in facts.peers.iter().filter_map(|p| p.egress.as_ref().ok()) {
        if !local.iter().any(|x| x.interface == l.interface) {
            local.push(l);
        }
    }

    let count = |v: PeerVerdict| reports.iter().filter(|r| r.verdict == v).count();
    let failing: Vec<&PeerReport> = reports
        .iter()
        .filter(|r| {
            matches!(
                r.verdict,
                PeerVerdict::BlackHole | PeerVerdict::TooBig | PeerVerdict::LocalMtu
            )
        })
        .collect();
    let unreachable: Vec<&PeerReport> = reports
        .iter()
        .filter(|r| r.verdict == PeerVerdict::Unreachable)
        .collect();

    // Silence within a round the deadline cut short proves nothing.
    let cut: Vec<String> = facts
        .peers
        .iter()
        .zip(&reports)
        .filter(|(p, r)| {
            p.probe.cut_short
                && matches!(r.verdict, PeerVerdict::BlackHole | PeerVerdict::Unreachable)
        })
        .map(|(_, r)| r.address.to_string())
        .collect();

    let finding = if !cut.is_empty() {
        Finding::error(format!(
            "the run's --timeout ended probing before {} answered or proved silent; nothing is concluded for {}",
            cut.join(", "),
            if cut.len() == 1 { "it" } else { "them" }
        ))
        .fix(format!(
            "re-run with more time: `spx doctor --check mtu.path --timeout {}s` (each of up to {MAX_ROUNDS} rounds takes --probe-timeout)",
            (facts.probe_timeout.as_secs_f64() * f64::from(MAX_ROUNDS) + 2.0)
                .ceil()
                .max(10.0)
        ))
    } else if !failing.is_empty() {
        let mut parts: Vec<String> = failing
            .iter()
            .take(3)
            .map(|r| describe(r, target))
            .collect();
        if failing.len() > 3 {
            parts.push(format!("and {} more", failing.len() - 3));
        }
        let mut summary = format!(
            "{} of {} peers cannot carry {target} bytes: {}",
            failing.len(),
            reports.len(),
            parts.join("; ")
        );
        if !unreachable.is_empty() {
            summary.push_str(&format!("; {} unreachable", unreachable.len()));
        }
        Finding::fail(summary).fixes(remediation(facts, &reports, &local))
    } else if !unreachable.is_empty() {
        let addrs: Vec<String> = unreachable.iter().map(|r| r.address.to_string()).collect();
        Finding::error(format!(
            "{} of {} peers answered no echo request ({}), so their path MTU is unproven; \
             {} reachable peers carry {target} bytes",
            unreachable.len(),
            reports.len(),
            addrs.join(", "),
            count(PeerVerdict::Ok)
        ))
        .fixes(unreachable_fixes(&unreachable))
    } else {
        let slowest = reports
            .iter()
            .filter_map(|r| r.rtt_ms)
            .fold(0.0f64, f64::max);
        Finding::pass(format!(
            "all {} peers carry {target}-byte DF packets (slowest echo {slowest:.3} ms)",
            reports.len()
        ))
    };
    finding
        .with("target_mtu", target)
        .with("target_source", facts.target_source)
        .with("peers", &reports)
        .with("local", &local)
        .with("socket", facts.socket.as_str())
        .with(
            "rounds",
            facts
                .peers
                .iter()
                .map(|p| p.probe.rounds)
                .max()
                .unwrap_or(0),
        )
        .with("peer_discovery", &facts.discovery.consulted)
        .with("excluded", &facts.discovery.excluded)
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn describe(r: &PeerReport, target: u32) -> String {
    let mtu = r.path_mtu.map_or("?".to_owned(), |m| m.to_string());
    let via = r.interface.as_deref().unwrap_or("?");
    match r.verdict {
        PeerVerdict::BlackHole => format!(
            "{} black-holes packets above {mtu} bytes (no \"fragmentation needed\" comes back)",
            r.address
        ),
        PeerVerdict::TooBig => format!(
            "{}: {} answered \"fragmentation needed\", path MTU {mtu}",
            r.address,
            r.reported_by.map_or("a hop".to_owned(), |a| a.to_string())
        ),
        PeerVerdict::LocalMtu => format!(
            "{}: this host's {via} is below {target}, path MTU {mtu}",
            r.address
        ),
        _ => String::new(),
    }
}

fn remediation(facts: &PathFacts, reports: &[PeerReport], local: &[&LocalLink]) -> Vec<String> {
    let target = facts.target_mtu;
    let mut steps = Vec::new();
    // Local interfaces first: nothing else matters until they are raised.
    let mut raise: Vec<String> = Vec::new();
    let mut capped: Vec<String> = Vec::new();
    for r in reports
        .iter()
        .filter(|r| r.verdict == PeerVerdict::LocalMtu)
    {
        let Some(l) = local
            .iter()
            .find(|l| Some(&l.interface) == r.interface.as_ref())
        else {
            continue;
        };
        // Ports before the bridge they belong to.
        for dev in l.ports.iter().chain(std::iter::once(*l)) {
            if dev.mtu < target {
                let cmd = format!("`ip link set dev {} mtu {target}`", dev.interface);
                if !raise.contains(&cmd) {
                    raise.push(cmd);
                }
            }
        }
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
    if !raise.is_empty() {
        steps.push(format!(
            "raise this host's side first, bridge ports before the bridge: {}; both ends and br-vpc must carry {target} before the path can be tested",
            raise.join(", then ")
        ));
    }
    for note in capped {
        steps.push(format!(
            "{note}: keep underlay_mtu at or below that maximum"
        ));
    }
    let fabric: Vec<&PeerReport> = reports
        .iter()
        .filter(|r| matches!(r.verdict, PeerVerdict::BlackHole | PeerVerdict::TooBig))
        .collect();
    for r in &fabric {
        let mtu = r
            .path_mtu
            .map_or("its path MTU".to_owned(), |m| m.to_string());
        let what = match r.verdict {
            PeerVerdict::TooBig => format!(
                "the router {} forwards at most {mtu} bytes towards {}",
                r.reported_by
                    .map_or("on the path".to_owned(), |a| a.to_string()),
                r.address
            ),
            _ => format!(
                "a switch between this host and {} silently drops frames above {mtu} bytes",
                r.address
            ),
        };
        steps.push(format!(
            "either configure the fabric for jumbo frames ({what}; every switch port, VLAN and router on the path must carry {target}), or revert as below"
        ));
    }
    // Revert to what every path carries.
    let carried = reports
        .iter()
        .filter(|r| r.verdict != PeerVerdict::Unreachable && r.verdict != PeerVerdict::Ok)
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
        if !fabric.is_empty() {
            let cmds: Vec<String> = devs
                .iter()
                .map(|d| format!("`ip link set dev {d} mtu {carried}`"))
                .collect();
            let here = if cmds.is_empty() {
                String::new()
            } else {
                format!(" (here: {})", cmds.join(", "))
            };
            steps.push(format!(
                "to revert: `ip link set dev <dev> mtu {carried}` on both ends and on br-vpc{here}, then set `underlay_mtu = {carried}` under [network] in {CONFIG_FILE} on every node"
            ));
        } else {
            steps.push(format!(
                "until then keep `underlay_mtu` at {carried} (what the path carries) under [network] in {CONFIG_FILE}"
            ));
        }
    }
    steps.push("re-check: `spx doctor --check mtu.path`".to_owned());
    steps
}

fn unreachable_fixes(unreachable: &[&PeerReport]) -> Vec<String> {
    let mut steps = Vec::new();
    for r in unreachable {
        let detail = r.detail.as_deref().unwrap_or("no echo reply");
        let cmd = if r.address.is_ipv4() {
            "`nft add rule inet filter input icmp type { echo-request, destination-unreachable } accept`"
        } else {
            "`nft add rule inet filter input icmpv6 type { echo-request, packet-too-big } accept`"
        };
        steps.push(format!(
            "{} ({detail}): the node firewall there must accept ICMP echo-request and destination-unreachable for DF probes to prove the path, e.g. {cmd}, and `sysctl net.ipv4.icmp_echo_ignore_all` must be 0",
            r.address
        ));
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;
    use crate::probe::icmp_probe::TooBig;
    use crate::probe::peers::PeerSource;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn link(name: &str, mtu: u32, ports: Vec<LocalLink>) -> LocalLink {
        LocalLink {
            interface: name.into(),
            mtu,
            max_mtu: Some(65535),
            kind: (!ports.is_empty()).then(|| "bridge".to_owned()),
            ports,
        }
    }

    fn probe(addr: &str, lo: Option<u32>, hi: Option<u32>) -> PathProbe {
        PathProbe {
            addr: ip(addr),
            target_mtu: 9000,
            rtt: lo.map(|_| Duration::from_micros(120)),
            largest_answered: lo,
            smallest_refused: hi,
            too_big: None,
            local_limit: None,
            other_error: None,
            rounds: 1,
            probes_sent: 4,
            cut_short: false,
        }
    }

    fn peer(addr: &str, egress: LocalLink, probe: PathProbe) -> PeerFacts {
        PeerFacts {
            peer: Peer {
                address: ip(addr),
                source: PeerSource::Config,
                node: None,
            },
            egress: Ok(egress),
            probe,
        }
    }

    fn facts(peers: Vec<PeerFacts>) -> PathFacts {
        PathFacts {
            target_mtu: 9000,
            target_source: TargetSource::Config,
            peers,
            socket: SocketKind::Raw,
            discovery: PeerSet::default(),
            probe_timeout: Duration::from_secs(1),
        }
    }

    fn br_vpc() -> LocalLink {
        link("br-vpc", 9000, vec![link("enp65s0f0", 9000, vec![])])
    }

    #[test]
    fn the_seed_cluster_behind_a_1500_switch_fails_with_1500() {
        // performance-tuning §4: NIC and br-vpc at 9000 on all four nodes,
        // switch not configured for jumbo: payload 1472 answered, 1972 and
        // 8972 did not. Three peers seen from one node.
        let peers = ["198.18.3.182", "198.18.3.183", "198.18.3.184"]
            .iter()
            .map(|a| peer(a, br_vpc(), probe(a, Some(1500), Some(1501))))
            .collect();
        let f = judge(&facts(peers));
        assert_eq!(f.status, Status::Fail);
        assert!(f.summary.starts_with("3 of 3 peers cannot carry 9000 bytes: 198.18.3.182 black-holes packets above 1500 bytes"), "{}", f.summary);
        let p = &f.evidence["peers"][0];
        assert_eq!(p["verdict"], "blackhole");
        assert_eq!(p["path_mtu"], 1500);
        assert_eq!(p["interface"], "br-vpc");
        assert_eq!(p["rtt_ms"], 0.12);
        assert_eq!(f.evidence["target_mtu"], 9000);
        assert_eq!(f.evidence["local"][0]["ports"][0]["interface"], "enp65s0f0");
        let fixes = f.remediation.join("\n");
        assert!(
            fixes.contains("`ip link set dev br-vpc mtu 1500`"),
            "{fixes}"
        );
        assert!(
            fixes.contains("`ip link set dev enp65s0f0 mtu 1500`"),
            "{fixes}"
        );
        assert!(fixes.contains("`underlay_mtu = 1500`"), "{fixes}");
        assert!(
            fixes.contains("silently drops frames above 1500 bytes"),
            "{fixes}"
        );
    }

    #[test]
    fn a_router_saying_fragmentation_needed_is_too_big() {
        let mut p = probe("198.18.1.2", Some(4000), Some(4001));
        p.too_big = Some(TooBig {
            from: Some(ip("198.18.0.254")),
            mtu: 4000,
        });
        let f = judge(&facts(vec![peer("198.18.1.2", br_vpc(), p)]));
        assert_eq!(f.status, Status::Fail);
        let e = &f.evidence["peers"][0];
        assert_eq!(e["verdict"], "too-big");
        assert_eq!(e["path_mtu"], 4000);
        assert_eq!(e["reported_by"], "198.18.0.254");
        assert!(f.remediation[0].contains("the router 198.18.0.254 forwards at most 4000 bytes"));
    }

    #[test]
    fn a_local_link_below_the_target_is_local_mtu_and_raised_first() {
        let mut p = probe("198.18.0.2", Some(1500), Some(1501));
        p.local_limit = Some(1500);
        let mut nic = link("enp1s0", 1500, vec![]);
        nic.max_mtu = Some(1500);
        let f = judge(&facts(vec![peer(
            "198.18.0.2",
            link("br-vpc", 1500, vec![nic]),
            p,
        )]));
        assert_eq!(f.status, Status::Fail);
        assert_eq!(f.evidence["peers"][0]["verdict"], "local-mtu");
        assert_eq!(f.evidence["peers"][0]["path_mtu"], 1500);
        assert_eq!(f.evidence["local"][0]["ports"][0]["max_mtu"], 1500);
        assert!(
            f.summary.contains("this host's br-vpc is below 9000"),
            "{}",
            f.summary
        );
        assert!(
            f.remediation[0].contains(
                "`ip link set dev enp1s0 mtu 9000`, then `ip link set dev br-vpc mtu 9000`"
            ),
            "{:?}",
            f.remediation
        );
        assert!(
            f.remediation[1].contains("enp1s0 cannot be raised to 9000"),
            "{:?}",
            f.remediation
        );
    }

    #[test]
    fn a_bridge_port_below_the_target_is_local_even_when_the_bridge_is_not() {
        let p = probe("198.18.0.2", Some(1500), Some(1501));
        let f = judge(&facts(vec![peer(
            "198.18.0.2",
            link("br-vpc", 9000, vec![link("enp1s0", 1500, vec![])]),
            p,
        )]));
        assert_eq!(f.evidence["peers"][0]["verdict"], "local-mtu");
    }

    #[test]
    fn an_unreachable_peer_is_an_error_not_a_pass() {
        let ok = peer(
            "198.18.0.2",
            br_vpc(),
            probe("198.18.0.2", Some(9000), None),
        );
        let dead = peer("198.18.0.4", br_vpc(), probe("198.18.0.4", None, Some(84)));
        let f = judge(&facts(vec![ok, dead]));
        assert_eq!(f.status, Status::Error);
        assert_eq!(f.evidence["peers"][1]["verdict"], "unreachable");
        assert!(f.evidence["peers"][1]["path_mtu"].is_null());
        assert!(f.evidence["peers"][1]["rtt_ms"].is_null());
        assert!(f.summary.contains("198.18.0.4"));
        assert!(f.remediation[0].contains("must accept ICMP echo-request"));
    }

    #[test]
    fn fail_outranks_unreachable() {
        let bh = peer(
            "198.18.0.3",
            br_vpc(),
            probe("198.18.0.3", Some(1500), Some(1501)),
        );
        let dead = peer("198.18.0.4", br_vpc(), probe("198.18.0.4", None, Some(84)));
        let f = judge(&facts(vec![bh, dead]));
        assert_eq!(f.status, Status::Fail);
        assert!(f.summary.ends_with("; 1 unreachable"), "{}", f.summary);
    }

    #[test]
    fn healthy_jumbo_paths_pass() {
        let f = judge(&facts(vec![
            peer(
                "198.18.0.2",
                br_vpc(),
                probe("198.18.0.2", Some(9000), None),
            ),
            peer(
                "fd00:198:18::2",
                br_vpc(),
                probe("fd00:198:18::2", Some(9000), None),
            ),
        ]));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence["peers"][1]["verdict"], "ok");
        assert_eq!(f.evidence["peers"][1]["path_mtu"], 9000);
        assert!(f.remediation.is_empty());
    }

    #[test]
    fn silence_in_a_round_cut_by_the_deadline_is_not_a_black_hole() {
        let mut p = probe("198.18.0.3", Some(1500), Some(1501));
        p.cut_short = true;
        let f = judge(&facts(vec![peer("198.18.0.3", br_vpc(), p)]));
        assert_eq!(f.status, Status::Error, "{}", f.summary);
        assert!(f.summary.contains("--timeout"), "{}", f.summary);
        // An answered target is proof even when a round was cut.
        let mut ok = probe("198.18.0.2", Some(9000), None);
        ok.cut_short = true;
        assert_eq!(
            judge(&facts(vec![peer("198.18.0.2", br_vpc(), ok)])).status,
            Status::Pass
        );
    }

    #[test]
    fn a_gap_left_by_loss_is_reported_inexact() {
        let p = probe("198.18.0.3", Some(1400), Some(1600));
        let f = judge(&facts(vec![peer("198.18.0.3", br_vpc(), p)]));
        assert_eq!(f.evidence["peers"][0]["path_mtu"], 1400);
        assert_eq!(f.evidence["peers"][0]["path_mtu_inexact"], true);
    }
}
