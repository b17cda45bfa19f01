//! `cluster.ipsec` on node reports of the shape every node writes (its
//! `ipsec.policy` and `ipsec.flags` evidence), the two forms of the partial
//! enable among them; proven on real nodes in
//! `tests/kernel_lab/partial_enable.rs`.

use serde_json::{json, Value};

use super::judge;
use crate::checks::ipsec_xfrm::tests::subjects;
use crate::cluster::testing::{answer, config, facts, report, unreached};
use crate::cluster::{ClusterFacts, NodeAnswer, UnreachedKind};
use crate::finding::{Finding, Status};

const NODES: [&str; 3] = ["spx1", "spx2", "spx3"];

fn addr(i: usize) -> String {
    format!("198.18.0.{}", i + 1)
}

/// Every verdict these tests see is also checked against the schema.
fn judged(facts: &ClusterFacts) -> Finding {
    crate::schema_check::valid("cluster.ipsec", judge(facts))
}

/// Node `i`'s report: its ipsec.policy with, per peer, (peer, policies,
/// SAs); its ipsec.flags with NB_Global.ipsec when it read NB.
fn node(i: usize, peers: &[(usize, usize, usize)], ipsec: bool, nb: Option<bool>) -> NodeAnswer {
    let entries: Vec<Value> = peers
        .iter()
        .map(|(p, policies, sas)| {
            let cover = match (policies, sas) {
                (0, _) => "plaintext",
                (_, 0) => "armed",
                _ => "encrypted",
            };
            json!({"peer": addr(*p), "out": cover, "inbound": cover, "policies": policies, "sas": sas})
        })
        .collect();
    let policies: usize = peers.iter().map(|(_, p, _)| *p).sum();
    let sas: usize = peers.iter().map(|(_, _, s)| *s).sum();
    let checks = json!([
        {
            "id": "ipsec.policy", "title": "t", "status": "pass", "summary": "s",
            "evidence": {
                "ipsec_wanted": ipsec, "policy_count": policies, "geneve_policies": policies,
                "sa_count": sas, "peers": entries, "peer_source": "s", "leftover": [],
                "plaintext": [], "dropped": []
            },
            "remediation": [], "duration_ms": 1
        },
        {
            "id": "ipsec.flags", "title": "t", "status": "pass", "summary": "s",
            "evidence": {
                "ipsec_wanted": ipsec, "nb_global_ipsec": nb, "ovs_ipsec_encapsulation": "true",
                "nb_endpoint": null, "ovs_endpoint": null, "nb_endpoints": "",
                "nb_read_by": if nb.is_some() { Value::Null } else { json!("spx1") }
            },
            "remediation": [], "duration_ms": 1
        }
    ]);
    answer(
        NODES[i],
        report(
            "0.1.0",
            config(NODES[i], ipsec, 1500, &NODES),
            &[&addr(i)],
            checks,
        ),
    )
}

fn cluster(nodes: Vec<NodeAnswer>) -> ClusterFacts {
    facts(nodes, &["ipsec.flags", "ipsec.policy"])
}

#[test]
fn form_a_policies_on_one_node_nothing_on_the_others() {
    // As in the incident: spx1's policies demand ESP toward spx2 and spx3,
    // IKE never completed (no SA), and spx2 and spx3 hold nothing.
    let f = judged(&cluster(vec![
        node(0, &[(1, 4, 0), (2, 4, 0)], true, Some(true)),
        node(1, &[], true, None),
        node(2, &[], true, None),
    ]));
    crate::snapshot::snapshot!("cluster.ipsec", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.kind.code("cluster.ipsec"), "cluster.ipsec/black-holed");
    assert_eq!(
        f.summary,
        "spx2 and spx3 hold no SAs or policies while NB_Global ipsec=true and spx1 holds policies for them (IKE never completes): cross-chassis guest traffic to and from them is black-holed"
    );
    assert_eq!(f.evidence["black_holed"], json!(["spx2", "spx3"]));
    assert_eq!(f.evidence["nb_global_ipsec"], true);
    assert_eq!(
        f.evidence["nodes"][0]["policies_for"],
        json!(["spx2", "spx3"])
    );
    assert_eq!(
        subjects(&f),
        [
            "spx2 black-holed: holds no SAs or policies while spx1 holds policies for it (IKE never completes): its geneve with that node is dropped both ways",
            "spx3 black-holed: holds no SAs or policies while spx1 holds policies for it (IKE never completes): its geneve with that node is dropped both ways",
            "spx1 ok: holds IPsec policies or SAs for every node that holds them for it",
        ]
    );
}

#[test]
fn form_b_one_side_lost_its_sas() {
    // spx1 keeps its SAs and policies; spx2 and spx3 lost theirs.
    let f = judged(&cluster(vec![
        node(0, &[(1, 4, 4), (2, 4, 4)], true, Some(true)),
        node(1, &[], true, None),
        node(2, &[], true, None),
    ]));
    crate::snapshot::snapshot!("cluster.ipsec", f);
    assert_eq!(
        f.summary,
        "spx2 and spx3 hold no SAs or policies while NB_Global ipsec=true and spx1 encrypts to them: cross-chassis guest traffic to and from them is black-holed"
    );
    assert_eq!(f.evidence["nodes"][0]["sas_with"], json!(["spx2", "spx3"]));
}

#[test]
fn a_node_down_toward_one_peer_only_is_named_with_it() {
    // spx3 holds IPsec for spx1 but not for spx2, which encrypts to it.
    let f = judged(&cluster(vec![
        node(0, &[(1, 4, 4), (2, 4, 4)], true, Some(true)),
        node(1, &[(0, 4, 4), (2, 4, 4)], true, None),
        node(2, &[(0, 4, 4)], true, None),
    ]));
    crate::snapshot::snapshot!("cluster.ipsec", f);
    assert_eq!(
        f.summary,
        "spx3 holds no SAs or policies for spx2 while NB_Global ipsec=true and spx2 encrypts to it: cross-chassis guest traffic to and from it is black-holed"
    );
}

#[test]
fn every_node_up_or_armed_passes() {
    let f = judged(&cluster(vec![
        node(0, &[(1, 4, 4), (2, 4, 0)], true, Some(true)),
        node(1, &[(0, 4, 4), (2, 4, 0)], true, None),
        node(2, &[(0, 4, 0), (1, 4, 0)], true, None),
    ]));
    crate::snapshot::snapshot!("cluster.ipsec", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(
        f.summary,
        "every one of the 3 nodes holds IPsec policies or SAs for every node that holds them for it"
    );
}

#[test]
fn nothing_anywhere_is_not_up() {
    let f = judged(&cluster(vec![
        node(0, &[], true, Some(false)),
        node(1, &[], true, None),
        node(2, &[], true, None),
    ]));
    crate::snapshot::snapshot!("cluster.ipsec", f);
    assert_eq!(f.kind.code("cluster.ipsec"), "cluster.ipsec/not-up");
    assert_eq!(
        f.summary,
        "no node holds an IPsec policy or SA while IPsec is wanted: geneve between all 3 nodes is plaintext"
    );
}

#[test]
fn not_wanted_disagreeing_unselected_and_unjudged() {
    let f = judged(&cluster(vec![
        node(0, &[], false, Some(false)),
        node(1, &[], false, None),
    ]));
    crate::snapshot::snapshot!("cluster.ipsec", f);
    assert_eq!(f.status, Status::Skip);
    let f = judged(&cluster(vec![
        node(0, &[], true, Some(true)),
        node(1, &[], false, None),
    ]));
    crate::snapshot::snapshot!("cluster.ipsec", f);
    assert_eq!(
        f.kind.code("cluster.ipsec"),
        "cluster.ipsec/ipsec-disagrees"
    );
    let mut unselected = cluster(vec![node(0, &[], true, Some(true))]);
    unselected.node_checks = vec!["ipsec.xfrm".into()];
    assert_eq!(judged(&unselected).status, Status::Skip);
    // A node that did not answer: the others judged, it named as unjudged.
    let f = judged(&cluster(vec![
        node(0, &[(1, 4, 4), (2, 4, 4)], true, Some(true)),
        node(1, &[(0, 4, 4)], true, None),
        unreached("spx3", UnreachedKind::ConnectionRefused, ""),
    ]));
    crate::snapshot::snapshot!("cluster.ipsec", f);
    assert_eq!(f.kind.code("cluster.ipsec"), "cluster.ipsec/not-judged");
}
