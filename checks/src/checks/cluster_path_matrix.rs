//! `cluster.path-matrix`: the N×N matrix of path MTU between the nodes,
//! from every node's own `mtu.path` evidence.
//!
//! Every node probes all its peers at once and all nodes run at once, so
//! the matrix costs one probe round, not N. A path that does not carry the
//! target is named as a pair (`a->b`, or `a<->b` when both directions fail);
//! a node every path to and from which fails is named as the place to look
//! (its link or its switch port); an asymmetric pair (a->b carries what b->a
//! does not) is flagged on its own. The evidence gives the largest MTU every
//! pair carries: the highest `underlay_mtu` the cluster can take today.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared, Scope};
use crate::checks::mtu_path::{PathMtuEvidence, PeerVerdict};
use crate::cluster::{self, and_list, pair, ClusterFacts};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::finding::{Finding, SkipReason, Status, Subject};
use crate::kind::most_severe;
use crate::spinifex;

pub struct ClusterPathMatrix;

crate::kinds! {
    /// What `cluster.path-matrix` can say, per ordered pair of nodes and for the check.
    pub enum PathMatrixKind for "cluster.path-matrix" {
        /// Every pair of nodes carries the target MTU, both ways.
        Ok = pass("ok"),
        /// Every path to and from one node fails: look at its link and its switch port first.
        CutOff = fail("cut-off"),
        /// One direction of a pair carries the target and the other does not: a one-way limit (a firewall rule on ICMP size, one member of a LAG, a policy route).
        Asymmetric = fail("asymmetric"),
        /// A path between two nodes does not carry the target (blackhole, too-big or local-mtu, as the row's node measured it).
        PathTooSmall = fail("path-too-small"),
        /// A pair was not measured (a node that did not answer, a peer that answered no echo, a node whose peers did not include the other): the matrix is incomplete.
        NotMeasured = error("not-measured"),
    }
}

static DECLARED: Declared = Declared::of::<PathMatrixKind, PathMatrixEvidence>();

/// The matrix, what fails in it, and the largest MTU every pair carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathMatrixEvidence {
    pub nodes: Vec<String>,
    /// The target each row's node probed for.
    pub target_mtu: BTreeMap<String, u32>,
    pub matrix: Vec<Cell>,
    /// `from->to` of every cell that does not carry the target.
    pub failing: Vec<String>,
    pub cut_off: Vec<String>,
    pub asymmetric: Vec<String>,
    pub largest_common_mtu: Option<u32>,
    /// True when the lowest pair was measured to the byte.
    pub largest_common_mtu_exact: bool,
}

impl Evidence for PathMatrixEvidence {}

impl Check for ClusterPathMatrix {
    fn id(&self) -> &'static str {
        "cluster.path-matrix"
    }

    fn title(&self) -> &'static str {
        "Every node carries the target MTU to every other node, both ways"
    }

    fn explain(&self) -> &'static str {
        "Builds the N×N matrix of path MTU (rows from, columns to) from every node's own \
         mtu.path evidence: each node probes all its peers at once with DF echo requests \
         that exactly fill the target, and all nodes run at once, so the matrix costs one \
         probe round. Peer addresses are matched to nodes by the config's host/advertise \
         and the addresses each node reports as its own.\n\
         \n\
         Fails on any pair that does not carry the target (blackhole, too-big, local-mtu), \
         naming the pairs (a<->b when both directions fail) and any node every path to and \
         from which fails (look at its link and its switch port first; when every probe \
         from it stopped at its own link, local-mtu, the fix is its own mtu.path's \
         command for that link, not a switch port). An asymmetric pair \
         (a->b carries the target, b->a does not) is flagged on its own: something limits \
         one direction only (a firewall rule, one member of a LAG, a policy route). A pair \
         that was not measured (a node that did not answer, a peer that answered no echo, \
         a node whose peer list did not include the other) makes the check inconclusive \
         unless another pair fails. Skips when mtu.path was not selected. The evidence \
         gives the largest MTU every pair carries: the highest underlay_mtu the cluster \
         can take today.\n\
         \n\
         Why: jumbo frames are a cluster-wide change. One switch port at 1500 black-holes \
         every large frame between its node and all the others, and no node alone sees \
         which port it is.\n\
         \n\
         Fix: configure the ports named for the target, or keep underlay_mtu at the \
         largest MTU every pair carries."
    }

    fn scope(&self) -> Scope {
        Scope::Cluster
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, _ctx: &Ctx) -> Finding {
        cluster::outside_cluster_run()
    }
}

/// One cell of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellVerdict {
    Ok,
    #[serde(rename = "blackhole")]
    BlackHole,
    TooBig,
    LocalMtu,
    /// The peer answered no echo request at all.
    Unreachable,
    /// The row's node did not probe this one (not among its peers).
    NotProbed,
    /// The row's node has no mtu.path result to read, or it was cut short.
    NotMeasured,
}

impl CellVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            CellVerdict::Ok => "ok",
            CellVerdict::BlackHole => "blackhole",
            CellVerdict::TooBig => "too-big",
            CellVerdict::LocalMtu => "local-mtu",
            CellVerdict::Unreachable => "unreachable",
            CellVerdict::NotProbed => "not-probed",
            CellVerdict::NotMeasured => "not-measured",
        }
    }

    /// The path does not carry the target.
    pub fn fails(self) -> bool {
        matches!(
            self,
            CellVerdict::BlackHole | CellVerdict::TooBig | CellVerdict::LocalMtu
        )
    }

    /// A conclusion about the path (ok or a failure).
    pub fn measured(self) -> bool {
        self == CellVerdict::Ok || self.fails()
    }

    fn rank(self) -> u8 {
        match self {
            CellVerdict::Ok => 0,
            CellVerdict::NotProbed => 1,
            CellVerdict::NotMeasured => 2,
            CellVerdict::Unreachable => 3,
            CellVerdict::BlackHole => 4,
            CellVerdict::TooBig => 5,
            CellVerdict::LocalMtu => 6,
        }
    }

    fn from_peer(verdict: PeerVerdict) -> CellVerdict {
        match verdict {
            PeerVerdict::Ok => CellVerdict::Ok,
            PeerVerdict::BlackHole => CellVerdict::BlackHole,
            PeerVerdict::TooBig => CellVerdict::TooBig,
            PeerVerdict::LocalMtu => CellVerdict::LocalMtu,
            PeerVerdict::Unreachable => CellVerdict::Unreachable,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub from: String,
    pub to: String,
    pub verdict: CellVerdict,
    /// The measured path MTU (for ok: the target, the largest size probed).
    pub path_mtu: Option<u32>,
    /// The row node's mtu.path could only prove `path_mtu` passes (lost
    /// probes left a gap above it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub path_mtu_inexact: bool,
    /// The target the row's node probed for.
    #[serde(skip)]
    pub target: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The matrix, every ordered pair of selected nodes, rows in node order.
pub fn matrix(facts: &ClusterFacts) -> Vec<Cell> {
    let book = facts.address_book();
    let mut cells = Vec::new();
    for from in &facts.nodes {
        let path = from.check("mtu.path");
        let evidence: Option<PathMtuEvidence> = path.and_then(|c| c.evidence_as());
        let target = evidence.as_ref().map(|e| e.target_mtu);
        let peers = evidence.map(|e| e.peers).unwrap_or_default();
        let status = path.map(|c| c.status);
        let why_none = match (&from.report, path) {
            (Err(e), _) => Some(format!(
                "{} did not answer ({})",
                from.name,
                e.kind.as_str()
            )),
            (Ok(_), None) => Some(format!("{}'s report has no mtu.path", from.name)),
            (Ok(_), Some(c)) if peers.is_empty() => {
                Some(format!("{}'s mtu.path: {}", from.name, c.summary))
            }
            _ => None,
        };
        for to in &facts.nodes {
            if to.name == from.name {
                continue;
            }
            let mut cell = Cell {
                from: from.name.clone(),
                to: to.name.clone(),
                verdict: CellVerdict::NotMeasured,
                path_mtu: None,
                path_mtu_inexact: false,
                target,
                detail: why_none.clone(),
            };
            if why_none.is_none() {
                let mut found = false;
                for p in &peers {
                    if book.owner(p.address) != Some(to.name.as_str()) {
                        continue;
                    }
                    let mut v = CellVerdict::from_peer(p.verdict);
                    // Silence in a round the deadline cut short proves nothing
                    // (mtu.path then errors); a hop's answer or a local limit does.
                    if status == Some(Status::Error)
                        && matches!(v, CellVerdict::BlackHole | CellVerdict::Unreachable)
                    {
                        v = CellVerdict::NotMeasured;
                    }
                    let mtu = p.path_mtu;
                    if !found || v.rank() > cell.verdict.rank() {
                        cell.verdict = v;
                        cell.path_mtu = mtu;
                        cell.path_mtu_inexact = p.path_mtu_inexact;
                        cell.detail = p.detail.clone();
                    } else if v == cell.verdict {
                        cell.path_mtu = match (cell.path_mtu, mtu) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        };
                    }
                    if v == CellVerdict::NotMeasured {
                        cell.detail = Some(format!(
                            "{}'s mtu.path was cut short by the deadline",
                            from.name
                        ));
                    }
                    found = true;
                }
                if !found {
                    cell.verdict = CellVerdict::NotProbed;
                    cell.detail = Some(format!(
                        "{} did not probe {} (no address of it among its peers)",
                        from.name, to.name
                    ));
                }
            }
            cells.push(cell);
        }
    }
    cells
}

/// `a<->b` for pairs failing both ways, `a->b` otherwise, in matrix order,
/// each with the first cell it stands for.
fn pair_names<'a>(failing: &[&'a Cell]) -> Vec<(String, &'a Cell)> {
    let mut out: Vec<(String, &Cell)> = Vec::new();
    for c in failing {
        let reverse = failing.iter().any(|r| r.from == c.to && r.to == c.from);
        let name = if reverse {
            let (a, b) = if c.from <= c.to {
                (&c.from, &c.to)
            } else {
                (&c.to, &c.from)
            };
            format!("{a}<->{b}")
        } else {
            pair(&c.from, &c.to)
        };
        if !out.iter().any(|(n, _)| *n == name) {
            out.push((name, c));
        }
    }
    out
}

fn names_only(pairs: &[(String, &Cell)]) -> Vec<String> {
    pairs.iter().map(|(n, _)| n.clone()).collect()
}

/// `blackhole at 1500`, `ok at 9000`, `not-probed`.
fn describe(c: &Cell) -> String {
    match c.path_mtu {
        Some(m) if c.verdict.measured() => format!("{} at {m}", c.verdict.as_str()),
        _ => c.verdict.as_str().to_owned(),
    }
}

pub fn judge(facts: &ClusterFacts) -> Finding {
    if !facts.selected("mtu.path") {
        return Finding::skip(SkipReason::NotApplicable(
            "mtu.path was not selected (--check/--skip), so no node measured its paths".into(),
        ));
    }
    let cells = matrix(facts);
    let names = facts.names();
    let targets: BTreeMap<&str, u32> = cells
        .iter()
        .filter_map(|c| Some((c.from.as_str(), c.target?)))
        .collect();
    let mut distinct: Vec<u32> = targets.values().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    let failing: Vec<&Cell> = cells.iter().filter(|c| c.verdict.fails()).collect();
    let unproven: Vec<&Cell> = cells.iter().filter(|c| !c.verdict.measured()).collect();
    let measured: Vec<&Cell> = cells.iter().filter(|c| c.verdict.measured()).collect();

    // Nodes every measured path to and from which fails.
    let cut_off: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| {
            let mine: Vec<&&Cell> = measured
                .iter()
                .filter(|c| c.from == *n || c.to == *n)
                .collect();
            mine.len() >= 2
                && mine.iter().all(|c| c.verdict.fails())
                && mine.iter().any(|c| c.from == *n)
                && mine.iter().any(|c| c.to == *n)
        })
        .collect();

    // Asymmetric: both directions measured, one carries the target and the
    // other does not (two failing directions at slightly different sizes
    // are one problem, not two).
    let mut asymmetric = Vec::new();
    for c in &measured {
        if c.from >= c.to {
            continue;
        }
        let Some(r) = measured.iter().find(|r| r.from == c.to && r.to == c.from) else {
            continue;
        };
        if c.verdict.fails() != r.verdict.fails() {
            let (good, bad) = if c.verdict.fails() { (r, c) } else { (c, r) };
            asymmetric.push(format!(
                "{} carries {}, {} only {} ({})",
                pair(&good.from, &good.to),
                good.path_mtu.map_or("the target".into(), |m| m.to_string()),
                pair(&bad.from, &bad.to),
                bad.path_mtu.map_or("?".into(), |m| m.to_string()),
                bad.verdict.as_str()
            ));
        }
    }

    let lowest = measured
        .iter()
        .filter(|c| c.path_mtu.is_some())
        .min_by_key(|c| c.path_mtu);
    let largest = lowest.and_then(|c| c.path_mtu);
    // Exact when the lowest pair was measured to the byte; a pair that
    // carries the target proves only that much.
    let largest_exact = lowest.is_some_and(|c| c.verdict.fails() && !c.path_mtu_inexact);
    let total = cells.len();
    let target_text = match distinct.as_slice() {
        [t] => format!("{t} bytes"),
        _ => "their targets".to_owned(),
    };
    // One subject per ordered pair: what its row's node measured.
    let mut kinds = Vec::new();
    let subjects: Vec<Subject> = cells
        .iter()
        .map(|c| {
            let kind = cell_kind(c, &cut_off, &cells);
            if kind != PathMatrixKind::Ok {
                kinds.push(kind);
            }
            let text = match (&c.detail, c.verdict.measured()) {
                (Some(d), false) => format!("{}: {d}", describe(c)),
                _ => describe(c),
            };
            Subject::new(kind, pair(&c.from, &c.to), text)
        })
        .collect();
    let evidence = |f: Finding| {
        f.evidence(&PathMatrixEvidence {
            nodes: names.iter().map(|n| (*n).to_owned()).collect(),
            target_mtu: targets.iter().map(|(n, t)| ((*n).to_owned(), *t)).collect(),
            matrix: cells.clone(),
            failing: failing.iter().map(|c| pair(&c.from, &c.to)).collect(),
            cut_off: cut_off.iter().map(|n| (*n).to_owned()).collect(),
            asymmetric: asymmetric.clone(),
            largest_common_mtu: largest,
            largest_common_mtu_exact: largest_exact,
        })
        .subjects(subjects.clone())
    };

    if measured.is_empty() && failing.is_empty() {
        // Nothing measured anywhere: say why from the first node's view.
        let why = unproven
            .first()
            .and_then(|c| c.detail.clone())
            .unwrap_or_else(|| "fewer than two nodes were selected".into());
        let all_skipped = facts
            .answered()
            .filter_map(|n| n.check("mtu.path"))
            .all(|c| c.status == Status::Skip);
        let f = if all_skipped && facts.unreached().next().is_none() && total > 0 {
            Finding::skip(SkipReason::NothingToMeasure(format!(
                "no node measured a path ({why})"
            )))
        } else if total == 0 {
            Finding::skip(SkipReason::NothingToMeasure(why))
        } else {
            Finding::new(
                PathMatrixKind::NotMeasured,
                format!("no path between the nodes was measured ({why})"),
            )
        };
        return evidence(f);
    }

    if !failing.is_empty() {
        let mut parts = Vec::new();
        let mut fixes = Vec::new();
        let mut rest: Vec<&Cell> = failing.clone();
        for k in &cut_off {
            let through: Vec<&Cell> = failing
                .iter()
                .copied()
                .filter(|c| c.from == *k || c.to == *k)
                .collect();
            let mtus: Vec<u32> = through.iter().filter_map(|c| c.path_mtu).collect();
            let lowest = mtus.iter().min().copied();
            let own = own_link(facts, &cells, k);
            let why = match (&own, lowest) {
                (Some(o), Some(m)) => format!(" (carries {m}: {k}'s own link, {})", o.shown()),
                (Some(o), None) => format!(" ({k}'s own link, {})", o.shown()),
                (None, Some(m)) => format!(" (carries {m}: {k}'s link or its switch port)"),
                (None, None) => String::new(),
            };
            parts.push(format!(
                "every path to and from {k}{why}: {}",
                names_only(&pair_names(&through)).join(", ")
            ));
            let switch = format!(
                "configure its switch port (and every port, VLAN and router between it and the others) for {target_text}"
            );
            fixes.push(match &own {
                // Its own report knows the device and the command.
                Some(o) => format!(
                    "{k}: its own link is below {}, so every path to and from it fails: on {k}, {} (as its own mtu.path says){}",
                    o.target,
                    spinifex::set_mtus(&o.names(), o.target, ", then "),
                    if o.beyond {
                        format!("; beyond it the path drops even less, so also {switch}")
                    } else {
                        String::new()
                    }
                ),
                None => format!(
                    "{k}: every path to and from it fails: {switch}, and check {k}'s NIC and bridge (its own mtu.path names the devices)"
                ),
            });
            rest.retain(|c| c.from != *k && c.to != *k);
        }
        if !rest.is_empty() {
            let described: Vec<String> = pair_names(&rest)
                .into_iter()
                .map(|(p, c)| format!("{p} ({})", describe(c)))
                .collect();
            parts.push(described.join(", "));
            fixes.push(format!(
                "configure every switch port, VLAN and router between {} for {target_text}",
                and_list(&names_only(&pair_names(&rest)))
            ));
        }
        let mut summary = format!(
            "{} of {total} paths cannot carry {target_text}: {}",
            failing.len(),
            parts.join("; ")
        );
        if !asymmetric.is_empty() {
            summary.push_str(&format!("; asymmetric: {}", asymmetric.join("; ")));
            fixes.push(
                "an asymmetric pair drops in one direction only what the other carries: look for a one-way limit (a node firewall rule on ICMP size, one member of a LAG, a policy route)".to_owned(),
            );
        }
        if !unproven.is_empty() {
            summary.push_str(&format!("; {} not measured", unproven.len()));
        }
        if let Some(l) = largest {
            fixes.push(format!(
                "or stay at what every pair carries today: `underlay_mtu = {l}` under [network] on every node (and `ip link set dev <dev> mtu {l}` on each node's NIC and bridge)"
            ));
        }
        let kind = most_severe(kinds.iter().copied()).unwrap_or(PathMatrixKind::PathTooSmall);
        return evidence(Finding::new(kind, summary).fixes(fixes));
    }

    if !unproven.is_empty() {
        let mut by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in &unproven {
            by_reason
                .entry(
                    c.detail
                        .clone()
                        .unwrap_or_else(|| c.verdict.as_str().into()),
                )
                .or_default()
                .push(pair(&c.from, &c.to));
        }
        let parts: Vec<String> = by_reason
            .iter()
            .map(|(why, pairs)| {
                if pairs.len() > 4 {
                    format!("{why} ({} pairs)", pairs.len())
                } else {
                    format!("{why} ({})", pairs.join(", "))
                }
            })
            .collect();
        return evidence(Finding::new(
            PathMatrixKind::NotMeasured,
            format!(
                "{} of {total} paths were not measured, so the matrix is incomplete: {}; the {} measured carry {target_text}",
                unproven.len(),
                parts.join("; "),
                measured.len()
            ),
        ));
    }
    evidence(Finding::new(
        PathMatrixKind::Ok,
        format!(
            "all {total} paths between the {} nodes carry {target_text}, both ways",
            names.len()
        ),
    ))
}

/// A node's own link below the target, as its own mtu.path found it.
struct OwnLink {
    /// Its devices below the target (name, MTU), bridge ports first.
    devices: Vec<(String, u32)>,
    target: u32,
    /// Beyond its link the path drops even less (a switch port too).
    beyond: bool,
}

impl OwnLink {
    fn names(&self) -> Vec<&str> {
        self.devices.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// `eth0 at 1500`, `enp1s0 at 1500 and br-vpc at 1500`.
    fn shown(&self) -> String {
        let each: Vec<String> = self
            .devices
            .iter()
            .map(|(n, m)| format!("{n} at {m}"))
            .collect();
        and_list(&each)
    }
}

/// When every measured path from node `k` stops at its own link (every
/// cell of its row local-mtu), the devices its own mtu.path names: then
/// the narrow point is that link, not a switch port.
fn own_link(facts: &ClusterFacts, cells: &[Cell], k: &str) -> Option<OwnLink> {
    let row: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.from == k && c.verdict.measured())
        .collect();
    if row.is_empty() || row.iter().any(|c| c.verdict != CellVerdict::LocalMtu) {
        return None;
    }
    let e: PathMtuEvidence = facts
        .nodes
        .iter()
        .find(|n| n.name == k)?
        .evidence("mtu.path")?;
    let devices = e.own_links_below_target();
    if devices.is_empty() {
        return None;
    }
    Some(OwnLink {
        devices,
        target: e.target_mtu,
        beyond: e
            .peers
            .iter()
            .any(|p| p.verdict == PeerVerdict::LocalMtu && p.beyond.is_some()),
    })
}

/// The kind of one cell: a failing path through a node cut off from all
/// the others is that node's; a failing direction whose reverse carries
/// the target is asymmetric; any other failure is a path too small.
fn cell_kind(c: &Cell, cut_off: &[&str], cells: &[Cell]) -> PathMatrixKind {
    if c.verdict == CellVerdict::Ok {
        return PathMatrixKind::Ok;
    }
    if !c.verdict.measured() {
        return PathMatrixKind::NotMeasured;
    }
    if cut_off.iter().any(|n| *n == c.from || *n == c.to) {
        return PathMatrixKind::CutOff;
    }
    let reverse_carries = cells
        .iter()
        .any(|r| r.from == c.to && r.to == c.from && r.verdict == CellVerdict::Ok);
    if reverse_carries {
        PathMatrixKind::Asymmetric
    } else {
        PathMatrixKind::PathTooSmall
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testing::*;
    use crate::cluster::{NodeAnswer, UnreachedKind};
    use crate::finding::Status;
    use serde_json::{json, Value};

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: &ClusterFacts) -> Finding {
        crate::schema_check::valid("cluster.path-matrix", super::judge(facts))
    }

    const NAMES: [&str; 4] = ["n0", "n1", "n2", "n3"];

    fn addr(i: usize) -> String {
        format!("198.18.0.{}", i + 1)
    }

    /// Node `i`'s report with mtu.path peers: `verdict(to)` per other node.
    fn node(i: usize, verdict: impl Fn(usize) -> (&'static str, u32)) -> NodeAnswer {
        let peers: Vec<Value> = (0..NAMES.len())
            .filter(|j| *j != i)
            .map(|j| {
                let (v, m) = verdict(j);
                json!({"address": addr(j), "source": "config", "verdict": v, "path_mtu": m, "rounds": 1})
            })
            .collect();
        let status = if peers.iter().any(|p| p["verdict"] != "ok") {
            "fail"
        } else {
            "pass"
        };
        let checks = json!([{
            "id": "mtu.path", "title": "t", "status": status, "summary": "s",
            "evidence": {"target_mtu": 9000, "peers": peers}, "remediation": ["x"], "duration_ms": 1
        }]);
        answer(
            NAMES[i],
            report(
                "0.1.0",
                config(NAMES[i], true, 9000, &NAMES),
                &[&addr(i)],
                checks,
            ),
        )
    }

    fn lab(f: impl Fn(usize, usize) -> (&'static str, u32)) -> ClusterFacts {
        facts(
            (0..NAMES.len()).map(|i| node(i, |j| f(i, j))).collect(),
            &["mtu.path"],
        )
    }

    #[test]
    fn a_healthy_fabric_passes() {
        let f = judge(&lab(|_, _| ("ok", 9000)));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(
            f.summary,
            "all 12 paths between the 4 nodes carry 9000 bytes, both ways"
        );
        assert_eq!(f.evidence["largest_common_mtu"], 9000);
        assert_eq!(f.evidence["largest_common_mtu_exact"], false);
    }

    #[test]
    fn one_port_at_1500_names_exactly_the_pairs_through_it() {
        let f = judge(&lab(|i, j| {
            if i == 2 || j == 2 {
                ("blackhole", 1500)
            } else {
                ("ok", 9000)
            }
        }));
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.summary,
            "6 of 12 paths cannot carry 9000 bytes: every path to and from n2 (carries 1500: n2's link or its switch port): n0<->n2, n1<->n2, n2<->n3"
        );
        assert_eq!(f.evidence["cut_off"], json!(["n2"]));
        assert_eq!(
            f.evidence["failing"],
            json!(["n0->n2", "n1->n2", "n2->n0", "n2->n1", "n2->n3", "n3->n2"])
        );
        assert_eq!(f.evidence["largest_common_mtu"], 1500);
        assert_eq!(f.evidence["largest_common_mtu_exact"], true);
        assert!(f
            .remediation
            .iter()
            .any(|r| r.contains("`underlay_mtu = 1500`")));
    }

    /// n2's own eth1 left at 1500 behind a jumbo switch: every probe from
    /// it stops at its link (local-mtu), every probe to it is dropped by
    /// that link (a black hole at 1504).
    fn own_link_lab(beyond: bool) -> ClusterFacts {
        let mut f = lab(|i, j| {
            if i == 2 {
                ("local-mtu", 1500)
            } else if j == 2 {
                ("blackhole", 1504)
            } else {
                ("ok", 9000)
            }
        });
        let checks = f.nodes[2].report.clone().unwrap()["checks"].clone();
        let mut checks = checks;
        let e = &mut checks[0]["evidence"];
        for p in e["peers"].as_array_mut().unwrap() {
            p["interface"] = json!("eth1");
            p["local_mtu"] = json!(1500);
            if beyond {
                p["beyond"] = json!("blackhole");
                p["path_mtu"] = json!(1400);
            }
        }
        e["local"] = json!([{"interface": "eth1", "mtu": 1500, "max_mtu": 9216}]);
        f.nodes[2] = answer(
            "n2",
            report(
                "0.1.0",
                config("n2", true, 9000, &NAMES),
                &[&addr(2)],
                checks,
            ),
        );
        f
    }

    #[test]
    fn a_node_whose_own_link_is_narrow_is_told_to_raise_it() {
        let f = judge(&own_link_lab(false));
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        assert_eq!(f.evidence["cut_off"], json!(["n2"]));
        assert!(
            f.summary.starts_with(
                "6 of 12 paths cannot carry 9000 bytes: every path to and from n2 (carries 1500: n2's own link, eth1 at 1500): n0<->n2, n1<->n2, n2<->n3"
            ),
            "{}",
            f.summary
        );
        assert_eq!(
            f.remediation[0],
            "n2: its own link is below 9000, so every path to and from it fails: on n2, `ip link set dev eth1 mtu 9000` (as its own mtu.path says)"
        );
        assert!(
            !f.remediation.iter().any(|r| r.contains("switch port")),
            "{:#?}",
            f.remediation
        );
        // Beyond its link the path drops even less: raise it first, and the
        // switch port too.
        let f = judge(&own_link_lab(true));
        assert!(
            f.remediation[0].starts_with("n2: its own link is below 9000, so every path to and from it fails: on n2, `ip link set dev eth1 mtu 9000` (as its own mtu.path says); beyond it the path drops even less, so also configure its switch port"),
            "{:#?}",
            f.remediation
        );
        // A switch port at 1500 (no row local-mtu) keeps the switch words.
        let f = judge(&lab(|i, j| {
            if i == 2 || j == 2 {
                ("blackhole", 1500)
            } else {
                ("ok", 9000)
            }
        }));
        assert!(
            f.summary.contains("n2's link or its switch port"),
            "{}",
            f.summary
        );
        assert!(f.remediation[0].contains("configure its switch port"));
    }

    #[test]
    fn an_asymmetric_pair_is_flagged() {
        // n0->n1 carries 9000; n1->n0 black-holes above 1500.
        let f = judge(&lab(|i, j| {
            if i == 1 && j == 0 {
                ("blackhole", 1500)
            } else {
                ("ok", 9000)
            }
        }));
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.summary,
            "1 of 12 paths cannot carry 9000 bytes: n1->n0 (blackhole at 1500); asymmetric: n0->n1 carries 9000, n1->n0 only 1500 (blackhole)"
        );
        assert_eq!(f.evidence["cut_off"], json!([]));
    }

    #[test]
    fn a_silent_node_leaves_the_matrix_incomplete() {
        let mut f = lab(|_, _| ("ok", 9000));
        f.nodes[3] = unreached("n3", UnreachedKind::ConnectionRefused, "");
        f.config_addresses
            .insert("n3".into(), vec![addr(3).parse().unwrap()]);
        let out = judge(&f);
        assert_eq!(out.status, Status::Error, "{}", out.summary);
        assert!(
            out.summary.starts_with("3 of 12 paths were not measured, so the matrix is incomplete: n3 did not answer (connection refused) (n3->n0, n3->n1, n3->n2)"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn not_selected_skips() {
        let mut f = lab(|_, _| ("ok", 9000));
        f.node_checks.clear();
        assert_eq!(judge(&f).status, Status::Skip);
    }
}
