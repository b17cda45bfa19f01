//! `sysctl.neigh`: room in the kernel's neighbour table for every node on
//! every plane that carries peers, before a probe or a tunnel needs it.
//!
//! A node holds a neighbour entry for every other node it reaches on a
//! segment it shares with it: the vpc plane's geneve endpoints and the wan
//! plane's addresses. The table is one for the whole kernel (every network
//! namespace's entries together) and holds at most `gc_thresh3`, 1024 by
//! default. The 64-node labs of issue 23 overflowed it while they were
//! built (ENOBUFS on probes and on the agents' connects), and on Debian's
//! 6.1 kernel with `gc_thresh3` lowered to 16 and 118 destinations on one
//! segment, every UDP and raw ICMP `sendto` returned success while the
//! packets were dropped (a socket that sets IP_RECVERR is told ENOBUFS;
//! one that does not, as most, nothing): the only traces were `table_fulls` (103) and
//! "neighbor table overflow!" in the kernel log. So a full table looks
//! like peers that stopped answering. This check compares `gc_thresh3`
//! with what the config implies, so the overflow is caught before a
//! probe, a tunnel or the bus hits it; mtu.path names it when it happens.

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::expect::{neighbour_thresholds, Family};
use crate::facts::links::{self, Link};
use crate::facts::neighbours::{table_of, NeighbourTable, TableSeen, AF_INET, AF_INET6};
use crate::facts::ProbeError;
use crate::finding::Finding;
use crate::kind::most_severe;
use crate::metrics::{MetricDef, MetricType, Series};
use crate::spinifex;
use crate::targets::peers;

pub struct SysctlNeigh;

crate::kinds! {
    /// What `sysctl.neigh` can say.
    pub enum NeighKind for "sysctl.neigh" {
        /// gc_thresh3 of each neighbour table the planes use holds the config's node count × the planes that carry peers.
        Ok = pass("ok"),
        /// gc_thresh3 is below the config's node count × the planes that carry peers: once the table is full the kernel drops what it sends to every next hop it cannot add (probes, geneve, the bus) while sendto still says sent.
        TooSmall = warn("too-small"),
    }
}

static DECLARED: Declared = Declared::of::<NeighKind, NeighEvidence>();

/// A plane that carries peers, as this host has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlaneSeen {
    /// `vpc` or `wan`.
    pub plane: String,
    /// Its Linux bridge on this host, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge: Option<String>,
    /// The family of its addresses: `ipv4` or `ipv6`.
    pub family: Family,
    /// False when it shares its bridge and family with a plane listed
    /// before it (vpc collapsed onto br-wan): its peers are the same
    /// neighbours, counted once.
    pub counted: bool,
}

/// One neighbour table against what the config implies of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableNeed {
    #[serde(flatten)]
    pub seen: TableSeen,
    /// Times it was full when an entry was to be added, since boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_fulls: Option<u64>,
    /// The planes of its family that carry peers, counted.
    pub planes: usize,
    /// node count × planes.
    pub needed: u64,
}

/// What `sysctl.neigh` read and compared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeighEvidence {
    /// `[nodes.*]` in the config.
    pub node_count: usize,
    pub planes: Vec<PlaneSeen>,
    pub tables: Vec<TableNeed>,
    /// Where the vpc plane's family was read, or why IPv4 is assumed.
    pub vpc_family_source: String,
}

static GC_THRESH3: MetricDef = MetricDef {
    name: "spx_doctor_neigh_gc_thresh3_entries",
    help: "gc_thresh3 of the kernel's neighbour table: the most entries it holds.",
    kind: MetricType::Gauge,
    labels: &["table"],
};
static ENTRIES: MetricDef = MetricDef {
    name: "spx_doctor_neigh_entries",
    help: "Entries the kernel's neighbour table holds, every network namespace's together.",
    kind: MetricType::Gauge,
    labels: &["table"],
};
static NEEDED: MetricDef = MetricDef {
    name: "spx_doctor_neigh_needed_entries",
    help: "Neighbour entries the config's nodes need on the planes that carry peers (node count x planes).",
    kind: MetricType::Gauge,
    labels: &["table"],
};
static TABLE_FULLS: MetricDef = MetricDef {
    name: "spx_doctor_neigh_table_fulls_total",
    help:
        "Times the kernel could not add a neighbour entry because the table was full, since boot.",
    kind: MetricType::Counter,
    labels: &["table"],
};

impl Evidence for NeighEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&GC_THRESH3, &ENTRIES, &NEEDED, &TABLE_FULLS];
    fn series(&self) -> Vec<Series> {
        let mut out = Vec::new();
        for t in &self.tables {
            let label = || vec![t.seen.table.clone()];
            out.push(Series::labelled(
                &GC_THRESH3,
                label(),
                f64::from(t.seen.gc_thresh3),
            ));
            if let Some(e) = t.seen.entries {
                out.push(Series::labelled(&ENTRIES, label(), f64::from(e)));
            }
            out.push(Series::labelled(&NEEDED, label(), t.needed as f64));
            if let Some(f) = t.table_fulls {
                out.push(Series::labelled(&TABLE_FULLS, label(), f as f64));
            }
        }
        out
    }
}

/// Everything `judge` needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeighFacts {
    pub node_count: usize,
    pub planes: Vec<PlaneSeen>,
    pub tables: Vec<NeighbourTable>,
    pub vpc_family_source: String,
}

impl Check for SysctlNeigh {
    fn id(&self) -> &'static str {
        "sysctl.neigh"
    }

    fn title(&self) -> &'static str {
        "The kernel's neighbour table has room for every node on every plane"
    }

    fn explain(&self) -> &'static str {
        "Reads the kernel's neighbour tables over rtnetlink (RTM_GETNEIGHTBL: gc_thresh1/2/3, \
         the entries held now, table_fulls since boot) and compares gc_thresh3 of each table \
         the planes use with the config's node count x the planes that carry peers. Planes \
         that carry peers: the vpc plane (the geneve endpoints; its bridge is the first of \
         br-vpc, br-lan, br-wan this host has, as planes collapse vpc -> lan -> wan) and the \
         wan plane ([nodes.*] host/advertise, br-wan). They are one plane when they share a \
         bridge and a family (a one-NIC node), and one when this host has none of those \
         bridges. The vpc plane's family is this node's ovn-encap-ip's (else the SB Encap \
         rows', else IPv4); the wan plane's is the config addresses'. IPv4 planes count \
         against the ARP table (net.ipv4.neigh.default), IPv6 ones against ND's \
         (net.ipv6.neigh.default). Warns when gc_thresh3 is below what they need.\n\
         \n\
         Why: the table is one for the whole kernel, every network namespace's entries \
         together, and holds at most gc_thresh3 (1024 by default). The 64-node labs \
         overflowed it (ENOBUFS on probes and agents' connects); on Debian's 6.1 kernel \
         with gc_thresh3 lowered to 16 and 118 destinations on one segment, every UDP and \
         raw ICMP sendto returned success while the packets were dropped, and the only \
         traces were table_fulls (103) and \"neighbor table overflow!\" in the kernel log. \
         Peers then look as if they stopped answering; mtu.path names it \
         (neighbour-table-full) when it happens during its probes.\n\
         \n\
         Fix: raise gc_thresh1, gc_thresh2 and gc_thresh3 above the need (gc_thresh1 the \
         next power of two above it, twice and four times that, never below the kernel's \
         128/512/1024) in /etc/sysctl.d/99-spinifex-net.conf, the file setup.sh's sysctl \
         stage writes, then `sysctl --system` on the host (the initial network namespace's \
         values apply to every namespace)."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let node_count = match ctx.expectations() {
            Ok(e) => e.node_count,
            Err(skip) => return skip,
        };
        match gather(ctx, node_count) {
            Ok(facts) => judge(&facts),
            Err(e) => e.into(),
        }
    }
}

/// The tables, this host's bridges and the planes' families.
pub fn gather(ctx: &Ctx, node_count: usize) -> Result<NeighFacts, ProbeError> {
    let host = ctx.host();
    let tables = host.neighbour_tables()?;
    let links = host.links()?;
    let vpc = peers::underlay_family(ctx);
    let wan = ctx.config().map_or(Family::Ipv4, config_family);
    Ok(NeighFacts {
        node_count,
        planes: planes(&links, vpc.family, wan),
        tables,
        vpc_family_source: vpc.source,
    })
}

/// The family of the config's `[nodes.*]` addresses (advertise, else
/// host): IPv6 when every one that is an address is, else IPv4 (names
/// included: Spinifex's default).
fn config_family(config: &crate::config::Config) -> Family {
    let addrs: Vec<std::net::IpAddr> = config
        .nodes
        .values()
        .filter_map(|n| n.advertise.as_ref().or(n.host.as_ref()))
        .filter_map(|h| h.trim_matches(['[', ']']).parse().ok())
        .collect();
    if !addrs.is_empty() && addrs.iter().all(std::net::IpAddr::is_ipv6) {
        Family::Ipv6
    } else {
        Family::Ipv4
    }
}

/// The planes that carry peers on this host: vpc on the first of br-vpc,
/// br-lan, br-wan it has, wan on br-wan; the second is not counted when it
/// shares the first's bridge and family (or neither has a bridge).
pub fn planes(links: &[Link], vpc: Family, wan: Family) -> Vec<PlaneSeen> {
    let vpc_bridge = links::underlay_bridge(links).map(|l| l.name.clone());
    let wan_bridge = links::named(links, spinifex::WAN_BRIDGE).map(|l| l.name.clone());
    let vpc = PlaneSeen {
        plane: "vpc".into(),
        bridge: vpc_bridge,
        family: vpc,
        counted: true,
    };
    let counted = vpc.bridge != wan_bridge || vpc.family != wan;
    let wan = PlaneSeen {
        plane: "wan".into(),
        bridge: wan_bridge,
        family: wan,
        counted,
    };
    vec![vpc, wan]
}

fn family_number(f: Family) -> u8 {
    if f.is_ipv6() {
        AF_INET6
    } else {
        AF_INET
    }
}

/// Each table the planes use, with what it needs.
fn needs(facts: &NeighFacts) -> Vec<TableNeed> {
    [Family::Ipv4, Family::Ipv6]
        .into_iter()
        .filter_map(|fam| {
            let planes = facts
                .planes
                .iter()
                .filter(|p| p.counted && p.family == fam)
                .count();
            if planes == 0 {
                return None;
            }
            let t = table_of(&facts.tables, family_number(fam))?;
            Some(TableNeed {
                seen: t.seen()?,
                table_fulls: t.table_fulls,
                planes,
                needed: (facts.node_count as u64).saturating_mul(planes as u64),
            })
        })
        .collect()
}

/// `2 planes (vpc on br-vpc, wan on br-wan)`.
fn planes_text(planes: &[PlaneSeen], family: Family) -> String {
    let mine: Vec<&PlaneSeen> = planes.iter().filter(|p| p.family == family).collect();
    let n = mine.iter().filter(|p| p.counted).count();
    let how = if mine.iter().all(|p| p.bridge.is_none()) {
        "no br-vpc, br-lan or br-wan here: vpc and wan counted as one".to_owned()
    } else {
        let each: Vec<String> = mine
            .iter()
            .map(|p| match (&p.bridge, p.counted) {
                (Some(b), true) => format!("{} on {b}", p.plane),
                (Some(b), false) => format!("{} on {b} too", p.plane),
                (None, _) => format!("{} with no bridge here", p.plane),
            })
            .collect();
        each.join(", ")
    };
    format!("{n} plane{} ({how})", if n == 1 { "" } else { "s" })
}

/// The verdict on the tables against the config.
pub fn judge(facts: &NeighFacts) -> Finding {
    let tables = needs(facts);
    let family = |t: &TableNeed| {
        if t.seen.sysctl.contains("ipv6") {
            Family::Ipv6
        } else {
            Family::Ipv4
        }
    };
    let holds = |t: &TableNeed| {
        t.seen.entries.map_or(String::new(), |e| {
            format!(" ({} holds {e} now)", t.seen.table)
        })
    };
    let short: Vec<&TableNeed> = tables
        .iter()
        .filter(|t| u64::from(t.seen.gc_thresh3) < t.needed)
        .collect();
    let kind = most_severe(tables.iter().map(|t| {
        if u64::from(t.seen.gc_thresh3) < t.needed {
            NeighKind::TooSmall
        } else {
            NeighKind::Ok
        }
    }))
    .unwrap_or(NeighKind::Ok);
    let said: Vec<String> = tables
        .iter()
        .map(|t| {
            let need = format!(
                "the {} neighbour entries the config's {} nodes on {} need",
                t.needed,
                facts.node_count,
                planes_text(&facts.planes, family(t))
            );
            if u64::from(t.seen.gc_thresh3) < t.needed {
                format!(
                    "{}.gc_thresh3 is {}, below {need}: once {} is full{} the kernel drops what it sends to every next hop it cannot add, and sendto still says sent (mtu.path then names neighbour-table-full)",
                    t.seen.sysctl, t.seen.gc_thresh3, t.seen.table, holds(t)
                )
            } else {
                format!(
                    "{}.gc_thresh3 {} holds {need}{}",
                    t.seen.sysctl, t.seen.gc_thresh3, holds(t)
                )
            }
        })
        .collect();
    let summary = if said.is_empty() {
        "no neighbour table of the planes' families was reported by the kernel".to_owned()
    } else {
        said.join("; ")
    };
    let mut finding = Finding::new(kind, summary);
    if !short.is_empty() {
        let mut fixes: Vec<String> = short
            .iter()
            .map(|t| {
                let [add, _] = spinifex::raise_neigh_thresholds(
                    &t.seen.sysctl,
                    neighbour_thresholds(t.needed, t.seen.thresholds()),
                );
                format!(
                    "on the host (the table is the whole kernel's: its initial network namespace's values apply to every namespace), {add}"
                )
            })
            .collect();
        // Loaded once, after every line is in the file.
        fixes.push(spinifex::LOAD_SYSCTLS.to_owned());
        finding = finding.fixes(fixes);
    }
    finding.evidence(&NeighEvidence {
        node_count: facts.node_count,
        planes: facts.planes.clone(),
        tables,
        vpc_family_source: facts.vpc_family_source.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::neighbours::parse_table_dump;
    use crate::facts::neighbours::tests::capture;
    use crate::finding::Status;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: &NeighFacts) -> Finding {
        crate::schema_check::valid("sysctl.neigh", super::judge(facts))
    }

    fn link(index: u32, name: &str, kind: Option<&str>) -> Link {
        Link {
            index,
            name: name.into(),
            mtu: 9000,
            min_mtu: None,
            max_mtu: None,
            master: None,
            kind: kind.map(str::to_owned),
            up: true,
        }
    }

    /// This machine's tables, captured (thresh3 1024, entries 6).
    fn host_tables() -> Vec<NeighbourTable> {
        parse_table_dump(&capture("host-6.18.ntables"))
            .unwrap()
            .items
    }

    fn two_planes() -> Vec<PlaneSeen> {
        let links = [
            link(1, "lo", None),
            link(2, "br-vpc", Some("bridge")),
            link(3, "br-wan", Some("bridge")),
        ];
        planes(&links, Family::Ipv4, Family::Ipv4)
    }

    fn facts(node_count: usize, planes: Vec<PlaneSeen>) -> NeighFacts {
        NeighFacts {
            node_count,
            planes,
            tables: host_tables(),
            vpc_family_source: "ovn-encap-ip 198.18.0.1 at unix:/var/run/openvswitch/db.sock"
                .into(),
        }
    }

    #[test]
    fn a_thousand_nodes_on_two_planes_overflow_the_default_table() {
        // Issue 37: 1,024 nodes, vpc and wan on their own bridges, the
        // kernel's default gc_thresh3 of 1024 (this machine's, captured).
        let f = judge(&facts(1024, two_planes()));
        crate::snapshot::snapshot!("sysctl.neigh", f);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.kind.code("sysctl.neigh"), "sysctl.neigh/too-small");
        assert!(
            f.summary.starts_with("net.ipv4.neigh.default.gc_thresh3 is 1024, below the 2048 neighbour entries the config's 1024 nodes on 2 planes (vpc on br-vpc, wan on br-wan) need"),
            "{}",
            f.summary
        );
        assert_eq!(f.remediation.len(), 2, "{:#?}", f.remediation);
        assert!(
            f.remediation[0].contains("/etc/sysctl.d/99-spinifex-net.conf")
                && f.remediation[0].contains("`net.ipv4.neigh.default.gc_thresh1 = 4096`")
                && f.remediation[0].contains("`net.ipv4.neigh.default.gc_thresh2 = 8192`")
                && f.remediation[0].contains("`net.ipv4.neigh.default.gc_thresh3 = 16384`"),
            "{:#?}",
            f.remediation
        );
        assert_eq!(f.remediation[1], "sysctl --system");
        let e = f.evidence_as::<NeighEvidence>().unwrap();
        assert_eq!(
            e.tables.len(),
            1,
            "no IPv6 plane: the ND table is not judged"
        );
        assert_eq!(e.tables[0].needed, 2048);
        assert_eq!(e.tables[0].seen.entries, Some(6));
    }

    #[test]
    fn a_small_cluster_passes_and_the_limit_is_exact() {
        let f = judge(&facts(3, two_planes()));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert!(f.remediation.is_empty());
        assert!(
            f.summary
                .contains("gc_thresh3 1024 holds the 6 neighbour entries"),
            "{}",
            f.summary
        );
        // 512 nodes x 2 planes is exactly 1024: it fits; 513 does not.
        assert_eq!(judge(&facts(512, two_planes())).status, Status::Pass);
        assert_eq!(judge(&facts(513, two_planes())).status, Status::Warn);
    }

    #[test]
    fn planes_sharing_a_bridge_are_counted_once() {
        // A one-NIC node: no br-vpc or br-lan, vpc collapses onto br-wan.
        let links = [link(1, "lo", None), link(2, "br-wan", Some("bridge"))];
        let p = planes(&links, Family::Ipv4, Family::Ipv4);
        assert_eq!(p[0].bridge.as_deref(), Some("br-wan"));
        assert!(p[0].counted && !p[1].counted);
        let f = judge(&facts(1024, p));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert!(
            f.summary
                .contains("on 1 plane (vpc on br-wan, wan on br-wan too)"),
            "{}",
            f.summary
        );
        // No plane bridge at all: one plane, said so.
        let p = planes(&[link(1, "lo", None)], Family::Ipv4, Family::Ipv4);
        assert_eq!(p.iter().filter(|p| p.counted).count(), 1);
        // br-lan carries vpc when there is no br-vpc: two planes again.
        let links = [
            link(1, "lo", None),
            link(2, "br-lan", Some("bridge")),
            link(3, "br-wan", Some("bridge")),
        ];
        let p = planes(&links, Family::Ipv4, Family::Ipv4);
        assert_eq!(p[0].bridge.as_deref(), Some("br-lan"));
        assert!(p[1].counted);
    }

    #[test]
    fn an_ipv6_vpc_plane_is_judged_against_the_nd_table() {
        let links = [
            link(1, "lo", None),
            link(2, "br-vpc", Some("bridge")),
            link(3, "br-wan", Some("bridge")),
        ];
        let mut x = facts(1500, planes(&links, Family::Ipv6, Family::Ipv4));
        let f = judge(&x);
        let e = f.evidence_as::<NeighEvidence>().unwrap();
        let names: Vec<&str> = e.tables.iter().map(|t| t.seen.table.as_str()).collect();
        assert_eq!(names, ["arp_cache", "ndisc_cache"]);
        assert!(e.tables.iter().all(|t| t.needed == 1500 && t.planes == 1));
        assert_eq!(f.status, Status::Warn);
        let fixes = f.remediation.join("\n");
        assert!(
            fixes.contains("`net.ipv6.neigh.default.gc_thresh3 = 8192`"),
            "{fixes}"
        );
        assert!(
            fixes.contains("`net.ipv4.neigh.default.gc_thresh3 = 8192`"),
            "{fixes}"
        );
        assert_eq!(f.remediation.last().unwrap(), "sysctl --system");
        assert_eq!(
            f.remediation
                .iter()
                .filter(|r| *r == "sysctl --system")
                .count(),
            1
        );
        // Raised by hand above the need: passes, and the fix never lowers.
        for t in &mut x.tables {
            t.gc_thresh3 = 20_000;
        }
        assert_eq!(judge(&x).status, Status::Pass);
    }

    #[test]
    fn the_series_carry_each_table() {
        let f = judge(&facts(1024, two_planes()));
        let e = f.evidence_as::<NeighEvidence>().unwrap();
        let names: Vec<&str> = e.series().iter().map(|s| s.metric.name).collect();
        assert_eq!(
            names,
            [
                "spx_doctor_neigh_gc_thresh3_entries",
                "spx_doctor_neigh_entries",
                "spx_doctor_neigh_needed_entries",
                "spx_doctor_neigh_table_fulls_total"
            ]
        );
    }
}
