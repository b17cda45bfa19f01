//! How `cluster.ipsec` says what [`super::analyse`] found.

use std::collections::BTreeMap;

use super::analyse::{Analysis, Down, NodeSide};
use super::{ClusterIpsecEvidence, ClusterIpsecKind, NodeIpsec};
use crate::cluster::and_list;
use crate::finding::{Finding, Subject};

fn they(n: usize) -> &'static str {
    if n == 1 {
        "it"
    } else {
        "them"
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

/// The finding for the nodes' `sides`, as `analysis` judged them.
pub fn finding(
    sides: &BTreeMap<String, NodeSide>,
    analysis: &Analysis,
    nb_global_ipsec: Option<bool>,
    unjudged: Vec<String>,
) -> Finding {
    let evidence = ClusterIpsecEvidence {
        nb_global_ipsec,
        nodes: sides
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
        black_holed: analysis.down.iter().map(|d| d.node.clone()).collect(),
        not_up: analysis.bare.clone(),
        unjudged: unjudged.clone(),
    };
    let flag = match nb_global_ipsec {
        Some(true) => "NB_Global ipsec=true",
        _ => "IPsec is wanted",
    };
    let mut subjects: Vec<Subject> = Vec::new();
    for d in &analysis.down {
        let what = if d.nothing {
            "holds no SAs or policies".to_owned()
        } else {
            let others: Vec<&String> = d.encrypted_by.iter().chain(&d.armed_by).collect();
            format!("holds no SAs or policies for {}", and_list(&others))
        };
        subjects.push(Subject::new(
            ClusterIpsecKind::BlackHoled,
            d.node.clone(),
            format!(
                "{what} while {}: its geneve with {} is dropped both ways",
                expected_by(d, "it"),
                if d.encrypted_by.len() + d.armed_by.len() == 1 {
                    "that node"
                } else {
                    "those nodes"
                }
            ),
        ));
    }
    for n in &analysis.bare {
        subjects.push(Subject::new(
            ClusterIpsecKind::NotUp,
            n.clone(),
            "holds no IPsec policy or SA, and no node expects IPsec with it: its geneve is plaintext both ways",
        ));
    }
    for n in &analysis.up {
        subjects.push(Subject::new(
            ClusterIpsecKind::Ok,
            n.clone(),
            "holds IPsec policies or SAs for every node that holds them for it",
        ));
    }

    let mut statements: Vec<String> = Vec::new();
    // Nodes named together when the same others expect them the same way.
    let mut groups: Vec<(Vec<&Down>, String)> = Vec::new();
    for d in &analysis.down {
        let key = format!(
            "{}|{}|{}",
            d.nothing,
            d.encrypted_by.join(","),
            d.armed_by.join(",")
        );
        match groups.iter_mut().find(|(_, k)| *k == key) {
            Some((g, _)) => g.push(d),
            None => groups.push((vec![d], key)),
        }
    }
    for (group, _) in &groups {
        let names: Vec<&str> = group.iter().map(|d| d.node.as_str()).collect();
        let first = group[0];
        let hold = if names.len() == 1 { "holds" } else { "hold" };
        let what = if first.nothing {
            format!("{hold} no SAs or policies")
        } else {
            let others: Vec<&String> = first.encrypted_by.iter().chain(&first.armed_by).collect();
            format!("{hold} no SAs or policies for {}", and_list(&others))
        };
        statements.push(format!(
            "{} {what} while {flag} and {}: cross-chassis guest traffic to and from {} is black-holed",
            and_list(&names),
            expected_by(first, they(names.len())),
            they(names.len())
        ));
    }
    if analysis.nowhere() {
        statements.push(format!(
            "no node holds an IPsec policy or SA while {flag}: geneve between all {} nodes is plaintext",
            analysis.bare.len()
        ));
    } else if !analysis.bare.is_empty() {
        statements.push(format!(
            "{} {} no IPsec policy or SA while {flag}, and no node expects IPsec with {}: {} geneve is plaintext",
            and_list(&analysis.bare),
            if analysis.bare.len() == 1 { "holds" } else { "hold" },
            they(analysis.bare.len()),
            if analysis.bare.len() == 1 { "its" } else { "their" }
        ));
    }

    let named: Vec<String> = analysis
        .down
        .iter()
        .map(|d| d.node.clone())
        .chain(analysis.bare.iter().cloned())
        .collect();
    let finding = if !statements.is_empty() {
        let kind = if analysis.down.is_empty() {
            ClusterIpsecKind::NotUp
        } else {
            ClusterIpsecKind::BlackHoled
        };
        let mut summary = statements.join("; ");
        if !unjudged.is_empty() {
            summary.push_str(&format!("; not judged: {}", unjudged.join("; ")));
        }
        Finding::new(kind, summary).fixes([
            format!(
                "on {}: `spx doctor --check ipsec` (ipsec.daemon, ipsec.cert and ipsec.policy name what failed in the local setup), then `systemctl restart openvswitch-ipsec`; `ip xfrm policy` must list 4 policies per peer",
                and_list(&named)
            ),
            "to end the outage before that: roll the enable back on every node (`spx doctor --for disable-ipsec` prints the runbook)".to_owned(),
            "then `spx doctor --cluster --check ipsec` must pass".to_owned(),
        ])
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
                sides.len()
            ),
        )
    };
    finding.evidence(&evidence).subjects(subjects)
}
