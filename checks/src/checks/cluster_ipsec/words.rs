//! How `cluster.ipsec` says what [`super::analyse`] found: each problem's
//! words and the fixes beside its kinds (written once), the headline and
//! the evidence.

use super::analyse::{Analysis, Down, Problem};
use super::{ClusterIpsecEvidence, ClusterIpsecKind, NodeIpsec};
use crate::cluster::{and_list, IpsecGate, Unjudged};
use crate::finding::{Finding, Subject};
use crate::kind::most_severe;

/// The fixes for the `nodes` named, black-holed or not up: their local
/// setup first, or the enable rolled back to end the outage.
fn fixes(nodes: &str) -> [String; 3] {
    [
        format!("on {nodes}: `spx doctor --check ipsec` (ipsec.daemon, ipsec.cert and ipsec.policy name what failed in the local setup), then `systemctl restart openvswitch-ipsec`; `ip xfrm policy` must list 4 policies per peer"),
        "to end the outage before that: roll the enable back on every node (`spx doctor --for disable-ipsec` prints the runbook)".to_owned(),
        "then `spx doctor --cluster --check ipsec` must pass".to_owned(),
    ]
}

fn they(n: usize) -> &'static str {
    if n == 1 {
        "it"
    } else {
        "them"
    }
}

/// "holds no SAs or policies" (for the others named, unless it holds none
/// at all), as `hold` says it.
fn holds_none(d: &Down, hold: &str) -> String {
    if d.nothing {
        format!("{hold} no SAs or policies")
    } else {
        let others: Vec<&String> = d.encrypted_by.iter().chain(&d.armed_by).collect();
        format!("{hold} no SAs or policies for {}", and_list(&others))
    }
}

/// "n1 encrypts to them and n4 holds policies for them".
fn expected_by(d: &Down, pronoun: &str) -> String {
    let mut parts = Vec::new();
    if !d.encrypted_by.is_empty() {
        parts.push(format!(
            "{} {} to {pronoun}",
            and_list(&d.encrypted_by),
            if d.encrypted_by.len() == 1 {
                "encrypts"
            } else {
                "encrypt"
            }
        ));
    }
    if !d.armed_by.is_empty() {
        parts.push(format!(
            "{} {} policies for {pronoun} (IKE never completes)",
            and_list(&d.armed_by),
            if d.armed_by.len() == 1 {
                "holds"
            } else {
                "hold"
            }
        ));
    }
    parts.join(" and ")
}

impl Problem {
    fn subject(&self) -> Subject {
        match self {
            Problem::BlackHoled(d) => Subject::new(
                self.kind(),
                d.node.clone(),
                format!(
                    "{} while {}: its geneve with {} is dropped both ways",
                    holds_none(d, "holds"),
                    expected_by(d, "it"),
                    if d.encrypted_by.len() + d.armed_by.len() == 1 {
                        "that node"
                    } else {
                        "those nodes"
                    }
                ),
            ),
            Problem::NotUp { node } => Subject::new(
                self.kind(),
                node.clone(),
                "holds no IPsec policy or SA, and no node expects IPsec with it: its geneve is plaintext both ways",
            ),
        }
    }
}

/// The headline's clauses: the black-holed nodes, named together when
/// the same others expect them the same way, then those not up.
fn statements(a: &Analysis, flag: &str) -> Vec<String> {
    let mut groups: Vec<Vec<&Down>> = Vec::new();
    let mut bare: Vec<&str> = Vec::new();
    for p in &a.problems {
        match p {
            Problem::BlackHoled(d) => {
                let same = |g: &&mut Vec<&Down>| {
                    let first = g[0];
                    (first.nothing, &first.encrypted_by, &first.armed_by)
                        == (d.nothing, &d.encrypted_by, &d.armed_by)
                };
                match groups.iter_mut().find(same) {
                    Some(g) => g.push(d),
                    None => groups.push(vec![d]),
                }
            }
            Problem::NotUp { node } => bare.push(node),
        }
    }
    let mut said: Vec<String> = groups
        .iter()
        .map(|group| {
            let names: Vec<&str> = group.iter().map(|d| d.node.as_str()).collect();
            let hold = if names.len() == 1 { "holds" } else { "hold" };
            format!(
                "{} {} while {flag} and {}: cross-chassis guest traffic to and from {} is black-holed",
                and_list(&names),
                holds_none(group[0], hold),
                expected_by(group[0], they(names.len())),
                they(names.len())
            )
        })
        .collect();
    if a.nowhere() {
        said.push(format!(
            "no node holds an IPsec policy or SA while {flag}: geneve between all {} nodes is plaintext",
            bare.len()
        ));
    } else if !bare.is_empty() {
        said.push(format!(
            "{} {} no IPsec policy or SA while {flag}, and no node expects IPsec with {}: {} geneve is plaintext",
            and_list(&bare),
            if bare.len() == 1 { "holds" } else { "hold" },
            they(bare.len()),
            if bare.len() == 1 { "its" } else { "their" }
        ));
    }
    said
}

/// The finding: the gate's, or the analysis's.
pub fn finding(analysis: Result<Analysis, IpsecGate>) -> Finding {
    match analysis {
        Err(gate) => gate.finding(
            "ipsec.policy was not selected (--check/--skip), so no node's IPsec policies were read",
            "IPsec is not wanted on any node that answered (ipsec.policy names any policy left on each)",
            ClusterIpsecKind::IpsecDisagrees,
            "which nodes should hold IPsec is unknown",
        ),
        Ok(a) => judged(&a),
    }
}

fn judged(a: &Analysis) -> Finding {
    let unjudged: Vec<String> = a.unjudged.iter().map(Unjudged::said).collect();
    let named = |kind: ClusterIpsecKind| -> Vec<String> {
        let of_kind = a.problems.iter().filter(|p| p.kind() == kind);
        of_kind.map(|p| p.node().to_owned()).collect()
    };
    let evidence = ClusterIpsecEvidence {
        nb_global_ipsec: a.nb_global_ipsec,
        nodes: a
            .sides
            .iter()
            .map(|(node, s)| NodeIpsec {
                node: node.clone(),
                geneve_policies: s.geneve_policies,
                sa_count: s.sa_count,
                sas_with: s
                    .holds
                    .iter()
                    .filter(|(_, h)| h.sas > 0)
                    .map(|(n, _)| n.clone())
                    .collect(),
                policies_for: s
                    .holds
                    .iter()
                    .filter(|(_, h)| h.sas == 0 && h.policies > 0)
                    .map(|(n, _)| n.clone())
                    .collect(),
            })
            .collect(),
        black_holed: named(ClusterIpsecKind::BlackHoled),
        not_up: named(ClusterIpsecKind::NotUp),
        unjudged: unjudged.clone(),
    };
    let subjects = a
        .problems
        .iter()
        .map(Problem::subject)
        .chain(a.up.iter().map(|n| {
            Subject::new(
                ClusterIpsecKind::Ok,
                n.clone(),
                "holds IPsec policies or SAs for every node that holds them for it",
            )
        }));
    let flag = match a.nb_global_ipsec {
        Some(true) => "NB_Global ipsec=true",
        _ => "IPsec is wanted",
    };
    let finding = if let Some(kind) = most_severe(a.problems.iter().map(Problem::kind)) {
        let mut summary = statements(a, flag).join("; ");
        if !unjudged.is_empty() {
            summary.push_str(&format!("; not judged: {}", unjudged.join("; ")));
        }
        let named: Vec<&str> = a.problems.iter().map(Problem::node).collect();
        Finding::new(kind, summary).fixes(fixes(&and_list(&named)))
    } else if !unjudged.is_empty() {
        Finding::new(
            ClusterIpsecKind::NotJudged,
            format!(
                "no node judged is black-holed, but not every node was judged: {}",
                unjudged.join("; ")
            ),
        )
    } else {
        Finding::new(
            ClusterIpsecKind::Ok,
            format!(
                "every one of the {} nodes holds IPsec policies or SAs for every node that holds them for it",
                a.sides.len()
            ),
        )
    };
    finding.evidence(&evidence).subjects(subjects)
}
