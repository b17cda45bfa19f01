//! `ipsec.policy` judged on the kernel's own answers: the policy and SA
//! dumps captured in the kernel lab on real strongSwan configured by
//! ovs-monitor-ipsec (`checks/testdata/xfrm/`, provenance in each file),
//! edited where a situation strongSwan does not make is judged (an SA
//! without its policy, a policy whose SA is gone). The partial enable and
//! the plaintext case are proven live in
//! `tests/kernel_lab/partial_enable.rs`.

use super::{effective, judge, satisfies, IpsecPolicyEvidence, PolicyFacts};
use crate::checks::ipsec_xfrm::tests::{ip, lab_peers, lab_policies, lab_states, subjects};
use crate::checks::ipsec_xfrm::PeerView;
use crate::evidence::Evidence;
use crate::facts::xfrm::{PolicyDir, Port, SecurityAssociation, XfrmPolicy, IPPROTO_UDP};
use crate::finding::{Finding, Status};

fn facts(
    me: u8,
    wanted: bool,
    states: Vec<SecurityAssociation>,
    policies: Vec<XfrmPolicy>,
) -> PolicyFacts {
    PolicyFacts {
        ipsec_wanted: wanted,
        node_count: 3,
        states,
        policies,
        peers: if wanted {
            lab_peers(me)
        } else {
            PeerView::Unknown {
                why: "not needed: IPsec is not wanted".into(),
            }
        },
        local_addresses: vec![ip("127.0.0.1"), ip(&format!("198.18.0.{me}"))],
    }
}

fn situation(me: u8, name: &str) -> PolicyFacts {
    facts(me, true, lab_states(name), lab_policies(name))
}

/// Every verdict these tests see is also checked against the schema.
fn judged(facts: &PolicyFacts) -> Finding {
    crate::schema_check::valid("ipsec.policy", judge(facts))
}

#[test]
fn the_layout_is_ovs_monitor_ipsecs_geneve_template() {
    // 4 per peer: out and in on dport 6081 (geneve), the pair on sport
    // 6081; no fwd; transport templates of 0.0.0.0 with a reqid; the
    // outbound dport one names its SA's SPI once up.
    let policies = lab_policies("mesh-up-n1");
    let states = lab_states("mesh-up-n1");
    let (me, two) = (ip("198.18.0.1"), ip("198.18.0.2"));
    let mut seen: Vec<String> = policies
        .iter()
        .filter(|p| !p.socket && (p.selector.src == two || p.selector.dst == two))
        .map(|p| {
            format!(
                "{:?} {}->{} {}",
                p.dir,
                p.selector.src,
                p.selector.dst,
                p.selector.ports_text()
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            "In 198.18.0.2->198.18.0.1 udp dport 6081",
            "In 198.18.0.2->198.18.0.1 udp sport 6081",
            "Out 198.18.0.1->198.18.0.2 udp dport 6081",
            "Out 198.18.0.1->198.18.0.2 udp sport 6081",
        ]
    );
    let out = effective(&policies, PolicyDir::Out, me, two).expect("an out policy");
    let t = out.requires(50).unwrap();
    assert_eq!(out.selector.ports_text(), "udp dport 6081");
    assert_ne!(t.spi, 0, "strongSwan >= 5.6 names the SA");
    let carrier: Vec<&SecurityAssociation> = states
        .iter()
        .filter(|s| satisfies(s, t, PolicyDir::Out, me, two))
        .collect();
    assert_eq!(carrier.len(), 1);
    assert!(carrier[0].selector.as_ref().unwrap().selects(
        me,
        two,
        IPPROTO_UDP,
        Port::Any,
        Port::Is(6081)
    ));
    let inbound = effective(&policies, PolicyDir::In, two, me).expect("an in policy");
    assert_eq!(inbound.requires(50).unwrap().spi, 0);
    // charon's IKE sockets are never the effective policy of geneve.
    assert!(!out.socket && !inbound.socket);
}

#[test]
fn the_mesh_up_passes_every_peer_both_ways() {
    let f = judged(&situation(1, "mesh-up-n1"));
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(f.kind.code("ipsec.policy"), "ipsec.policy/ok");
    assert_eq!(
        f.summary,
        "geneve to and from all 2 peers is covered by ESP policies (8 of them; ovs-monitor-ipsec writes 4 per peer) and carried by SAs that satisfy their templates"
    );
    assert_eq!(f.evidence["geneve_policies"], 8);
    assert_eq!(f.evidence["policy_count"], 8);
    assert_eq!(f.evidence["sa_count"], 8);
    assert_eq!(
        subjects(&f),
        [
            "198.18.0.2 ok: geneve both ways under ESP policies, carried by SAs that satisfy their templates (4 policies, 4 SAs)",
            "198.18.0.3 ok: geneve both ways under ESP policies, carried by SAs that satisfy their templates (4 policies, 4 SAs)",
        ]
    );
}

#[test]
fn armed_and_idle_is_a_pass() {
    let f = judged(&situation(1, "armed-idle-n1"));
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(f.kind.code("ipsec.policy"), "ipsec.policy/armed");
    assert_eq!(f.evidence["peers"][0]["out"], "armed");
    assert_eq!(f.evidence["peers"][0]["inbound"], "armed");
    assert_eq!(f.evidence["peers"][0]["policies"], 4);
}

#[test]
fn a_policy_waiting_for_ike_is_no_sa_and_a_node_without_ipsec_is_plaintext() {
    // The partial enable's two sides, as the lab captured them when n3's
    // strongSwan was stopped: n1 keeps its trap policies toward n3 and
    // holds an ACQUIRE state for it; n3 holds neither policies nor SAs.
    let f = judged(&situation(1, "peer-stopped-n1"));
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.kind.code("ipsec.policy"), "ipsec.policy/no-sa");
    assert_eq!(
        f.summary,
        "IPsec is wanted but policies demand ESP for 198.18.0.1->198.18.0.3 but no SA exists (IKE pending or failing): dropped"
    );
    assert_eq!(
        f.evidence["dropped"],
        serde_json::json!(["198.18.0.1->198.18.0.3"])
    );
    assert!(subjects(&f).contains(&"198.18.0.2 ok: geneve both ways under ESP policies, carried by SAs that satisfy their templates (4 policies, 4 SAs)".to_owned()));

    let f = judged(&situation(3, "stopped-n3"));
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(f.kind.code("ipsec.policy"), "ipsec.policy/plaintext");
    assert_eq!(
        f.summary,
        "IPsec is wanted but no policy demands ESP for 198.18.0.3->198.18.0.1, 198.18.0.1->198.18.0.3, 198.18.0.3->198.18.0.2, 198.18.0.2->198.18.0.3: geneve in plaintext"
    );
    assert_eq!(f.evidence["geneve_policies"], 0);
    assert_eq!(f.evidence["peers"][0]["policies"], 0);
    let e: IpsecPolicyEvidence = f.evidence_as().unwrap();
    assert!(e.peers.iter().all(|p| !p.holds_any()));
    assert_eq!(e.series()[1].value, 2.0, "2 plaintext peers");
}

#[test]
fn sas_without_policies_are_plaintext_with_the_sas_unused() {
    // The plaintext case: the mesh's 8 SAs, every policy gone.
    let f = judged(&facts(1, true, lab_states("mesh-up-n1"), Vec::new()));
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(f.kind.code("ipsec.policy"), "ipsec.policy/plaintext");
    assert!(subjects(&f)[0].contains(
        "this node's geneve to it is in plaintext: no policy demands ESP for it, and the 1 SA(s) that would carry it are unused"
    ));
}

#[test]
fn a_policy_whose_sa_is_gone_is_a_template_mismatch() {
    // n1's SA carrying its geneve to n2 removed behind charon's back: the
    // out policy's template still names its SPI.
    let mut states = lab_states("mesh-up-n1");
    states.retain(|s| {
        !(s.src == ip("198.18.0.1")
            && s.dst == ip("198.18.0.2")
            && s.selector.as_ref().unwrap().ports_text() == "udp dport 6081")
    });
    let f = judged(&facts(1, true, states, lab_policies("mesh-up-n1")));
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(
        f.kind.code("ipsec.policy"),
        "ipsec.policy/template-mismatch"
    );
    assert_eq!(
        f.summary,
        "IPsec is wanted but no installed SA satisfies the policy template for 198.18.0.1->198.18.0.2: dropped"
    );
    assert!(
        subjects(&f)[0].contains("which no installed SA is: dropped"),
        "{:?}",
        subjects(&f)
    );
    // The same SA put back under another reqid: carried, but not by an
    // SA the template takes.
    let mut states = lab_states("mesh-up-n1");
    for s in states.iter_mut() {
        if s.src == ip("198.18.0.1")
            && s.dst == ip("198.18.0.2")
            && s.selector.as_ref().unwrap().ports_text() == "udp dport 6081"
        {
            s.reqid += 100;
        }
    }
    let f = judged(&facts(1, true, states, lab_policies("mesh-up-n1")));
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(
        f.kind.code("ipsec.policy"),
        "ipsec.policy/template-mismatch"
    );
}

#[test]
fn a_block_policy_of_better_priority_wins() {
    let mut policies = lab_policies("mesh-up-n1");
    let mut block = policies
        .iter()
        .find(|p| {
            !p.socket
                && p.dir == PolicyDir::Out
                && p.selector.dst == ip("198.18.0.3")
                && p.selector.ports_text() == "udp dport 6081"
        })
        .unwrap()
        .clone();
    block.action = crate::facts::xfrm::PolicyAction::Block;
    block.templates.clear();
    block.priority -= 1;
    policies.push(block.clone());
    let f = judged(&facts(1, true, lab_states("mesh-up-n1"), policies.clone()));
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(f.kind.code("ipsec.policy"), "ipsec.policy/blocked");
    // Of a worse priority, or for another mark only, it takes nothing.
    policies.pop();
    block.priority += 2;
    policies.push(block.clone());
    assert_eq!(
        judged(&facts(1, true, lab_states("mesh-up-n1"), policies.clone())).status,
        Status::Pass
    );
    policies.pop();
    block.priority -= 2;
    block.mark = Some(crate::facts::xfrm::Mark { value: 1, mask: 1 });
    policies.push(block);
    assert_eq!(
        judged(&facts(1, true, lab_states("mesh-up-n1"), policies)).status,
        Status::Pass
    );
}

#[test]
fn not_wanted_names_every_leftover_geneve_policy() {
    let f = judged(&facts(1, false, Vec::new(), lab_policies("armed-idle-n1")));
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(
        f.kind.code("ipsec.policy"),
        "ipsec.policy/leftover-policies"
    );
    assert_eq!(f.findings.len(), 8);
    assert!(f
        .remediation
        .iter()
        .any(|r| r.contains("ip xfrm policy flush")));
    let f = judged(&facts(1, false, Vec::new(), Vec::new()));
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(f.kind.code("ipsec.policy"), "ipsec.policy/ok");
    // charon's socket policies alone are not leftovers.
    let sockets: Vec<XfrmPolicy> = lab_policies("armed-idle-n1")
        .into_iter()
        .filter(|p| p.socket)
        .collect();
    assert!(!sockets.is_empty());
    assert_eq!(
        judged(&facts(1, false, Vec::new(), sockets)).status,
        Status::Pass
    );
}

#[test]
fn peers_unknown_and_nothing_held_is_plaintext_for_the_config_nodes() {
    // In a cluster run OVN is read by another node: a node holding no
    // policy or SA has no peer to name, and still fails.
    let mut f = facts(2, true, Vec::new(), Vec::new());
    f.peers = PeerView::Unknown {
        why: "OVN SB is read by spx1 in this cluster run".into(),
    };
    let f = judged(&f);
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(f.kind.code("ipsec.policy"), "ipsec.policy/plaintext");
    assert_eq!(
        f.summary,
        "IPsec is wanted but this node holds no IPsec policy or SA for any peer (the config has 3 nodes): its geneve leaves in plaintext (the peers were not asked of OVN: OVN SB is read by spx1 in this cluster run)"
    );
    // With its policies, the peers come from them.
    let mut f = situation(1, "armed-idle-n1");
    f.peers = PeerView::Unknown {
        why: "no SB".into(),
    };
    let f = judged(&f);
    crate::snapshot::snapshot!("ipsec.policy", f);
    assert_eq!(f.kind.code("ipsec.policy"), "ipsec.policy/armed");
    assert_eq!(f.evidence["peers"].as_array().unwrap().len(), 2);
}
