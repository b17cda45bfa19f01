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

mod analyse;
mod placement;
mod words;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::checks::mtu_path::PeerVerdict;
use crate::cluster::ClusterFacts;
use crate::evidence::Evidence;
use crate::finding::Finding;

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
        /// The row node's kernel dropped its probes toward the other: its neighbour table (gc_thresh3, one for the whole kernel) was full, so the pair was not measured, and that node's own traffic to next hops it cannot add is dropped the same way.
        NeighbourTableFull = error("neighbour-table-full"),
        /// A pair was not measured (a node that did not answer, a peer that answered no echo, a node whose kernel dropped the probes because its neighbour table was full, a node whose peers did not include the other): the matrix is incomplete.
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
    /// The row node's kernel dropped the probes: its neighbour table was
    /// full (mtu.path's `neighbour-table-full`). Never "no echo".
    NeighbourTableFull,
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
            CellVerdict::NeighbourTableFull => "neighbour-table-full",
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
            CellVerdict::NeighbourTableFull => 3,
            CellVerdict::Unreachable => 4,
            CellVerdict::BlackHole => 5,
            CellVerdict::TooBig => 6,
            CellVerdict::LocalMtu => 7,
        }
    }

    fn from_peer(verdict: PeerVerdict) -> CellVerdict {
        match verdict {
            PeerVerdict::Ok => CellVerdict::Ok,
            PeerVerdict::BlackHole => CellVerdict::BlackHole,
            PeerVerdict::TooBig => CellVerdict::TooBig,
            PeerVerdict::LocalMtu => CellVerdict::LocalMtu,
            PeerVerdict::Unreachable => CellVerdict::Unreachable,
            PeerVerdict::NeighbourTableFull => CellVerdict::NeighbourTableFull,
        }
    }
}

/// One cell: a small struct whose node names are interned (every cell of a
/// node shares its one name), so N(N−1) cells cost a few words each, not
/// a JSON object each. It writes the same JSON as it always did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub from: Arc<str>,
    pub to: Arc<str>,
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
    /// Why nothing was measured, or what was: shared by the cells it
    /// explains alike (a row whose node did not answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Arc<str>>,
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

/// The matrix, every ordered pair of selected nodes, rows in node order.
pub fn matrix(facts: &ClusterFacts) -> Vec<Cell> {
    placement::placed(facts).0
}

/// The judgement, and the matrix it judged, held once: the finding's
/// evidence has an empty `matrix` in its place, for the caller to write
/// these cells into (the cluster report writes them there and as its
/// `path_matrix`, from this one list).
#[derive(Debug)]
pub struct Judged {
    pub finding: Finding,
    /// Every ordered pair, rows in node order (empty when mtu.path was not
    /// selected).
    pub matrix: Arc<Vec<Cell>>,
}

/// [`judge`], with the matrix apart from the finding's evidence.
pub fn judged(facts: &ClusterFacts) -> Judged {
    let (finding, cells) = words::finding(analyse::analyse(facts));
    Judged {
        finding,
        matrix: Arc::new(cells),
    }
}

/// Judge the matrix: `analyse` finds, `words` says.
pub fn judge(facts: &ClusterFacts) -> Finding {
    let Judged {
        mut finding,
        matrix,
    } = judged(facts);
    if let Some(slot) = finding.evidence.get_mut("matrix") {
        *slot = serde_json::to_value(&*matrix).unwrap_or_default();
    }
    finding
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::cluster::testing::{answer, config, facts, report, unreached};
    use crate::cluster::{ClusterFacts, NodeAnswer, UnreachedKind};
    use crate::finding::{Finding, Status};

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

    /// The compact matrix (interned names, one list for the finding and
    /// the cluster report) writes the JSON the matrix always wrote, and
    /// the finding keeps `matrix` in its place for it.
    #[test]
    fn the_compact_matrix_writes_the_same_json_in_the_same_place() {
        let f = lab(|i, j| {
            if i == 2 || j == 2 {
                ("blackhole", 1500)
            } else {
                ("ok", 9000)
            }
        });
        let judged = super::judged(&f);
        let keys: Vec<&str> = judged.finding.evidence.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "nodes",
                "target_mtu",
                "matrix",
                "failing",
                "cut_off",
                "asymmetric",
                "largest_common_mtu",
                "largest_common_mtu_exact"
            ]
        );
        assert_eq!(judged.finding.evidence["matrix"], json!([]));
        assert_eq!(*judged.matrix, super::matrix(&f));
        let whole = judge(&f);
        assert_eq!(
            whole.evidence["matrix"],
            serde_json::to_value(&*judged.matrix).unwrap()
        );
        let cells = whole.evidence["matrix"].as_array().unwrap();
        assert_eq!(cells.len(), 12);
        assert_eq!(
            cells[0].to_string(),
            r#"{"from":"n0","to":"n1","verdict":"ok","path_mtu":9000}"#
        );
        assert_eq!(
            cells[1].to_string(),
            r#"{"from":"n0","to":"n2","verdict":"blackhole","path_mtu":1500}"#
        );
        // Every cell of a node shares its one name.
        assert!(std::sync::Arc::ptr_eq(
            &judged.matrix[0].from,
            &judged.matrix[2].from
        ));
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
        let checks = f.nodes[2].report.clone().unwrap().to_value()["checks"].clone();
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
        let peers = f.nodes[0].report.clone().unwrap().to_value()["checks"][0]["evidence"]["peers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["address"] != addr(3))
            .cloned()
            .collect::<Vec<_>>();
        let mut doc = f.nodes[0].report.clone().unwrap().to_value();
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
        let mut doc = f.nodes[1].report.clone().unwrap().to_value();
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

    /// n0's kernel dropped its probes to n2 and n3 (a full neighbour
    /// table) while n0->n1 carries the target; n1 black-holes toward n3.
    fn n0_table_full() -> ClusterFacts {
        const FULL: &str = "the kernel dropped the probes: its neighbour table is full (net.ipv4.neigh.default.gc_thresh3 = 16, 3 peers on this segment)";
        let mut f = lab(|i, j| {
            if (i, j) == (1, 3) {
                ("blackhole", 1500)
            } else {
                ("ok", 9000)
            }
        });
        let peers: Vec<Value> = (1..4)
            .map(|j| {
                if j == 1 {
                    json!({"address": addr(j), "source": "config", "verdict": "ok", "path_mtu": 9000, "rounds": 1})
                } else {
                    json!({"address": addr(j), "source": "config", "verdict": "neighbour-table-full", "path_mtu": null, "rounds": 1, "detail": FULL})
                }
            })
            .collect();
        let checks = json!([{
            "id": "mtu.path", "title": "t", "status": "error", "summary": "s",
            "evidence": {"target_mtu": 9000, "peers": peers}, "remediation": ["x"], "duration_ms": 1
        }]);
        f.nodes[0] = answer(
            NAMES[0],
            report(
                "0.1.0",
                config(NAMES[0], true, 9000, &NAMES),
                &[&addr(0)],
                checks,
            ),
        );
        f
    }

    #[test]
    fn probes_a_full_neighbour_table_dropped_are_its_own_error_cells_never_no_echo() {
        let out = judge(&n0_table_full());
        crate::snapshot::snapshot!("cluster.path-matrix", out);
        // The black hole elsewhere still fails the matrix.
        assert_eq!(out.status, Status::Fail, "{}", out.summary);
        assert_eq!(out.evidence["failing"], json!(["n1->n3"]));
        let cells = out.evidence["matrix"].as_array().unwrap();
        for to in ["n2", "n3"] {
            let c = cells
                .iter()
                .find(|c| c["from"] == "n0" && c["to"] == to)
                .unwrap();
            assert_eq!(c["verdict"], "neighbour-table-full", "{c}");
            assert!(
                c["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with("the kernel dropped the probes: its neighbour table is full"),
                "{c}"
            );
        }
        let codes: Vec<(String, String)> = out
            .findings
            .iter()
            .filter(|s| s.subject.starts_with("n0->"))
            .map(|s| (s.subject.to_string(), s.kind.code("cluster.path-matrix")))
            .collect();
        assert_eq!(
            codes,
            [
                ("n0->n1".to_owned(), "cluster.path-matrix/ok".to_owned()),
                (
                    "n0->n2".to_owned(),
                    "cluster.path-matrix/neighbour-table-full".to_owned()
                ),
                (
                    "n0->n3".to_owned(),
                    "cluster.path-matrix/neighbour-table-full".to_owned()
                ),
            ]
        );
        assert!(
            !out.findings.iter().any(|s| s.summary.contains("no echo")),
            "{:#?}",
            out.findings
        );
        assert!(
            out.remediation.iter().any(|r| r.starts_with(
                "n0: its kernel's neighbour table is full, so it dropped its probes toward n2 and n3"
            )),
            "{:#?}",
            out.remediation
        );
        // Without the black hole: the check's error is the table's.
        let mut f = n0_table_full();
        f.nodes[1] = node(1, |_| ("ok", 9000));
        let out = judge(&f);
        assert_eq!(out.status, Status::Error, "{}", out.summary);
        assert_eq!(
            out.kind.code("cluster.path-matrix"),
            "cluster.path-matrix/neighbour-table-full"
        );
        assert!(
            out.summary.contains("the kernel dropped the probes: its neighbour table is full (net.ipv4.neigh.default.gc_thresh3 = 16, 3 peers on this segment) (n0->n2, n0->n3)"),
            "{}",
            out.summary
        );
    }
}
