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
//!
//! A cell never claims a probe did not happen when the row's node probed
//! an address that may be the column's: results are placed by the config,
//! the reports' own addresses and the node a report's mtu.path named for a
//! peer (config entry, SB `Encap` chassis); what stays unplaced is shown by
//! address toward every node whose addresses this run does not know. A
//! node that did not answer has no failing cell: its side is unknown.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::checks::mtu_path::{PathMtuEvidence, PeerReport, PeerVerdict};
use crate::cluster::{and_list, pair, ClusterFacts};
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
    /// Results for addresses no config, report or SB `Encap` row places,
    /// by prober, with the nodes each may be (those whose addresses this
    /// run does not know).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unplaced: Vec<Unplaced>,
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
         probe round. Peer addresses are matched to nodes by the config's host/advertise, \
         the addresses each node reports as its own, and the node a report's mtu.path \
         named for a peer (its config entry, or the SB Encap row whose chassis is that \
         node, as Spinifex names chassis). A probe of an address nothing places is shown \
         by address as what may be a node that did not answer, never as a probe that \
         did not happen; and what was measured toward a node that did not answer is \
         shown but never judged a fail, since its own side is unknown.\n\
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

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    crate::check::cluster_check!(judge);
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

/// A result a node's mtu.path has for an address no config, report or SB
/// `Encap` row places, and the nodes it may be (those that did not answer,
/// whose own addresses are therefore unknown).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unplaced {
    pub from: String,
    pub address: IpAddr,
    pub verdict: CellVerdict,
    pub path_mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_be: Vec<String>,
}

impl Unplaced {
    /// `198.18.0.4 (ok at 9000)`.
    fn shown(&self) -> String {
        format!(
            "{} ({})",
            self.address,
            outcome(self.verdict, self.path_mtu)
        )
    }
}

/// `ok at 9000`, `blackhole at 1500`, `unreachable`.
fn outcome(v: CellVerdict, mtu: Option<u32>) -> String {
    match mtu {
        Some(m) if v.measured() => format!("{} at {m}", v.as_str()),
        _ => v.as_str().to_owned(),
    }
}

/// Why a node's own addresses are unknown to this run, when they are: it
/// did not answer, or its report names none.
fn addresses_unknown(n: &crate::cluster::NodeAnswer) -> Option<String> {
    match (&n.report, n.typed()) {
        (Err(e), _) => Some(format!("{} did not answer ({})", n.name, e.kind.as_str())),
        (Ok(_), Some(r)) if !r.addresses.is_empty() => None,
        (Ok(_), _) => Some(format!("{}'s report names no addresses", n.name)),
    }
}

/// The matrix, every ordered pair of selected nodes, rows in node order.
pub fn matrix(facts: &ClusterFacts) -> Vec<Cell> {
    placed(facts).0
}

/// The matrix, and each row's results for addresses nobody is known to
/// own. A result is placed in column `to` when the address is `to`'s by the
/// config (`host`/`advertise`), by `to`'s own report, or by the name an
/// answering node's mtu.path gave it (its config entry, or the SB `Encap`
/// row of `to`'s chassis). A cell with nothing placed is "not probed" only
/// when `to`'s addresses are known and none was probed; when they are not
/// (it did not answer), the row's unplaced results may be it, and the cell
/// says so, by address. A failure toward a node that did not answer is
/// shown but not judged: its own side is unknown.
fn placed(facts: &ClusterFacts) -> (Vec<Cell>, Vec<Unplaced>) {
    let book = facts.placement_book();
    let unknown: BTreeMap<&str, String> = facts
        .nodes
        .iter()
        .filter_map(|n| Some((n.name.as_str(), addresses_unknown(n)?)))
        .collect();
    let mut cells = Vec::new();
    let mut unplaced = Vec::new();
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
        // Silence in a round the deadline cut short proves nothing (mtu.path
        // then errors); a hop's answer or a local limit does.
        let verdict_of = |p: &PeerReport| {
            let v = CellVerdict::from_peer(p.verdict);
            if status == Some(Status::Error)
                && matches!(v, CellVerdict::BlackHole | CellVerdict::Unreachable)
            {
                CellVerdict::NotMeasured
            } else {
                v
            }
        };
        // Results no one is known to own, and who they may be.
        let mine: Vec<Unplaced> = peers
            .iter()
            .filter(|p| book.claimants(p.address).is_empty())
            .map(|p| Unplaced {
                from: from.name.clone(),
                address: p.address,
                // Its own outcome: silence is "unreachable" unless the
                // deadline cut it short.
                verdict: match CellVerdict::from_peer(p.verdict) {
                    CellVerdict::BlackHole | CellVerdict::Unreachable if p.cut_short => {
                        CellVerdict::NotMeasured
                    }
                    v => v,
                },
                path_mtu: p.path_mtu,
                may_be: facts
                    .nodes
                    .iter()
                    .filter(|n| n.name != from.name && unknown.contains_key(n.name.as_str()))
                    .map(|n| n.name.clone())
                    .collect(),
            })
            .collect();
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
                let mut found: Option<&PeerReport> = None;
                for p in &peers {
                    if book.owner(p.address) != Some(to.name.as_str()) {
                        continue;
                    }
                    let v = verdict_of(p);
                    let mtu = p.path_mtu;
                    if found.is_none() || v.rank() > cell.verdict.rank() {
                        cell.verdict = v;
                        cell.path_mtu = mtu;
                        cell.path_mtu_inexact = p.path_mtu_inexact;
                        cell.detail = p.detail.clone();
                        found = Some(p);
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
                    found = found.or(Some(p));
                }
                let silent = match &to.report {
                    Err(e) => Some(e.kind.as_str()),
                    Ok(_) => None,
                };
                match (found, silent) {
                    // What was measured toward a node that did not answer
                    // is shown, never judged: its own side is unknown.
                    (Some(p), Some(kind)) if cell.verdict.fails() => {
                        cell.detail = Some(format!(
                            "{} measured {} toward {} ({}'s address), but {} did not answer ({kind}), so the path is not judged",
                            from.name,
                            outcome(cell.verdict, cell.path_mtu),
                            p.address,
                            to.name,
                            to.name
                        ));
                        cell.verdict = CellVerdict::NotMeasured;
                        cell.path_mtu = None;
                        cell.path_mtu_inexact = false;
                    }
                    (Some(_), _) => {}
                    (None, _) => match unknown.get(to.name.as_str()) {
                        Some(why) if !mine.is_empty() => {
                            let shown: Vec<String> = mine.iter().map(Unplaced::shown).collect();
                            cell.verdict = CellVerdict::NotMeasured;
                            cell.detail = Some(format!(
                                "{why}; {} probed {}, which no config, report or SB Encap row places: it may be {}",
                                from.name,
                                and_list(&shown),
                                to.name
                            ));
                        }
                        _ => {
                            cell.verdict = CellVerdict::NotProbed;
                            cell.detail = Some(format!(
                                "{} did not probe {} (no address of it among its peers)",
                                from.name, to.name
                            ));
                        }
                    },
                }
            }
            cells.push(cell);
        }
        unplaced.extend(mine);
    }
    (cells, unplaced)
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
    let (cells, unplaced) = placed(facts);
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
            unplaced: unplaced.clone(),
        })
        .subjects(subjects.clone())
    };
    // What was probed that nobody is known to own, by address, when it may
    // be a node this run could not see.
    let unplaced_text = unplaced_summary(&unplaced);

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
        summary.push_str(&unplaced_text);
        if let Some(l) = largest {
            fixes.push(format!(
                "or stay at what every pair carries today: `underlay_mtu = {l}` under [network] on every node (and `ip link set dev <dev> mtu {l}` on each node's NIC and bridge)"
            ));
        }
        let kind = most_severe(kinds.iter().copied()).unwrap_or(PathMatrixKind::PathTooSmall);
        return evidence(Finding::new(kind, summary).fixes(fixes));
    }

    if !unproven.is_empty() {
        // A node whose addresses are unknown is one reason, whatever each
        // row probed that may be it (listed once, by address, below).
        let unknown: Vec<String> = facts.nodes.iter().filter_map(addresses_unknown).collect();
        let mut by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in &unproven {
            let detail = c
                .detail
                .clone()
                .unwrap_or_else(|| c.verdict.as_str().into());
            let key = unknown
                .iter()
                .find(|why| detail.starts_with(why.as_str()) && detail.contains(" probed "))
                .cloned()
                .unwrap_or(detail);
            by_reason.entry(key).or_default().push(pair(&c.from, &c.to));
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
                "{} of {total} paths were not measured, so the matrix is incomplete: {}; the {} measured carry {target_text}{unplaced_text}",
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

/// `; probed but placed by no config, report or SB Encap row: 198.18.0.4
/// (ok at 9000 from n0 and n1), which may be n3`: the results that may be
/// a node this run could not see, by address; empty when there are none.
fn unplaced_summary(unplaced: &[Unplaced]) -> String {
    let mut by_address: BTreeMap<IpAddr, Vec<&Unplaced>> = BTreeMap::new();
    for u in unplaced.iter().filter(|u| !u.may_be.is_empty()) {
        by_address.entry(u.address).or_default().push(u);
    }
    if by_address.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = by_address
        .iter()
        .map(|(address, results)| {
            let mut by_outcome: BTreeMap<String, Vec<&str>> = BTreeMap::new();
            let mut may_be: Vec<&str> = Vec::new();
            for u in results {
                by_outcome
                    .entry(outcome(u.verdict, u.path_mtu))
                    .or_default()
                    .push(&u.from);
                for m in &u.may_be {
                    if !may_be.contains(&m.as_str()) {
                        may_be.push(m);
                    }
                }
            }
            let seen: Vec<String> = by_outcome
                .iter()
                .map(|(o, from)| format!("{o} from {}", and_list(from)))
                .collect();
            format!(
                "{address} ({}), which may be {}",
                seen.join("; "),
                may_be.join(" or ")
            )
        })
        .collect();
    format!(
        "; probed but placed by no config, report or SB Encap row: {}",
        parts.join(", ")
    )
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
        crate::snapshot::snapshot!("cluster.path-matrix", f);
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
        crate::snapshot::snapshot!("cluster.path-matrix", f);
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
        crate::snapshot::snapshot!("cluster.path-matrix", f);
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        assert_eq!(f.evidence["cut_off"], json!(["n2"]));
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
        crate::snapshot::snapshot!("cluster.path-matrix", f);
        // A switch port at 1500 (no row local-mtu) keeps the switch words.
        let f = judge(&lab(|i, j| {
            if i == 2 || j == 2 {
                ("blackhole", 1500)
            } else {
                ("ok", 9000)
            }
        }));
        crate::snapshot::snapshot!("cluster.path-matrix", f);
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
        crate::snapshot::snapshot!("cluster.path-matrix", f);
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
        crate::snapshot::snapshot!("cluster.path-matrix", out);
        assert_eq!(out.status, Status::Error, "{}", out.summary);
    }

    /// n3 did not answer and nothing but its own (missing) report says
    /// which address is its: what the others probed is shown by address as
    /// what may be n3, never "did not probe".
    #[test]
    fn a_silent_nodes_address_known_nowhere_is_shown_by_address_never_not_probed() {
        let mut f = lab(|_, _| ("ok", 9000));
        f.nodes[3] = unreached("n3", UnreachedKind::ConnectionRefused, "");
        let out = judge(&f);
        crate::snapshot::snapshot!("cluster.path-matrix", out);
        assert_eq!(out.status, Status::Error, "{}", out.summary);
        for c in out.evidence["matrix"].as_array().unwrap() {
            assert_ne!(c["verdict"], "not-probed", "{c}");
            if c["to"] == "n3" {
                assert_eq!(c["verdict"], "not-measured", "{c}");
                let from = c["from"].as_str().unwrap();
                assert_eq!(
                    c["detail"],
                    format!("n3 did not answer (connection refused); {from} probed 198.18.0.4 (ok at 9000), which no config, report or SB Encap row places: it may be n3"),
                );
            }
        }
        assert_eq!(
            out.summary,
            "6 of 12 paths were not measured, so the matrix is incomplete: n3 did not answer (connection refused) (6 pairs); the 6 measured carry 9000 bytes; probed but placed by no config, report or SB Encap row: 198.18.0.4 (ok at 9000 from n0, n1 and n2), which may be n3"
        );
        let unplaced = out.evidence["unplaced"].as_array().unwrap();
        assert_eq!(unplaced.len(), 3, "{unplaced:?}");
        assert_eq!(
            unplaced[0],
            json!({"from": "n0", "address": "198.18.0.4", "verdict": "ok", "path_mtu": 9000, "may_be": ["n3"]})
        );

        // A node that answered, with its addresses, was simply not probed.
        let mut f = lab(|_, _| ("ok", 9000));
        let peers = f.nodes[0].report.clone().unwrap()["checks"][0]["evidence"]["peers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["address"] != addr(3))
            .cloned()
            .collect::<Vec<_>>();
        let mut doc = f.nodes[0].report.clone().unwrap();
        doc["checks"][0]["evidence"]["peers"] = json!(peers);
        f.nodes[0] = answer("n0", doc);
        let out = judge(&f);
        crate::snapshot::snapshot!("cluster.path-matrix", out);
        let c = out.evidence["matrix"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["from"] == "n0" && c["to"] == "n3")
            .unwrap()
            .clone();
        assert_eq!(c["verdict"], "not-probed", "{c}");
    }

    /// Where an answering node's mtu.path named the address (its config
    /// entry, or the SB Encap row of n3's chassis), the results toward the
    /// silent n3 are placed: measured, and a failure among them shown but
    /// never judged a fail.
    #[test]
    fn a_silent_nodes_address_named_by_a_report_places_the_results_but_never_fails_them() {
        // Every path to n3 black-holes at 1500.
        let narrow_to_n3 = || {
            lab(|_, j| {
                if j == 3 {
                    ("blackhole", 1500)
                } else {
                    ("ok", 9000)
                }
            })
        };
        let mut f = narrow_to_n3();
        f.nodes[3] = unreached("n3", UnreachedKind::ConnectionRefused, "");
        let mut doc = f.nodes[1].report.clone().unwrap();
        for p in doc["checks"][0]["evidence"]["peers"]
            .as_array_mut()
            .unwrap()
        {
            if p["address"] == addr(3) {
                p["node"] = json!("n3");
                p["source"] = json!("ovn-sb");
            }
        }
        f.nodes[1] = answer("n1", doc);
        let out = judge(&f);
        crate::snapshot::snapshot!("cluster.path-matrix", out);
        assert_eq!(out.status, Status::Error, "never a fail: {}", out.summary);
        assert!(out.evidence.get("unplaced").is_none(), "{:?}", out.evidence);
        for c in out.evidence["matrix"].as_array().unwrap() {
            if c["to"] != "n3" {
                continue;
            }
            assert_eq!(c["verdict"], "not-measured", "{c}");
            let from = c["from"].as_str().unwrap();
            assert_eq!(
                c["detail"],
                format!("{from} measured blackhole at 1500 toward 198.18.0.4 (n3's address), but n3 did not answer (connection refused), so the path is not judged")
            );
        }
        // The same by the config's advertise.
        let mut f = narrow_to_n3();
        f.nodes[3] = unreached("n3", UnreachedKind::TimedOut, "");
        f.config_addresses
            .insert("n3".into(), vec![addr(3).parse().unwrap()]);
        let out = judge(&f);
        crate::snapshot::snapshot!("cluster.path-matrix", out);
        assert_eq!(out.status, Status::Error, "{}", out.summary);
    }

    #[test]
    fn not_selected_skips() {
        let mut f = lab(|_, _| ("ok", 9000));
        f.node_checks.clear();
        assert_eq!(judge(&f).status, Status::Skip);
    }
}
