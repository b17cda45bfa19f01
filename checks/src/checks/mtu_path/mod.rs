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
//! carries: see [`crate::facts::icmp`] for how.
//!
//! Every word that depends on the peer's family follows it: IPv4 speaks of
//! "fragmentation needed" and `net.ipv4.icmp_echo_ignore_all`, IPv6 of
//! "packet too big" and `net.ipv6.icmp.echo_ignore_all`.
//!
//! A peer nothing came back from because this kernel's neighbour table was
//! full is not a silent peer: see `neighbour`.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::icmp::{PathProbe, Settings, SocketKind, Target};
use crate::facts::links::{self, Link};
use crate::facts::peers::{self as peer_facts, Scope};
use crate::facts::ProbeError;
use crate::finding::{Finding, SkipReason, Subject};
use crate::kind::most_severe;
use crate::metrics::{MetricDef, MetricType, Series};
use crate::targets::peers::{self, Excluded, Peer, PeerSet, SourceNote};

mod neighbour;
mod remediation;
mod text;
mod verdict;

use self::neighbour::TableFull;
pub use self::neighbour::{NeighbourReadings, NextHop, TableReading};
use self::remediation::{below_target, remediation, same_size_black_hole, unreachable_fixes};
use self::text::{describe, few, labels, peer_text};
use self::verdict::{peer_kind, report};
pub use self::verdict::{peer_verdict, usable_mtu};

pub struct PathMtu;

crate::kinds! {
    /// What `mtu.path` can say, per peer and for the check.
    pub enum PathMtuKind for "mtu.path" {
        /// The path carries the target MTU: a don't-fragment echo request that exactly fills it was answered.
        Ok = pass("ok"),
        /// Small probes answer and large ones vanish with no "fragmentation needed" (or "packet too big") coming back: a switch port, or the peer's own interface, drops them silently. The path MTU is measured to the byte.
        BlackHole = fail("black-hole"),
        /// A hop answered "fragmentation needed" (IPv4) or "packet too big" (IPv6) below the target, with its MTU.
        TooBig = fail("too-big"),
        /// This host's own egress interface, or a port of its bridge, is below the target, so the probe cannot leave; what drops less beyond it is named too.
        LocalMtu = fail("local-mtu"),
        /// The kernel dropped the probes before they left: its neighbour table (gc_thresh3, one for the whole kernel) was full, so no entry could be made for the peer's next hop. Nothing about the path is proven, and the node's own traffic to such peers is dropped the same way.
        NeighbourTableFull = error("neighbour-table-full"),
        /// Not even a minimal probe was answered (the peer's firewall or echo_ignore_all, or no route): nothing about its path is proven.
        Unreachable = error("unreachable"),
        /// The run's --timeout ended probing before the peer answered or proved silent: nothing is concluded for it.
        CutShort = error("cut-short"),
    }
}

static DECLARED: Declared = Declared::of::<PathMtuKind, PathMtuEvidence>();

/// What `mtu.path` measured: the target, every peer's path, this host's
/// links on those paths, and how the peers were found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PathMtuEvidence {
    pub target_mtu: u32,
    /// `--mtu` or `underlay_mtu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_source: Option<TargetSource>,
    /// One row per peer probed (none when there was no one to probe).
    #[serde(default)]
    pub peers: Vec<PeerReport>,
    /// This host's egress interfaces on those paths, with their bridge ports.
    #[serde(default)]
    pub local: Vec<LocalLink>,
    /// The ICMP socket kind the probes used (`raw` or `dgram`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
    /// The most probe rounds any peer took (at most 3).
    #[serde(default)]
    pub rounds: u32,
    /// Every peer source consulted, in order, with what it said.
    #[serde(default)]
    pub peer_discovery: Vec<SourceNote>,
    /// Addresses a source named that are not probed, and why.
    #[serde(default)]
    pub excluded: Vec<Excluded>,
    /// The plane the peers are on: `vpc`, `wan`, or `as given` for --peer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plane: Option<String>,
    /// The underlay_mtu every failing path allows, as a setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_underlay_mtu: Option<u32>,
    /// The kernel's neighbour tables of the peers' families, read before
    /// and after the probes (thresholds, entries, `table_fulls`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub neighbour_tables: Vec<TableReading>,
}

static PATH_MTU_TARGET: MetricDef = MetricDef {
    name: "spx_doctor_path_mtu_target_bytes",
    help: "The underlay MTU mtu.path probed for.",
    kind: MetricType::Gauge,
    labels: &[],
};
static PATH_MTU: MetricDef = MetricDef {
    name: "spx_doctor_path_mtu_bytes",
    help: "The largest packet the underlay carries to the peer, measured.",
    kind: MetricType::Gauge,
    labels: &["peer"],
};

impl Evidence for PathMtuEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&PATH_MTU_TARGET, &PATH_MTU];
    fn series(&self) -> Vec<Series> {
        let mut out = vec![Series::of(&PATH_MTU_TARGET, f64::from(self.target_mtu))];
        for p in &self.peers {
            if let Some(mtu) = p.path_mtu {
                out.push(Series::labelled(
                    &PATH_MTU,
                    vec![p.address.to_string()],
                    f64::from(mtu),
                ));
            }
        }
        out
    }
}

impl PathMtuEvidence {
    /// This host's own devices below the target on the paths of its
    /// local-mtu peers, bridge ports before their bridge, each with its
    /// MTU: what this node's own fix raises first (`ip link set dev … mtu`),
    /// as the check's remediation names them.
    pub fn own_links_below_target(&self) -> Vec<(String, u32)> {
        let failing: Vec<&PeerReport> = self.peers.iter().filter(|r| r.failing()).collect();
        let local: Vec<&LocalLink> = self.local.iter().collect();
        below_target(&failing, &local, self.target_mtu)
            .into_iter()
            .map(|d| (d.interface.clone(), d.mtu))
            .collect()
    }

    /// Before any probe: the target and how the peers were looked for.
    fn unprobed(target_mtu: u32, target_source: TargetSource, discovery: &PeerSet) -> Self {
        PathMtuEvidence {
            target_mtu,
            target_source: Some(target_source),
            peer_discovery: discovery.consulted.clone(),
            excluded: discovery.excluded.clone(),
            ..PathMtuEvidence::default()
        }
    }
}

/// At most this many probe rounds (a ladder, then refinement).
pub const MAX_ROUNDS: u32 = 3;
/// Time kept back from the run's deadline to judge and report.
const JUDGE_MARGIN: Duration = Duration::from_millis(100);
/// A Linux veth or bridge port takes a frame up to 4 bytes (a VLAN tag)
/// longer than its MTU (`is_skb_forwardable`), and so do many switches: a
/// silent drop behind a 1500-byte link is measured at up to 1504.
pub const VLAN_SLACK: u32 = 4;

/// What one peer's path was found to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerVerdict {
    /// The target size passes.
    Ok,
    /// Small probes answer, large ones vanish: a silent drop (a switch
    /// port, or the peer's own interface, below the target).
    #[serde(rename = "blackhole")]
    BlackHole,
    /// A hop answered "fragmentation needed"/"packet too big".
    TooBig,
    /// Not even a minimal probe answered.
    Unreachable,
    /// This host's own egress interface (or a port of its bridge) is below
    /// the target: the probe cannot leave.
    LocalMtu,
    /// The kernel dropped the probes before they left: its neighbour table
    /// was full and the peer's next hop had no entry.
    NeighbourTableFull,
}

impl PeerVerdict {
    /// As the evidence writes it (`blackhole`, `too-big`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            PeerVerdict::Ok => "ok",
            PeerVerdict::BlackHole => "blackhole",
            PeerVerdict::TooBig => "too-big",
            PeerVerdict::Unreachable => "unreachable",
            PeerVerdict::LocalMtu => "local-mtu",
            PeerVerdict::NeighbourTableFull => "neighbour-table-full",
        }
    }
}

impl std::fmt::Display for PeerVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the target MTU came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TargetSource {
    #[serde(rename = "--mtu")]
    Flag,
    #[serde(rename = "underlay_mtu")]
    Config,
}

/// This host's side of one peer's path: the egress interface and, when it
/// is a bridge, its ports (the physical NIC under br-vpc).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalLink {
    pub interface: String,
    pub mtu: u32,
    /// IFLA_MAX_MTU: the largest MTU the driver accepts.
    pub max_mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<LocalLink>,
}

impl LocalLink {
    pub fn from_link(link: &Link, ports: &[&Link]) -> LocalLink {
        LocalLink {
            interface: link.name.clone(),
            mtu: link.mtu,
            max_mtu: link.max_mtu,
            kind: link.kind.clone(),
            ports: ports.iter().map(|p| LocalLink::from_link(p, &[])).collect(),
        }
    }

    /// The smallest MTU of this device and its ports: what leaves this host.
    pub fn narrowest(&self) -> u32 {
        std::iter::once(self)
            .chain(self.ports.iter())
            .map(|l| l.mtu)
            .min()
            .unwrap_or(self.mtu)
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
    /// What the probes need a neighbour entry for (none without a route).
    pub next_hop: Option<NextHop>,
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
    /// The Spinifex config remediation names (the one this run read).
    pub config_file: String,
    /// The kernel's neighbour tables around the probes.
    pub neighbour: NeighbourReadings,
}

/// One row of the `peers` evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerReport {
    pub address: IpAddr,
    /// For a link-local IPv6 peer: the interface it is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    pub source: peers::PeerSource,
    /// The `[nodes.NAME]` this address is, when the source said so (the
    /// config entry it came from, or the SB `Encap` row of that node's
    /// chassis): how a cluster run places a result toward a node that did
    /// not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub interface: Option<String>,
    pub verdict: PeerVerdict,
    /// Exact path MTU for every peer that is not `ok` (null when
    /// unreachable); for `ok`, the target, the largest size probed.
    pub path_mtu: Option<u32>,
    pub rtt_ms: Option<f64>,
    /// Probe rounds this peer took (at most 3).
    pub rounds: u32,
    /// For too-big: the hop that said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_by: Option<IpAddr>,
    /// False when lost probes left a gap after the last round; path_mtu is
    /// then the largest size proven to pass.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub path_mtu_inexact: bool,
    /// For local-mtu: the MTU of this host's narrowest link on the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_mtu: Option<u32>,
    /// For local-mtu: what the path does beyond this host when it carries
    /// less than this host's link (`blackhole` or `too-big`, measured at
    /// sizes the local link lets out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beyond: Option<PeerVerdict>,
    /// The underlay_mtu this path allows, as a setting: the link MTU that
    /// explains the measurement (a black hole measured at 1504 is a
    /// 1500-byte link passing a VLAN tag's 4 bytes more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usable_mtu: Option<u32>,
    /// The run's deadline cut probing short: silence proves nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_short: bool,
    /// Probes the kernel refused at `sendto` with ENOBUFS or EINVAL.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused_at_send: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl PeerReport {
    /// The address as an operator writes it (`fe80::2%eth0` when scoped).
    pub fn label(&self) -> String {
        peer_facts::display(self.address, self.scope.as_ref())
    }

    /// A verdict this run proved (not cut short by the deadline).
    fn concluded(&self) -> bool {
        !(self.cut_short
            && matches!(
                self.verdict,
                PeerVerdict::BlackHole | PeerVerdict::Unreachable
            ))
    }

    fn failing(&self) -> bool {
        self.concluded()
            && matches!(
                self.verdict,
                PeerVerdict::BlackHole | PeerVerdict::TooBig | PeerVerdict::LocalMtu
            )
    }

    /// Something past this host's own link limits the path.
    fn fabric_limited(&self) -> bool {
        matches!(self.verdict, PeerVerdict::BlackHole | PeerVerdict::TooBig)
            || self.beyond.is_some()
    }

    /// What stops the path beyond this host: its own verdict, or `beyond`.
    fn fabric_verdict(&self) -> PeerVerdict {
        self.beyond.unwrap_or(self.verdict)
    }
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
         /etc/spinifex/firewall/peers.nft (the vpc plane), then the wan plane: `define \
         spinifex_peers` in the same file, [nodes.*] advertise/host. This host's own \
         addresses and its ovn-encap-ip are excluded.\n\
         \n\
         Per peer: ok; blackhole (small probes answer, large ones vanish: a switch port or \
         the peer's own interface drops them silently); too-big (a hop answered \
         \"fragmentation needed\", or \"packet too big\" on IPv6, with its MTU); local-mtu \
         (this host's egress interface or a port of its bridge is below the target, so \
         the probe cannot leave; when the path carries even less than that link, what \
         drops it beyond is named too); unreachable (no echo reply at all: the peer's \
         firewall must accept echo-request and destination-unreachable, or ICMPv6 \
         echo-request and packet-too-big, and net.ipv4.icmp_echo_ignore_all or \
         net.ipv6.icmp.echo_ignore_all must be 0). Fails on blackhole, too-big or \
         local-mtu, naming every peer nothing was concluded for; an unreachable peer \
         alone makes the result an error (nothing was proven); else passes. A link-local \
         IPv6 peer is given with its interface (--peer fe80::2%eth0) and probed on it.\n\
         \n\
         Why: raising the NIC and br-vpc to 9000 on a cluster whose switch carried 1500 \
         black-holed every frame above 1500. An L2 switch sends no \"fragmentation \
         needed\", so path MTU discovery cannot recover, and tracepath reports 9000 on such \
         a path after ~90 s. The manual proof, `ping -M do -s 8972 -c 3` per peer in turn, \
         took 29 s for 4 peers and only said yes or no.\n\
         \n\
         Fix: configure every switch port and router between the nodes (and the peers' \
         own interfaces) for the target; when every peer (two or more) black-holes at the \
         same size, the narrow point is on every path from this node and is named once, \
         on this node's side (its own switch port or link). Or revert: `ip link set dev <dev> mtu N` on both \
         ends and on br-vpc, and keep underlay_mtu at N, what the path carries as a \
         setting (a silent drop measured at 1504 is a 1500-byte link that lets a VLAN \
         tag's 4 bytes more through, so N is 1500). Needs root or a ping_group_range that \
         includes this user to open ICMP sockets."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
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
        let unprobed = PathMtuEvidence::unprobed(target_mtu, target_source, &discovery);
        if discovery.is_empty() {
            let why = discovery.why_empty();
            return Finding::skip(SkipReason::NothingToMeasure(if why.is_empty() {
                "no peers to probe".to_owned()
            } else {
                format!("no peers to probe ({why})")
            }))
            .evidence(&unprobed);
        }
        match gather(ctx, target_mtu, target_source, discovery) {
            Ok(facts) => judge(&facts),
            Err(e) => Finding::from(e).evidence(&unprobed),
        }
    }
}

/// Route lookups, local links, the neighbour tables around the probes and
/// the probes themselves.
pub fn gather(
    ctx: &Ctx,
    target_mtu: u32,
    target_source: TargetSource,
    discovery: PeerSet,
) -> Result<PathFacts, ProbeError> {
    let host = ctx.host();
    let (egress, next_hops) = egress_of(&host, &discovery);
    let targets: Vec<Target> = discovery
        .peers
        .iter()
        .map(|p| Target {
            addr: p.address,
            scope_id: p.scope.as_ref().map_or(0, |s| s.index),
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
    let mut neighbour = NeighbourReadings::default();
    neighbour.before = noted(&mut neighbour.unread, "before", host.neighbour_tables());
    let (probes, socket) = host.icmp(&targets, &settings)?;
    neighbour.after = noted(&mut neighbour.unread, "after", host.neighbour_tables());
    // Whose silence the table may explain: only then are the entries read.
    if probes.iter().any(|p| !p.reachable()) {
        neighbour.entries = noted(&mut neighbour.unread, "entries", host.neighbours());
    }
    let peers = discovery
        .peers
        .iter()
        .cloned()
        .zip(egress)
        .zip(next_hops)
        .zip(probes)
        .map(|(((peer, egress), next_hop), probe)| PeerFacts {
            peer,
            egress,
            next_hop,
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
        config_file: ctx.config_file(),
        neighbour,
    })
}

/// A neighbour reading, or why it is missing (noted in `unread`): the
/// probes do not depend on it.
fn noted<T>(unread: &mut Vec<String>, when: &str, r: Result<T, ProbeError>) -> Option<T> {
    r.map_err(|e| unread.push(format!("neighbour {when}: {e}")))
        .ok()
}

/// Each peer's egress interface (or why there is none) and the next hop its
/// probes need a neighbour entry for: one route each, every egress link
/// and its ports from one link dump, read at the first route that has an
/// egress.
type Egress = (Vec<Result<LocalLink, String>>, Vec<Option<NextHop>>);

fn egress_of(host: &crate::host::HostRef<'_>, discovery: &PeerSet) -> Egress {
    let mut local: BTreeMap<u32, Result<LocalLink, String>> = BTreeMap::new();
    let mut dump: Option<Result<Vec<Link>, String>> = None;
    let mut egress = Vec::with_capacity(discovery.peers.len());
    let mut hops = Vec::with_capacity(discovery.peers.len());
    for peer in &discovery.peers {
        let route = host.route(peer.address, peer.scope.as_ref().map(|s| s.index));
        hops.push(route.as_ref().ok().filter(|r| !r.local).map(|r| NextHop {
            address: r.gateway.unwrap_or(peer.address),
            ifindex: r.oif,
        }));
        egress.push(match route {
            Ok(route) => local
                .entry(route.oif)
                .or_insert_with(|| {
                    let dump = dump.get_or_insert_with(|| host.links().map_err(|e| e.to_string()));
                    local_link(dump, route.oif)
                })
                .clone(),
            Err(ProbeError::NotFound(_)) => Err("no route".to_owned()),
            Err(e) => Err(e.to_string()),
        });
    }
    (egress, hops)
}

/// Interface `oif` and, for a bridge, its ports (`IFLA_MASTER`), from the
/// link dump.
fn local_link(dump: &Result<Vec<Link>, String>, oif: u32) -> Result<LocalLink, String> {
    let dump = dump.as_ref().map_err(Clone::clone)?;
    let link = links::by_index(dump, oif).ok_or_else(|| {
        ProbeError::NotFound(format!("network device interface index {oif}")).to_string()
    })?;
    let ports = if link.is_bridge() {
        links::ports_of(dump, link)
    } else {
        Vec::new()
    };
    Ok(LocalLink::from_link(link, &ports))
}

/// The peers nothing was concluded for, each with its reason: the kernel
/// dropped their probes (a full neighbour table), silent to the end, or cut
/// short by the run's deadline. Every one is named, with its own fix,
/// whatever else is found.
struct Open<'a> {
    dropped: Vec<&'a PeerReport>,
    /// The tables that dropped them, once each.
    tables: Vec<&'a TableFull>,
    silent: Vec<&'a PeerReport>,
    cut: Vec<&'a PeerReport>,
}

/// At most this many table-full peers are named in a summary: at scale
/// they are hundreds.
const DROPPED_SHOWN: usize = 3;

impl<'a> Open<'a> {
    fn of(reports: &'a [PeerReport], full: &'a [Option<TableFull>]) -> Open<'a> {
        let mut tables: Vec<&TableFull> = Vec::new();
        for f in full.iter().flatten() {
            if !tables.iter().any(|t| t.sysctl == f.sysctl) {
                tables.push(f);
            }
        }
        Open {
            dropped: reports
                .iter()
                .filter(|r| r.verdict == PeerVerdict::NeighbourTableFull)
                .collect(),
            tables,
            silent: reports
                .iter()
                .filter(|r| r.verdict == PeerVerdict::Unreachable && r.concluded())
                .collect(),
            cut: reports.iter().filter(|r| !r.concluded()).collect(),
        }
    }

    fn kinds(&self) -> impl Iterator<Item = PathMtuKind> + '_ {
        self.dropped
            .iter()
            .chain(&self.silent)
            .chain(&self.cut)
            .map(|r| peer_kind(r))
    }

    /// `the kernel dropped the probes: its neighbour table is full (…)`,
    /// for each table that did.
    fn table_said(&self) -> String {
        let said: Vec<String> = self.tables.iter().map(|t| t.said()).collect();
        said.join("; ")
    }

    /// What the failing branch appends: `; not concluded: …`.
    fn tail(&self) -> String {
        let mut open: Vec<String> = Vec::new();
        if !self.dropped.is_empty() {
            open.push(format!(
                "{} ({})",
                few(&self.dropped, DROPPED_SHOWN),
                self.table_said()
            ));
        }
        open.extend(
            self.silent
                .iter()
                .map(|r| format!("{} (no echo reply)", r.label())),
        );
        open.extend(
            self.cut
                .iter()
                .map(|r| format!("{} (probing cut short by --timeout)", r.label())),
        );
        if open.is_empty() {
            String::new()
        } else {
            format!("; not concluded: {}", open.join(", "))
        }
    }

    /// The error branch's parts, one per reason.
    fn parts(&self, total: usize) -> Vec<String> {
        let mut parts = Vec::new();
        if !self.dropped.is_empty() {
            parts.push(format!(
                "{} of {total} peers ({}): {}, so their path MTU is unproven",
                self.dropped.len(),
                few(&self.dropped, DROPPED_SHOWN),
                self.table_said()
            ));
        }
        if !self.silent.is_empty() {
            parts.push(format!(
                "{} of {total} peers answered no echo request ({}), so their path MTU is unproven",
                self.silent.len(),
                labels(&self.silent)
            ));
        }
        if !self.cut.is_empty() {
            parts.push(format!(
                "the run's --timeout ended probing before {} answered or proved silent, so nothing is concluded for {}",
                labels(&self.cut),
                if self.cut.len() == 1 { "it" } else { "them" }
            ));
        }
        parts
    }

    /// Each reason's fix: the table's thresholds first (it drops this
    /// node's own traffic too), then each silent peer's, then more time.
    fn fixes(&self, facts: &PathFacts) -> Vec<String> {
        let mut fixes = neighbour::fixes(facts, &self.tables);
        fixes.extend(unreachable_fixes(&self.silent));
        if !self.cut.is_empty() {
            fixes.push(format!(
                "{}: re-run with more time, `spx doctor --check mtu.path --timeout {}s` (each of up to {MAX_ROUNDS} rounds takes --probe-timeout)",
                labels(&self.cut),
                (facts.probe_timeout.as_secs_f64() * f64::from(MAX_ROUNDS) + 2.0)
                    .ceil()
                    .max(10.0)
            ));
        }
        fixes
    }
}

/// The verdict on everything measured.
pub fn judge(facts: &PathFacts) -> Finding {
    let target = facts.target_mtu;
    let full: Vec<Option<TableFull>> = facts
        .peers
        .iter()
        .map(|p| neighbour::table_full(p, facts))
        .collect();
    let reports: Vec<PeerReport> = facts
        .peers
        .iter()
        .zip(&full)
        .map(|(p, f)| report(p, target, f.as_ref()))
        .collect();
    let mut local: Vec<&LocalLink> = Vec::new();
    for l in facts.peers.iter().filter_map(|p| p.egress.as_ref().ok()) {
        if !local.iter().any(|x| x.interface == l.interface) {
            local.push(l);
        }
    }
    let failing: Vec<&PeerReport> = reports.iter().filter(|r| r.failing()).collect();
    let open = Open::of(&reports, &full);
    let subjects: Vec<Subject> = reports
        .iter()
        .map(|r| Subject::new(peer_kind(r), r.label(), peer_text(r, target)))
        .collect();
    let finding = if let Some(kind) = most_severe(failing.iter().map(|r| peer_kind(r))) {
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
        if let Some(hole) = same_size_black_hole(&reports) {
            summary.push_str(&format!(
                "; all {} black-hole above {} bytes, so the narrow point is most likely on this node's side (its own switch port or link)",
                hole.peers, hole.size
            ));
        }
        summary.push_str(&open.tail());
        let mut fixes = remediation(facts, &reports, &local);
        // The re-check stays last.
        let recheck = fixes.pop();
        fixes.extend(open.fixes(facts));
        fixes.extend(recheck);
        Finding::new(kind, summary).fixes(fixes)
    } else if let Some(kind) = most_severe(open.kinds()) {
        let ok = reports
            .iter()
            .filter(|r| r.verdict == PeerVerdict::Ok)
            .count();
        Finding::new(
            kind,
            format!(
                "{}; {ok} reachable peers carry {target} bytes",
                open.parts(reports.len()).join("; ")
            ),
        )
        .fixes(open.fixes(facts))
    } else {
        let slowest = reports
            .iter()
            .filter_map(|r| r.rtt_ms)
            .fold(0.0f64, f64::max);
        Finding::new(
            PathMtuKind::Ok,
            format!(
                "all {} peers carry {target}-byte DF packets (slowest echo {slowest:.3} ms)",
                reports.len()
            ),
        )
    };
    let suggested = reports
        .iter()
        .filter(|r| r.failing())
        .filter_map(|r| r.usable_mtu)
        .min();
    let evidence = PathMtuEvidence {
        socket: Some(facts.socket.as_str().to_owned()),
        rounds: facts
            .peers
            .iter()
            .map(|p| p.probe.rounds)
            .max()
            .unwrap_or(0),
        local: local.into_iter().cloned().collect(),
        plane: facts.discovery.plane().map(str::to_owned),
        suggested_underlay_mtu: suggested,
        neighbour_tables: neighbour::readings(facts),
        peers: reports,
        ..PathMtuEvidence::unprobed(target, facts.target_source, &facts.discovery)
    };
    finding.evidence(&evidence).subjects(subjects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::icmp::TooBig;
    use crate::facts::neighbours::{Neighbour, NeighbourTable};
    use crate::finding::Status;
    use crate::targets::peers::PeerSource;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: &PathFacts) -> Finding {
        crate::schema_check::valid("mtu.path", super::judge(facts))
    }

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
            refused_at_send: 0,
            cut_short: false,
        }
    }

    fn peer(addr: &str, egress: LocalLink, probe: PathProbe) -> PeerFacts {
        PeerFacts {
            peer: Peer {
                address: ip(addr),
                scope: None,
                source: PeerSource::Config,
                node: None,
            },
            egress: Ok(egress),
            next_hop: Some(NextHop {
                address: ip(addr),
                ifindex: 2,
            }),
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
            config_file: "/etc/spinifex/spinifex.toml".into(),
            neighbour: NeighbourReadings::default(),
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
        crate::snapshot::snapshot!("mtu.path", f);
        assert_eq!(f.status, Status::Fail);
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
        assert!(
            fixes.contains("`underlay_mtu = 1500` under [network] in /etc/spinifex/spinifex.toml"),
            "{fixes}"
        );
        // Every peer at one size: said once, on this node's side, not three
        // times blaming each peer's interface.
        assert!(
            fixes.contains("all 3 peers black-hole frames above 1500 bytes, at the same size: the narrow point is on every path from this node, so most likely on this node's side, its own switch port or link"),
            "{fixes}"
        );
        assert!(!fixes.contains("the peer's own interface"), "{fixes}");
        assert_eq!(f.evidence["suggested_underlay_mtu"], 1500);
    }

    #[test]
    fn one_narrow_point_on_every_path_is_said_once_and_only_then() {
        // Two peers at one usable size (a 1500 link passes 1504 through a
        // veth): one fix, on this node's side.
        let f = judge(&facts(vec![
            peer(
                "198.18.0.2",
                br_vpc(),
                probe("198.18.0.2", Some(1500), Some(1501)),
            ),
            peer(
                "198.18.0.3",
                br_vpc(),
                probe("198.18.0.3", Some(1504), Some(1505)),
            ),
        ]));
        let side: Vec<&String> = f
            .remediation
            .iter()
            .filter(|r| r.contains("on this node's side"))
            .collect();
        assert_eq!(side.len(), 1, "{:#?}", f.remediation);
        assert!(
            side[0].starts_with(
                "all 2 peers black-hole frames above 1500 to 1504 bytes, at the same size"
            ),
            "{side:?}"
        );
        assert!(
            side[0].contains("configure this node's switch port (and any VLAN on it) for 9000"),
            "{side:?}"
        );
        assert!(
            !f.remediation
                .iter()
                .any(|r| r.contains("the peer's own interface")),
            "{:#?}",
            f.remediation
        );
        assert!(
            f.remediation
                .iter()
                .any(|r| r.contains("`underlay_mtu = 1500`")),
            "{:#?}",
            f.remediation
        );
        // One peer carries the target: the narrow point is not on every
        // path, so each failing peer keeps its own words.
        for other in [
            probe("198.18.0.3", Some(9000), None),
            probe("198.18.0.3", Some(4000), Some(4001)),
            probe("198.18.0.3", None, Some(84)),
        ] {
            let f = judge(&facts(vec![
                peer(
                    "198.18.0.2",
                    br_vpc(),
                    probe("198.18.0.2", Some(1500), Some(1501)),
                ),
                peer("198.18.0.3", br_vpc(), other),
            ]));
            let fixes = f.remediation.join("\n");
            assert!(!fixes.contains("this node's side"), "{fixes}");
            assert!(!f.summary.contains("this node's side"), "{}", f.summary);
            assert!(
                fixes.contains(
                    "a switch port or the peer's own interface on the path to 198.18.0.2"
                ),
                "{fixes}"
            );
        }
        // A single peer is never "every path".
        let f = judge(&facts(vec![peer(
            "198.18.0.2",
            br_vpc(),
            probe("198.18.0.2", Some(1500), Some(1501)),
        )]));
        assert!(!f.remediation.join("\n").contains("this node's side"));
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
    fn fail_outranks_unreachable_and_still_names_the_silent_peer_with_its_fix() {
        let bh = peer(
            "198.18.0.3",
            br_vpc(),
            probe("198.18.0.3", Some(1500), Some(1501)),
        );
        let dead = peer("198.18.0.4", br_vpc(), probe("198.18.0.4", None, Some(84)));
        let f = judge(&facts(vec![bh, dead]));
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary
                .ends_with("; not concluded: 198.18.0.4 (no echo reply)"),
            "{}",
            f.summary
        );
        let fix = f
            .remediation
            .iter()
            .find(|s| s.starts_with("198.18.0.4 (no echo reply to a minimal 84-byte probe)"))
            .unwrap_or_else(|| panic!("{:#?}", f.remediation));
        assert!(fix.contains("`sysctl net.ipv4.icmp_echo_ignore_all` must be 0"));
        assert!(f.remediation.last().unwrap().starts_with("re-check"));
    }

    #[test]
    fn every_peer_not_concluded_is_named_in_every_branch() {
        // A black hole, a silent peer and one the deadline cut short.
        let bh = peer(
            "198.18.0.3",
            br_vpc(),
            probe("198.18.0.3", Some(1500), Some(1501)),
        );
        let dead = peer(
            "fd00:198:18::4",
            br_vpc(),
            probe("fd00:198:18::4", None, None),
        );
        let mut slow = probe("198.18.0.5", Some(1500), Some(1501));
        slow.cut_short = true;
        let slow = peer("198.18.0.5", br_vpc(), slow);
        let f = judge(&facts(vec![bh.clone(), dead.clone(), slow.clone()]));
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        assert!(
            f.summary
                .starts_with("1 of 3 peers cannot carry 9000 bytes: 198.18.0.3"),
            "{}",
            f.summary
        );
        assert!(
            f.summary.ends_with("; not concluded: fd00:198:18::4 (no echo reply), 198.18.0.5 (probing cut short by --timeout)"),
            "{}",
            f.summary
        );
        let fixes = f.remediation.join("\n");
        assert!(
            fixes.contains("fd00:198:18::4 (no echo reply to a minimal 104-byte probe)"),
            "{fixes}"
        );
        assert!(
            fixes.contains("198.18.0.5: re-run with more time"),
            "{fixes}"
        );
        assert_eq!(f.evidence["peers"][2]["cut_short"], true);
        // Without the black hole: an error naming both, each with its fix.
        let f = judge(&facts(vec![dead, slow]));
        assert_eq!(f.status, Status::Error);
        assert!(f.summary.contains("(fd00:198:18::4)"), "{}", f.summary);
        assert!(
            f.summary.contains("before 198.18.0.5 answered"),
            "{}",
            f.summary
        );
        assert_eq!(f.remediation.len(), 2, "{:#?}", f.remediation);
    }

    #[test]
    fn an_ipv6_peer_gets_ipv6_words() {
        let dead = peer(
            "fd00:198:18::4",
            br_vpc(),
            probe("fd00:198:18::4", None, None),
        );
        let f = judge(&facts(vec![dead]));
        assert_eq!(f.status, Status::Error);
        let fix = &f.remediation[0];
        assert!(
            fix.contains("`sysctl net.ipv6.icmp.echo_ignore_all` must be 0"),
            "{fix}"
        );
        assert!(
            fix.contains("ICMPv6 echo-request and packet-too-big"),
            "{fix}"
        );
        assert!(
            fix.contains("icmpv6 type { echo-request, packet-too-big }"),
            "{fix}"
        );
        assert!(
            !fix.contains("ipv4") && !fix.contains("destination-unreachable"),
            "{fix}"
        );

        let hole = peer(
            "fd00:198:18::3",
            br_vpc(),
            probe("fd00:198:18::3", Some(1500), Some(1501)),
        );
        let f = judge(&facts(vec![hole]));
        assert!(
            f.summary.contains(
                "black-holes packets above 1500 bytes (no \"packet too big\" comes back)"
            ),
            "{}",
            f.summary
        );
        let mut p = probe("fd00:198:19::2", Some(4000), Some(4001));
        p.too_big = Some(TooBig {
            from: Some(ip("fd00:198:18::fe")),
            mtu: 4000,
        });
        let f = judge(&facts(vec![peer("fd00:198:19::2", br_vpc(), p)]));
        assert!(
            f.summary
                .contains("fd00:198:18::fe answered \"packet too big\", path MTU 4000"),
            "{}",
            f.summary
        );
        assert!(!f.summary.contains("fragmentation"), "{}", f.summary);
    }

    #[test]
    fn a_half_raised_host_names_its_link_and_the_black_hole_beyond() {
        // This host at 4000, a 1500 switch port beyond: the probe cannot
        // leave above 4000, and what leaves vanishes above 1504.
        let mut p = probe("198.18.0.2", Some(1504), Some(1505));
        p.local_limit = Some(4000);
        let f = judge(&facts(vec![peer(
            "198.18.0.2",
            link("eth0", 4000, vec![]),
            p,
        )]));
        assert_eq!(f.status, Status::Fail);
        let e = &f.evidence["peers"][0];
        assert_eq!(e["verdict"], "local-mtu");
        assert_eq!(e["local_mtu"], 4000);
        assert_eq!(e["beyond"], "blackhole");
        assert_eq!(e["path_mtu"], 1504);
        assert_eq!(e["usable_mtu"], 1500);
        assert!(
            f.summary.contains("198.18.0.2: this host's eth0 is below 9000 (it lets out 4000), and beyond it the path black-holes packets above 1504 bytes"),
            "{}",
            f.summary
        );
        let fixes = f.remediation.join("\n");
        assert!(fixes.contains("`ip link set dev eth0 mtu 9000`"), "{fixes}");
        assert!(
            fixes.contains("that alone does not fix the path"),
            "{fixes}"
        );
        assert!(
            fixes.contains("even at this host's 4000 bytes, a switch port or the peer's own interface on the path to 198.18.0.2 silently drops frames above 1504 bytes"),
            "{fixes}"
        );
        assert!(fixes.contains("`ip link set dev eth0 mtu 1500`"), "{fixes}");
        assert!(fixes.contains("`underlay_mtu = 1500`"), "{fixes}");

        // A router beyond instead: too-big, with the hop.
        let mut p = probe("198.18.1.2", Some(1400), Some(1401));
        p.local_limit = Some(4000);
        p.too_big = Some(TooBig {
            from: Some(ip("198.18.0.254")),
            mtu: 1400,
        });
        let f = judge(&facts(vec![peer(
            "198.18.1.2",
            link("eth0", 4000, vec![]),
            p,
        )]));
        let e = &f.evidence["peers"][0];
        assert_eq!(e["beyond"], "too-big");
        assert_eq!(e["reported_by"], "198.18.0.254");
        assert_eq!(e["usable_mtu"], 1400);
        assert!(f.summary.contains("and beyond it the path 198.18.0.254 answered \"fragmentation needed\", path MTU 1400"), "{}", f.summary);

        // When the path carries all the local link lets out, the local link
        // is the only limit.
        let mut p = probe("198.18.0.2", Some(4000), Some(4001));
        p.local_limit = Some(4000);
        let f = judge(&facts(vec![peer(
            "198.18.0.2",
            link("eth0", 4000, vec![]),
            p,
        )]));
        assert!(
            f.evidence["peers"][0].get("beyond").is_none(),
            "{:?}",
            f.evidence
        );
        assert!(!f.remediation.join("\n").contains("silently drops"));
    }

    #[test]
    fn the_peers_own_nic_is_not_blamed_on_a_switch_and_1504_is_not_a_setting() {
        // A veth at 1500 passes 1504 bytes (VLAN_HLEN of slack): the peer's
        // own NIC measured as a black hole above 1504.
        let p = probe("198.18.0.2", Some(1504), Some(1505));
        let f = judge(&facts(vec![peer("198.18.0.2", br_vpc(), p)]));
        assert_eq!(f.status, Status::Fail);
        assert_eq!(f.evidence["peers"][0]["path_mtu"], 1504);
        assert_eq!(f.evidence["peers"][0]["usable_mtu"], 1500);
        assert_eq!(f.evidence["suggested_underlay_mtu"], 1500);
        let fixes = f.remediation.join("\n");
        assert!(!fixes.contains("a switch between"), "{fixes}");
        assert!(
            fixes.contains("a switch port or the peer's own interface"),
            "{fixes}"
        );
        assert!(!fixes.contains("1504`"), "{fixes}");
        assert!(fixes.contains("`underlay_mtu = 1500`"), "{fixes}");
        assert!(fixes.contains("probes of 1504 bytes passed"), "{fixes}");
    }

    #[test]
    fn usable_settings_round_down_only_within_the_vlan_slack() {
        assert_eq!(usable_mtu(1504, false), 1500);
        assert_eq!(usable_mtu(1500, false), 1500);
        assert_eq!(usable_mtu(9004, false), 9000);
        assert_eq!(usable_mtu(1505, false), 1505);
        assert_eq!(usable_mtu(1234, false), 1234);
        // A hop that names its MTU is exact.
        assert_eq!(usable_mtu(1504, true), 1504);
    }

    #[test]
    fn remediation_names_the_config_that_was_read() {
        let mut x = facts(vec![peer(
            "198.18.0.3",
            br_vpc(),
            probe("198.18.0.3", Some(1500), Some(1501)),
        )]);
        x.config_file = "/srv/spx/node.toml".into();
        let fixes = judge(&x).remediation.join("\n");
        assert!(
            fixes.contains("under [network] in /srv/spx/node.toml"),
            "{fixes}"
        );
        assert!(!fixes.contains("/etc/spinifex"), "{fixes}");
    }

    #[test]
    fn a_scoped_link_local_peer_is_named_with_its_interface() {
        let mut p = peer("fe80::2", br_vpc(), probe("fe80::2", None, None));
        p.peer.scope = Some(Scope {
            interface: "br-vpc".into(),
            index: 7,
        });
        let f = judge(&facts(vec![p]));
        assert!(f.summary.contains("(fe80::2%br-vpc)"), "{}", f.summary);
        assert_eq!(f.evidence["peers"][0]["scope"], "br-vpc");
        assert_eq!(f.evidence["peers"][0]["address"], "fe80::2");
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

    #[test]
    fn every_peer_has_a_code_and_the_worst_heads_the_check() {
        let mut too_big = probe("198.18.0.4", Some(1400), Some(1401));
        too_big.too_big = Some(TooBig {
            from: Some(ip("198.18.0.254")),
            mtu: 1400,
        });
        let mut cut = probe("198.18.0.6", Some(1500), Some(1501));
        cut.cut_short = true;
        let f = judge(&facts(vec![
            peer(
                "198.18.0.2",
                br_vpc(),
                probe("198.18.0.2", Some(9000), None),
            ),
            peer(
                "198.18.0.3",
                br_vpc(),
                probe("198.18.0.3", Some(1500), Some(1501)),
            ),
            peer("198.18.0.4", br_vpc(), too_big),
            peer("198.18.0.5", br_vpc(), probe("198.18.0.5", None, Some(68))),
            peer("198.18.0.6", br_vpc(), cut),
        ]));
        assert_eq!(f.kind.code("mtu.path"), "mtu.path/black-hole");
        let codes: Vec<(String, String)> = f
            .findings
            .iter()
            .map(|s| (s.subject.to_string(), s.kind.code("mtu.path")))
            .collect();
        let want = [
            ("198.18.0.2", "mtu.path/ok"),
            ("198.18.0.3", "mtu.path/black-hole"),
            ("198.18.0.4", "mtu.path/too-big"),
            ("198.18.0.5", "mtu.path/unreachable"),
            ("198.18.0.6", "mtu.path/cut-short"),
        ];
        assert_eq!(
            codes,
            want.map(|(a, c)| (a.to_owned(), c.to_owned())).to_vec()
        );
        assert_eq!(
            f.findings[2].summary,
            "198.18.0.254 answered \"fragmentation needed\", path MTU 1400"
        );
        // Without the failing ones, nothing is concluded for two peers: the
        // silent one heads the error.
        let f = judge(&facts(vec![
            peer(
                "198.18.0.2",
                br_vpc(),
                probe("198.18.0.2", Some(9000), None),
            ),
            peer("198.18.0.5", br_vpc(), probe("198.18.0.5", None, Some(68))),
        ]));
        assert_eq!(f.kind.code("mtu.path"), "mtu.path/unreachable");
        let back = f.evidence_as::<PathMtuEvidence>().unwrap();
        assert_eq!(back.peers[1].verdict, PeerVerdict::Unreachable);
        assert_eq!(back.target_source, Some(TargetSource::Config));
    }

    /// The ARP table as the kernel reports it: `gc_thresh3`, what it
    /// holds, and `table_fulls` so far.
    fn arp(gc_thresh3: u32, entries: u32, table_fulls: u64) -> Vec<NeighbourTable> {
        vec![NeighbourTable {
            name: "arp_cache".into(),
            family: crate::facts::neighbours::AF_INET,
            gc_thresh1: 4,
            gc_thresh2: 8,
            gc_thresh3,
            entries: Some(entries),
            table_fulls: Some(table_fulls),
            forced_gc_runs: Some(0),
        }]
    }

    fn entry(addr: &str, state: u16) -> Neighbour {
        Neighbour {
            ifindex: 2,
            address: ip(addr),
            state,
        }
    }

    /// The kernel lab's overflow: gc_thresh3 16, a black hole answered
    /// early, a firewalled peer whose ARP was answered, and three peers
    /// the kernel made no entry for while table_fulls went from 0 to 24.
    fn overflowed() -> PathFacts {
        let mut x = facts(vec![
            peer(
                "198.18.0.3",
                br_vpc(),
                probe("198.18.0.3", Some(1500), Some(1501)),
            ),
            peer("198.18.0.4", br_vpc(), probe("198.18.0.4", None, Some(84))),
            peer(
                "198.18.0.20",
                br_vpc(),
                probe("198.18.0.20", None, Some(84)),
            ),
            peer(
                "198.18.0.21",
                br_vpc(),
                probe("198.18.0.21", None, Some(84)),
            ),
            peer(
                "198.18.0.22",
                br_vpc(),
                probe("198.18.0.22", None, Some(84)),
            ),
        ]);
        x.neighbour = NeighbourReadings {
            before: Some(arp(16, 3, 0)),
            after: Some(arp(16, 16, 24)),
            entries: Some(vec![
                entry("198.18.0.3", crate::facts::neighbours::NUD_REACHABLE),
                entry("198.18.0.4", crate::facts::neighbours::NUD_REACHABLE),
            ]),
            unread: Vec::new(),
        };
        x
    }

    #[test]
    fn a_full_neighbour_table_is_named_never_no_echo_and_a_black_hole_stays_one() {
        let f = judge(&overflowed());
        crate::snapshot::snapshot!("mtu.path", f);
        assert_eq!(f.status, Status::Fail);
        let codes: Vec<String> = f.findings.iter().map(|s| s.kind.code("mtu.path")).collect();
        assert_eq!(
            codes,
            [
                "mtu.path/black-hole",
                "mtu.path/unreachable",
                "mtu.path/neighbour-table-full",
                "mtu.path/neighbour-table-full",
                "mtu.path/neighbour-table-full"
            ]
        );
        let full = &f.evidence["peers"][2];
        assert_eq!(full["verdict"], "neighbour-table-full");
        assert_eq!(
            full["detail"],
            "the kernel dropped the probes: its neighbour table is full (net.ipv4.neigh.default.gc_thresh3 = 16, 5 peers on this segment)"
        );
        assert_eq!(f.evidence["peers"][1]["verdict"], "unreachable");
        assert_eq!(f.evidence["peers"][0]["verdict"], "blackhole");
        assert!(
            f.summary.ends_with("; not concluded: 198.18.0.20, 198.18.0.21, 198.18.0.22 (the kernel dropped the probes: its neighbour table is full (net.ipv4.neigh.default.gc_thresh3 = 16, 5 peers on this segment)), 198.18.0.4 (no echo reply)"),
            "{}",
            f.summary
        );
        assert!(!f.summary.contains("198.18.0.20 (no echo"), "{}", f.summary);
        let fixes = f.remediation.join("\n");
        assert!(
            fixes.contains("the kernel's arp_cache table is full (16 entries of gc_thresh3 16"),
            "{fixes}"
        );
        assert!(
            fixes.contains("`net.ipv4.neigh.default.gc_thresh1 = 128`, `net.ipv4.neigh.default.gc_thresh2 = 512` and `net.ipv4.neigh.default.gc_thresh3 = 1024`"),
            "{fixes}"
        );
        assert!(
            fixes.contains("/etc/sysctl.d/99-spinifex-net.conf"),
            "{fixes}"
        );
        assert!(f.remediation.last().unwrap().starts_with("re-check"));
        let e = f.evidence_as::<PathMtuEvidence>().unwrap();
        assert_eq!(e.neighbour_tables.len(), 1);
        assert_eq!(e.neighbour_tables[0].table_fulls_before, Some(0));
        assert_eq!(e.neighbour_tables[0].table_fulls_after, Some(24));
    }

    #[test]
    fn silence_is_the_peers_unless_the_table_overflowed_and_no_entry_was_made() {
        // The counter did not grow: silence is the peers' own.
        let mut x = overflowed();
        x.neighbour.after = Some(arp(16, 16, 0));
        let f = judge(&x);
        assert!(
            f.evidence["peers"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["verdict"] != "neighbour-table-full"),
            "{:#?}",
            f.evidence
        );
        // It grew, but an entry was made (ARP went out and nobody answered,
        // or it is still being asked): the peer's silence, not the table's.
        for state in [
            crate::facts::neighbours::NUD_INCOMPLETE,
            crate::facts::neighbours::NUD_FAILED,
        ] {
            let mut x = overflowed();
            x.neighbour
                .entries
                .as_mut()
                .unwrap()
                .push(entry("198.18.0.20", state));
            let f = judge(&x);
            assert_eq!(f.evidence["peers"][2]["verdict"], "unreachable", "{state}");
            assert_eq!(f.evidence["peers"][3]["verdict"], "neighbour-table-full");
        }
        // No neighbour reading at all: nothing is blamed on the table.
        let mut x = overflowed();
        x.neighbour = NeighbourReadings::default();
        let f = judge(&x);
        assert_eq!(f.evidence["peers"][2]["verdict"], "unreachable");
        assert!(f.evidence.get("neighbour_tables").is_none());
    }

    #[test]
    fn a_send_refused_for_want_of_a_neighbour_says_the_same() {
        // sendto refused the probes (ENOBUFS on Debian's 6.1 when no entry
        // can be made, EINVAL elsewhere), the counter unread before: the
        // socket's word is enough.
        let mut x = overflowed();
        x.neighbour.before = None;
        for p in &mut x.peers[2..] {
            p.probe.refused_at_send = 2;
            p.probe.other_error =
                Some("sending a 84-byte probe: Invalid argument (os error 22)".into());
        }
        let f = judge(&x);
        assert_eq!(f.evidence["peers"][2]["verdict"], "neighbour-table-full");
        // A reachable peer is never the table's, whatever the socket said.
        let mut x = overflowed();
        x.peers[0].probe.refused_at_send = 5;
        assert_eq!(judge(&x).evidence["peers"][0]["verdict"], "blackhole");
    }

    #[test]
    fn only_dropped_probes_make_an_error_that_names_the_table_first() {
        let mut x = overflowed();
        x.peers.remove(0);
        x.peers.remove(0);
        let f = judge(&x);
        assert_eq!(f.status, Status::Error);
        assert_eq!(f.kind.code("mtu.path"), "mtu.path/neighbour-table-full");
        assert!(
            f.summary.starts_with("3 of 3 peers (198.18.0.20, 198.18.0.21, 198.18.0.22): the kernel dropped the probes: its neighbour table is full (net.ipv4.neigh.default.gc_thresh3 = 16, 3 peers on this segment), so their path MTU is unproven"),
            "{}",
            f.summary
        );
        assert!(
            f.remediation[0].starts_with("the kernel's arp_cache table is full"),
            "{:#?}",
            f.remediation
        );
        // Hundreds of them are counted, not listed.
        let many: Vec<PeerFacts> = (0..300)
            .map(|i| {
                let a = format!("198.18.{}.{}", 1 + i / 250, 2 + i % 250);
                peer(&a, br_vpc(), probe(&a, None, Some(84)))
            })
            .collect();
        let mut x = facts(many);
        x.neighbour = overflowed().neighbour;
        x.neighbour.entries = Some(Vec::new());
        let f = judge(&x);
        assert!(
            f.summary.starts_with(
                "300 of 300 peers (198.18.1.2, 198.18.1.3, 198.18.1.4 and 297 more): "
            ),
            "{}",
            f.summary
        );
        assert!(
            f.summary.contains("300 peers on this segment"),
            "{}",
            f.summary
        );
        assert!(f.summary.len() < 400, "{}", f.summary);
        assert!(
            f.remediation[0]
                .contains("raise its thresholds above the 300 next hops this run needs")
                && f.remediation[0].contains("gc_thresh1 = 512`"),
            "{:#?}",
            f.remediation
        );
    }
}
