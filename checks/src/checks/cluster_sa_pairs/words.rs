//! How `cluster.sa-pairs` says what [`super::analyse`] found: each
//! problem's words and the fixes beside its kind, the headline, and the
//! evidence.

use super::analyse::{Analysis, Pair, PairState, Problem, Stray};
use super::{ReportedSa, SaPairsEvidence, SaPairsKind};
use crate::cluster::{and_list, pair, IpsecGate, Unjudged};
use crate::finding::{Finding, Subject};
use crate::kind::{most_severe, Kinds};

/// The fix for the nodes of the pairs that do not pair up.
pub fn restart_fix(nodes: &str) -> String {
    format!(
        "on {nodes}: `systemctl restart openvswitch-ipsec` (ovs-monitor-ipsec re-initiates every tunnel, both ends get the same new SAs); `swanctl --list-sas` on both ends shows the SPIs"
    )
}

/// The fix for SAs toward no node of the cluster.
pub const FOREIGN_FIX: &str = "SAs toward an address that is no node of the cluster: remove that chassis from OVN (`ovn-sbctl chassis-del CHASSIS`) if the node is gone, then `systemctl restart openvswitch-ipsec` on the nodes holding them";

fn sa_text(s: &ReportedSa) -> String {
    format!("spi {} ({}->{})", s.spi, s.src, s.dst)
}

impl Problem {
    /// What does not pair up between `a` and `b`, in one line.
    fn said(&self, a: &str, b: &str) -> String {
        match self {
            Problem::NoOutbound { pending } => format!(
                "{} has no outbound SA{}",
                pair(a, b),
                if *pending {
                    format!(" (IKE pending on {a})")
                } else {
                    String::new()
                }
            ),
            Problem::NotOnPeer { sa } => {
                format!(
                    "{}: {a}'s outbound {} is not on {b}",
                    pair(a, b),
                    sa_text(sa)
                )
            }
            Problem::AlgorithmMismatch { sa, theirs } => format!(
                "{}: {} is {} on {a} but {} on {b}",
                pair(a, b),
                sa_text(sa),
                sa.algorithm.as_deref().unwrap_or("no encryption"),
                theirs.as_deref().unwrap_or("no encryption")
            ),
            Problem::OnlyInbound { sa } => format!(
                "{}: {b} holds inbound {} that {a} does not have",
                pair(a, b),
                sa_text(sa)
            ),
        }
    }
}

impl Stray {
    /// Its line in the evidence (`foreign` or `unattributed`).
    fn said(&self) -> String {
        match self {
            Stray::Foreign { node, sa, remote } | Stray::Unclaimed { node, sa, remote } => {
                format!("{node} holds {} toward {remote}", sa_text(sa))
            }
            Stray::NeitherEnd { node, sa } => {
                format!("{node} holds {} with neither end its own", sa_text(sa))
            }
        }
    }
}

impl Pair {
    fn subject(&self) -> Subject {
        let (a, b) = (self.a.as_str(), self.b.as_str());
        match &self.state {
            PairState::Armed => Subject::new(
                SaPairsKind::Ok,
                pair(a, b),
                format!("no SA yet on either end: {a} and {b} are armed for each other (made on the first packet)"),
            ),
            PairState::Paired { outbound } => Subject::new(
                SaPairsKind::Ok,
                pair(a, b),
                format!("{outbound} outbound SA(s), each on {b}"),
            ),
            PairState::Problems(problems) => Subject::new(
                most_severe(problems.iter().map(Problem::kind)).unwrap_or(SaPairsKind::Unpaired),
                pair(a, b),
                problems
                    .iter()
                    .map(|p| p.said(a, b))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        }
    }

    fn problems(&self) -> &[Problem] {
        match &self.state {
            PairState::Problems(p) => p,
            _ => &[],
        }
    }
}

/// The finding: the gate's, or the analysis's.
pub fn finding(analysis: Result<Analysis, IpsecGate>) -> Finding {
    match analysis {
        Err(gate) => gate.finding(
            "ipsec.xfrm was not selected (--check/--skip), so no node's SA table was read",
            "IPsec is not wanted on any node that answered, so there are no SAs to pair (ipsec.xfrm checks each holds none)",
            SaPairsKind::IpsecDisagrees,
            "the SAs expected are unknown",
        ),
        Ok(a) => judged(&a),
    }
}

fn judged(a: &Analysis) -> Finding {
    let pairs_checked = a.pairs.len();
    let problems: Vec<String> = a
        .pairs
        .iter()
        .flat_map(|p| p.problems().iter().map(|x| x.said(&p.a, &p.b)))
        .collect();
    let foreign: Vec<String> = a
        .strays
        .iter()
        .filter(|s| matches!(s, Stray::Foreign { .. }))
        .map(Stray::said)
        .collect();
    let unattributed: Vec<String> = a
        .strays
        .iter()
        .filter(|s| !matches!(s, Stray::Foreign { .. }))
        .map(Stray::said)
        .collect();
    let unjudged: Vec<String> = a.unjudged.iter().map(Unjudged::said).collect();
    let mut subjects: Vec<Subject> = a
        .strays
        .iter()
        .filter_map(|s| match s {
            Stray::Foreign { node, sa, remote } => Some(Subject::new(
                SaPairsKind::ForeignPeer,
                node.as_str(),
                format!(
                    "holds {} toward {remote}, which is no node of the cluster",
                    sa_text(sa)
                ),
            )),
            _ => None,
        })
        .collect();
    subjects.extend(a.pairs.iter().map(Pair::subject));
    let evidence = SaPairsEvidence {
        pairs_checked,
        problems: problems.clone(),
        foreign: foreign.clone(),
        unattributed: unattributed.clone(),
        unjudged: unjudged.clone(),
        sas: a.tables.values().flatten().cloned().collect(),
    };

    let f = if !problems.is_empty() || !foreign.is_empty() {
        let mut parts = problems;
        parts.extend(
            foreign
                .iter()
                .map(|f| format!("{f}, which is no node of the cluster")),
        );
        let mut shown: Vec<String> = parts.iter().take(6).cloned().collect();
        if parts.len() > 6 {
            shown.push(format!("and {} more", parts.len() - 6));
        }
        let mut summary = format!("SAs do not pair up: {}", shown.join("; "));
        if !unjudged.is_empty() {
            summary.push_str(&format!("; not judged: {}", unjudged.join("; ")));
        }
        let mut nodes: Vec<&str> = Vec::new();
        for p in a.pairs.iter().filter(|p| !p.problems().is_empty()) {
            for n in [p.a.as_str(), p.b.as_str()] {
                if !nodes.contains(&n) {
                    nodes.push(n);
                }
            }
        }
        let kind = most_severe(subjects.iter().filter_map(|s| SaPairsKind::of(s.kind)))
            .unwrap_or(SaPairsKind::Unpaired);
        let mut f = Finding::new(kind, summary);
        if !nodes.is_empty() {
            f = f.fix(restart_fix(&and_list(&nodes)));
        }
        if !foreign.is_empty() {
            f = f.fix(FOREIGN_FIX);
        }
        f
    } else if !unjudged.is_empty() || !unattributed.is_empty() {
        let mut why = unjudged;
        if !unattributed.is_empty() {
            why.push(format!(
                "{} SAs toward addresses no answering node claims (a node that did not answer or was not selected?): {}",
                unattributed.len(),
                unattributed.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
            ));
        }
        Finding::new(
            SaPairsKind::NotJudged,
            format!(
                "not every pair could be judged: {}; the {pairs_checked} pairs that could pair up",
                why.join("; ")
            ),
        )
    } else {
        Finding::new(
            SaPairsKind::Ok,
            format!(
                "every outbound ESP SA of the {} nodes is on the node it points to, same SPI and algorithm ({pairs_checked} ordered pairs)",
                a.tables.len()
            ),
        )
    };
    f.evidence(&evidence).subjects(subjects)
}
