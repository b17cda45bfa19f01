//! `ipsec.xfrm` judged on the kernel's own answers: dumps captured in the
//! kernel lab on real strongSwan configured by ovs-monitor-ipsec
//! (`checks/testdata/xfrm/`, provenance in each file), and hand-built
//! states for the corners strongSwan does not make (another algorithm, an
//! SA toward a node that left). The same situations are proven live in
//! `tests/kernel_lab/strongswan.rs`.

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::{IpsecXfrm, IpsecXfrmEvidence, PeerView, SaDirection, XfrmFacts, OVN_ALGORITHM};
use crate::check::Check;
use crate::facts::xfrm::{
    parse_dump, parse_policy_dump, PolicyDir, SecurityAssociation, XfrmPolicy,
};
use crate::facts::{hex, ProbeError};
use crate::finding::{Finding, Status};

/// One `XFRM_MSG_NEWSA` as the kernel sends it in a dump, laid out by
/// hand from include/uapi/linux/xfrm.h (xfrm_usersa_info, 224 bytes, then
/// XFRMA_ALG_AEAD or XFRMA_ALG_CRYPT, XFRMA_LTIME_VAL, XFRMA_REPLAY_VAL,
/// XFRMA_LASTUSED), so the crate's parser is held to the kernel ABI, not to
/// itself. For the states strongSwan does not make; its own are captured.
pub(crate) fn newsa(src: &str, dst: &str, spi: u32, aead: Option<&str>) -> Vec<u8> {
    let (src, dst): (IpAddr, IpAddr) = (src.parse().unwrap(), dst.parse().unwrap());
    let addr = |ip: IpAddr| -> [u8; 16] {
        let mut a = [0u8; 16];
        match ip {
            IpAddr::V4(v4) => a[..4].copy_from_slice(&v4.octets()),
            IpAddr::V6(v6) => a = v6.octets(),
        }
        a
    };
    let family: u16 = if src.is_ipv4() { 2 } else { 10 };
    let mut info = vec![0u8; 224];
    // selector: daddr, saddr, family (the kernel fills them for transport SAs)
    info[0..16].copy_from_slice(&addr(dst));
    info[16..32].copy_from_slice(&addr(src));
    info[40..42].copy_from_slice(&family.to_ne_bytes());
    // id: daddr, spi (network order), proto ESP
    info[56..72].copy_from_slice(&addr(dst));
    info[72..76].copy_from_slice(&spi.to_be_bytes());
    info[76] = 50;
    info[80..96].copy_from_slice(&addr(src));
    // lifetime_cfg: soft/hard byte and packet limits "infinite"
    for i in 0..4 {
        info[96 + i * 8..104 + i * 8].copy_from_slice(&u64::MAX.to_ne_bytes());
    }
    info[208..212].copy_from_slice(&1u32.to_ne_bytes()); // reqid
    info[212..214].copy_from_slice(&family.to_ne_bytes());
    info[214] = 0; // transport
    info[215] = 32; // replay window
    let mut attrs = Vec::new();
    let mut nla = |kind: u16, payload: &[u8]| {
        let len = 4 + payload.len();
        attrs.extend_from_slice(&(len as u16).to_ne_bytes());
        attrs.extend_from_slice(&kind.to_ne_bytes());
        attrs.extend_from_slice(payload);
        attrs.resize(attrs.len().next_multiple_of(4), 0);
    };
    if let Some(name) = aead {
        let mut p = vec![0u8; 64];
        p[..name.len()].copy_from_slice(name.as_bytes());
        p.extend_from_slice(&160u32.to_ne_bytes()); // key bits: 128 + 32 salt
        p.extend_from_slice(&128u32.to_ne_bytes()); // icv bits
        p.extend_from_slice(&[0x11; 20]);
        nla(18, &p);
    } else {
        let mut p = vec![0u8; 64];
        p[..8].copy_from_slice(b"cbc(aes)");
        p.extend_from_slice(&128u32.to_ne_bytes());
        p.extend_from_slice(&[0x22; 16]);
        nla(2, &p);
    }
    nla(9, &[0u8; 32]); // XFRMA_LTIME_VAL: xfrm_lifetime_cur
    nla(10, &[0u8; 12]); // XFRMA_REPLAY_VAL: xfrm_replay_state
    nla(15, &0u64.to_ne_bytes()); // XFRMA_LASTUSED
    let mut msg = Vec::new();
    let len = 16 + info.len() + attrs.len();
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&0x10u16.to_ne_bytes()); // XFRM_MSG_NEWSA
    msg.extend_from_slice(&0x2u16.to_ne_bytes()); // NLM_F_MULTI
    msg.extend_from_slice(&1u32.to_ne_bytes());
    msg.extend_from_slice(&0x5d4bu32.to_ne_bytes());
    msg.extend(info);
    msg.extend(attrs);
    msg
}

// captured on Debian 12, kernel 6.18: the end of an XFRM_MSG_GETSA dump
// (NLMSG_DONE), as root.
pub(crate) const DONE: &str = "1400000003000200010000004b5d000000000000";
// captured on the same host as uid 65534: the kernel's EPERM answer.
const EPERM: &str = "240000000200000001000000845d0000ffffffff10000000120001030100000000000000";

/// A capture in `checks/testdata/xfrm/`: every recv() of the dump, joined.
pub(crate) fn capture(name: &str) -> Vec<u8> {
    crate::facts::hex_capture("xfrm", name)
}

/// A lab situation: node `node`'s states and policies, captured.
pub(crate) fn lab_states(situation: &str) -> Vec<SecurityAssociation> {
    let chunk = parse_dump(&capture(&format!("{situation}.states"))).unwrap();
    assert!(chunk.done, "{situation}: the whole dump");
    chunk.states
}

pub(crate) fn lab_policies(situation: &str) -> Vec<XfrmPolicy> {
    let chunk = parse_policy_dump(&capture(&format!("{situation}.policies"))).unwrap();
    assert!(chunk.done, "{situation}: the whole dump");
    chunk.policies
}

pub(crate) fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The mesh-up capture of n1 without the SAs `src`->`dst` whose selector
/// reads `ports` (`udp dport 6081`: the one carrying geneve).
fn mesh_up_without(src: &str, dst: &str, ports: &str) -> Vec<SecurityAssociation> {
    let mut states = lab_states("mesh-up-n1");
    let before = states.len();
    states.retain(|s| {
        !(s.src == ip(src)
            && s.dst == ip(dst)
            && s.selector
                .as_ref()
                .is_some_and(|sel| sel.ports_text() == ports))
    });
    assert_eq!(states.len(), before - 1, "one SA {src}->{dst} {ports}");
    states
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter().map(|s| ip(s)).collect()
}

/// The lab's three nodes as node `me` sees them through OVN.
pub(crate) fn lab_peers(me: u8) -> PeerView {
    let local = format!("198.18.0.{me}");
    PeerView::Known {
        local: ips(&[&local]),
        peers: (1..=3)
            .filter(|n| *n != me)
            .map(|n| ip(&format!("198.18.0.{n}")))
            .collect(),
        source: "OVN_Southbound Encap at unix:/tmp/sb.sock".into(),
    }
}

fn lab_facts(
    me: u8,
    states: Vec<SecurityAssociation>,
    policies: Result<Vec<XfrmPolicy>, String>,
) -> XfrmFacts {
    XfrmFacts {
        ipsec_wanted: true,
        node_count: 3,
        expected_min: 4,
        states,
        policies,
        peers: lab_peers(me),
        local_addresses: ips(&["127.0.0.1", &format!("198.18.0.{me}")]),
        route_sources: Default::default(),
    }
}

/// n1's verdict on `states` with the mesh-up policies.
fn judge_with_mesh_up_policies(states: Vec<SecurityAssociation>) -> Finding {
    judge(&lab_facts(1, states, Ok(lab_policies("mesh-up-n1"))))
}

fn situation(me: u8, name: &str) -> XfrmFacts {
    lab_facts(me, lab_states(name), Ok(lab_policies(name)))
}

/// Every verdict these tests see is also checked against the schema.
fn judge(facts: &XfrmFacts) -> Finding {
    crate::schema_check::valid("ipsec.xfrm", super::judge(facts))
}

pub(crate) fn subjects(f: &Finding) -> Vec<String> {
    f.findings
        .iter()
        .map(|s| format!("{} {}: {}", s.subject, s.kind.name, s.summary))
        .collect()
}

#[test]
fn strongswan_holds_4_sas_per_peer_with_ports_in_their_selectors() {
    let states = lab_states("mesh-up-n1");
    assert_eq!(states.len(), 8);
    assert!(states.iter().all(|s| s.is_esp_sa() && s.mode == 0));
    assert!(states
        .iter()
        .all(|s| s.algorithm.as_deref() == Some(OVN_ALGORITHM)));
    for peer in ["198.18.0.2", "198.18.0.3"] {
        let with: Vec<&SecurityAssociation> = states
            .iter()
            .filter(|s| s.src == ip(peer) || s.dst == ip(peer))
            .collect();
        let mut seen: Vec<String> = with
            .iter()
            .map(|s| {
                format!(
                    "{}->{} {}",
                    s.src,
                    s.dst,
                    s.selector.as_ref().unwrap().ports_text()
                )
            })
            .collect();
        seen.sort();
        let mut want = vec![
            format!("198.18.0.1->{peer} udp dport 6081"),
            format!("198.18.0.1->{peer} udp sport 6081"),
            format!("{peer}->198.18.0.1 udp dport 6081"),
            format!("{peer}->198.18.0.1 udp sport 6081"),
        ];
        want.sort();
        assert_eq!(seen, want);
        // Two CHILD_SAs, each a pair of SAs under one reqid: this node's
        // geneve out (dport) with the peer's replies (sport) under the
        // -out- connection's, the peer's geneve in under the -in-'s.
        let reqids: BTreeSet<u32> = with.iter().map(|s| s.reqid).collect();
        assert_eq!(reqids.len(), 2, "{peer}");
        for r in reqids {
            let child: Vec<&&SecurityAssociation> = with.iter().filter(|s| s.reqid == r).collect();
            assert_eq!(child.len(), 2);
            assert_ne!(child[0].src, child[1].src, "both ways");
        }
    }
}

#[test]
fn strongswan_policies_4_per_peer_and_the_sockets_own() {
    let policies = lab_policies("mesh-up-n1");
    let sockets: Vec<&XfrmPolicy> = policies.iter().filter(|p| p.socket).collect();
    // charon's IKE sockets (500 and 4500), in and out, IPv4 and IPv6.
    assert_eq!(sockets.len(), 8);
    assert!(sockets
        .iter()
        .all(|p| p.templates.is_empty() && p.priority == 0));
    let geneve: Vec<&XfrmPolicy> = policies.iter().filter(|p| !p.socket).collect();
    assert_eq!(geneve.len(), 8);
    assert!(
        geneve.iter().all(|p| p.dir != PolicyDir::Fwd),
        "no fwd in transport mode"
    );
    let states = lab_states("mesh-up-n1");
    for p in &geneve {
        let t = p.requires(50).expect("an ESP template");
        assert_eq!((t.src, t.dst, t.mode), (ip("0.0.0.0"), ip("0.0.0.0"), 0));
        match p.dir {
            // strongSwan ≥ 5.6 writes the SPI of the outbound SA.
            PolicyDir::Out => assert!(
                states.iter().any(|s| s.spi == t.spi && s.reqid == t.reqid),
                "{p:?}"
            ),
            _ => assert_eq!(t.spi, 0),
        }
    }
    // Armed and idle: the same 8 trap policies, templates without SPI.
    let idle = lab_policies("armed-idle-n1");
    assert_eq!(idle.iter().filter(|p| !p.socket).count(), 8);
    assert!(idle
        .iter()
        .filter_map(|p| p.requires(50))
        .all(|t| t.spi == 0));
    assert!(lab_states("armed-idle-n1").is_empty());
}

#[test]
fn the_mesh_up_passes_with_4_sas_per_peer() {
    let f = judge(&situation(1, "mesh-up-n1"));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/ok");
    assert_eq!(
        f.summary,
        "8 ESP SAs (rfc4106(gcm(aes))): geneve encrypted both ways with all 2 peers (ovs-monitor-ipsec's layout holds 4 per peer, 4x(3-1) = 8; at least 2x(3-1) = 4 expected)"
    );
    assert_eq!(f.evidence["sa_count"], 8);
    assert_eq!(f.evidence["expected"], 8);
    assert_eq!(f.evidence["expected_min"], 4);
    assert_eq!(f.evidence["policy_count"], 8);
    assert_eq!(
        subjects(&f),
        [
            "198.18.0.2 ok: 4 ESP SAs: geneve encrypted both ways",
            "198.18.0.3 ok: 4 ESP SAs: geneve encrypted both ways"
        ]
    );
    let sas = f.evidence["sas"].as_array().unwrap();
    assert_eq!(sas.len(), 8);
    let idle: Vec<&serde_json::Value> = sas
        .iter()
        .filter(|s| s["selector"] == "udp sport 6081")
        .collect();
    assert_eq!(idle.len(), 4, "the reply SAs");
    assert!(sas.iter().all(|s| s["reqid"].as_u64().unwrap() > 0));
}

#[test]
fn armed_and_idle_passes_naming_the_peers_without_sas_yet() {
    let f = judge(&situation(1, "armed-idle-n1"));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/armed");
    assert_eq!(
        f.summary,
        "armed: no SA yet with 198.18.0.2 and 198.18.0.3 for their geneve in at least one direction; IPsec policies demand ESP for it and IKE makes the SAs on the first packet (ovs-monitor-ipsec's auto=route)"
    );
    assert_eq!(f.evidence["sa_count"], 0);
    assert_eq!(
        f.evidence["armed_peers"],
        serde_json::json!(["198.18.0.2", "198.18.0.3"])
    );
    assert_eq!(f.evidence["missing_pairs"], serde_json::json!([]));
    assert!(f.remediation.is_empty());
    // One peer up, the other idle: still armed, and both are named.
    let mut states = lab_states("mesh-up-n1");
    states.retain(|s| s.src != ip("198.18.0.3") && s.dst != ip("198.18.0.3"));
    let mut policies = lab_policies("armed-idle-n1");
    policies.retain(|p| p.selector.dst != ip("198.18.0.2") && p.selector.src != ip("198.18.0.2"));
    policies.extend(
        lab_policies("mesh-up-n1")
            .into_iter()
            .filter(|p| p.selector.dst == ip("198.18.0.2") || p.selector.src == ip("198.18.0.2")),
    );
    let f = judge(&lab_facts(1, states, Ok(policies)));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(
        f.kind.code("ipsec.xfrm"),
        "ipsec.xfrm/armed",
        "{}",
        f.summary
    );
}

#[test]
fn a_larval_acquire_state_is_no_sa() {
    let states = lab_states("peer-stopped-n1");
    let larval: Vec<&SecurityAssociation> = states.iter().filter(|s| s.larval).collect();
    assert_eq!(larval.len(), 1);
    let acq = larval[0];
    // What `ip xfrm state` shows for it: SPI 0, no algorithm, the packet's
    // own selector (its source port, geneve's destination port, the device).
    assert_eq!((acq.spi, acq.algorithm.as_deref()), (0, None));
    assert_eq!((acq.src, acq.dst), (ip("198.18.0.1"), ip("198.18.0.3")));
    let sel = acq.selector.as_ref().unwrap();
    assert_eq!(
        (sel.dport, sel.dport_mask, sel.sport_mask),
        (6081, 0xffff, 0xffff)
    );
    assert!(sel.ifindex > 0);
    assert!(states.iter().filter(|s| !s.larval).all(|s| s.spi != 0));
    assert_eq!(states.iter().filter(|s| s.is_esp_sa()).count(), 4);
}

#[test]
fn a_peer_whose_ike_is_gone_is_named_pending_both_ways() {
    let f = judge(&situation(1, "peer-stopped-n1"));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/ike-pending");
    assert_eq!(
        f.summary,
        "IPsec is wanted but IKE pending or failing toward 198.18.0.3: the kernel is waiting for keys and drops what it sends (no SA for 198.18.0.1->198.18.0.3, 198.18.0.3->198.18.0.1)"
    );
    assert_eq!(
        f.evidence["missing_pairs"],
        serde_json::json!(["198.18.0.1->198.18.0.3", "198.18.0.3->198.18.0.1"])
    );
    assert_eq!(
        f.evidence["pending_peers"],
        serde_json::json!(["198.18.0.3"])
    );
    assert_eq!(f.evidence["sa_count"], 4, "the larval state is no SA");
    assert_eq!(f.evidence["algorithms"], serde_json::json!([OVN_ALGORITHM]));
    let pending = f.evidence["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["dst"], "198.18.0.3");
    assert!(pending[0]["selector"]
        .as_str()
        .unwrap()
        .ends_with("dport 6081"));
    // Never "no encryption", never another IKE configuration.
    assert!(f
        .remediation
        .iter()
        .all(|r| !r.contains("OVN does not own")));
    let s = subjects(&f);
    assert_eq!(s[0], "198.18.0.2 ok: 4 ESP SAs: geneve encrypted both ways");
    assert!(
        s[1].starts_with("198.18.0.3 ike-pending: IKE pending or failing"),
        "{s:?}"
    );
    assert_eq!(
        f.evidence_as::<IpsecXfrmEvidence>().unwrap().pending_peers,
        ips(&["198.18.0.3"])
    );
}

#[test]
fn the_stopped_node_itself_encrypts_nothing() {
    // n3 after its strongSwan stopped: no SA, no policy, and an ACQUIRE
    // state left over from before (no policy demands ESP any more, so its
    // geneve goes in clear: not "pending").
    let f = judge(&situation(3, "stopped-n3"));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(
        f.kind.code("ipsec.xfrm"),
        "ipsec.xfrm/missing-sas",
        "{}",
        f.summary
    );
    assert_eq!(
        f.summary,
        "IPsec is wanted but 0 ESP SAs, fewer than 2x(3-1) = 4; missing 198.18.0.3->198.18.0.1, 198.18.0.1->198.18.0.3, 198.18.0.3->198.18.0.2, 198.18.0.2->198.18.0.3 (no SA, and no policy demands one: nothing encrypts that geneve)"
    );
    assert_eq!(f.evidence["policy_count"], 0);
    assert_eq!(f.evidence["pending"].as_array().unwrap().len(), 1);
    assert_eq!(f.evidence["pending_peers"], serde_json::json!([]));
    assert_eq!(
        subjects(&f)[0],
        "198.18.0.1 missing-sas: no outbound SA, and no policy demands one; no inbound SA, and no policy demands one"
    );
}

#[test]
fn an_sa_removed_behind_charons_back_is_lost_not_armed() {
    // The SA carrying 198.18.0.2's geneve in, gone from n1; the reply SA of
    // its CHILD_SA (same reqid) is still here, and so is the policy.
    let states = mesh_up_without("198.18.0.2", "198.18.0.1", "udp dport 6081");
    let f = judge_with_mesh_up_policies(states);
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(
        f.kind.code("ipsec.xfrm"),
        "ipsec.xfrm/missing-sas",
        "{}",
        f.summary
    );
    assert_eq!(
        f.summary,
        "IPsec is wanted but missing 198.18.0.2->198.18.0.1 (the SA is gone but the rest of its CHILD_SA is here: removed behind the IKE daemon's back, so its packets are dropped)"
    );
    assert_eq!(f.evidence["sa_count"], 7);
    // The outbound one: its policy's template still names its SPI.
    let states = mesh_up_without("198.18.0.1", "198.18.0.3", "udp dport 6081");
    let f = judge_with_mesh_up_policies(states);
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(
        f.evidence["missing_pairs"],
        serde_json::json!(["198.18.0.1->198.18.0.3"])
    );
    assert_eq!(
        subjects(&f)[1],
        "198.18.0.3 missing-sas: no outbound SA, though the rest of its CHILD_SA is here (removed behind the IKE daemon's back: its packets are dropped)"
    );
}

#[test]
fn the_idle_reply_sas_are_not_needed_for_geneve() {
    // Without a `sport 6081` SA of a peer (one of the replies' SAs), its
    // geneve is still carried both ways: 3 SAs with it, no verdict.
    let states = mesh_up_without("198.18.0.1", "198.18.0.2", "udp sport 6081");
    let f = judge_with_mesh_up_policies(states);
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(
        subjects(&f)[0],
        "198.18.0.2 ok: 3 ESP SAs: geneve encrypted both ways"
    );
}

#[test]
fn without_policies_nothing_is_armed() {
    // The policy dump failed: an idle node cannot be told from one that
    // encrypts nothing, so the missing SAs are named, and why.
    let f = judge(&lab_facts(
        1,
        Vec::new(),
        Err("could not parse xfrm netlink message: test".into()),
    ));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/missing-sas");
    assert_eq!(f.evidence["policy_count"], serde_json::Value::Null);
    assert_eq!(
        f.evidence["policy_error"],
        "could not parse xfrm netlink message: test"
    );
    // Pending is still pending: the ACQUIRE state alone says so.
    let f = judge(&lab_facts(
        1,
        lab_states("peer-stopped-n1"),
        Err("unread".into()),
    ));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(
        f.kind.code("ipsec.xfrm"),
        "ipsec.xfrm/ike-pending",
        "{}",
        f.summary
    );
}

#[test]
fn without_ovn_the_peers_come_from_the_sas_and_policies() {
    let unknown = |mut facts: XfrmFacts, nodes: usize| {
        facts.peers = PeerView::Unknown { why: "down".into() };
        facts.node_count = nodes;
        facts.expected_min = 2 * (nodes - 1);
        facts
    };
    let f = judge(&unknown(situation(1, "mesh-up-n1"), 3));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(f.evidence["peers"], serde_json::Value::Null);
    assert_eq!(
        f.evidence["peer_source"],
        "the SAs and policies themselves (OVN not asked: down)"
    );
    let f = judge(&unknown(situation(1, "armed-idle-n1"), 3));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(
        f.kind.code("ipsec.xfrm"),
        "ipsec.xfrm/armed",
        "{}",
        f.summary
    );
    // A config of 4 nodes: a peer unaccounted for.
    let f = judge(&unknown(situation(1, "mesh-up-n1"), 4));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/missing-sas");
    // The stopped node: the peer found from its leftover ACQUIRE state.
    let f = judge(&unknown(situation(3, "stopped-n3"), 3));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/missing-sas");
}

#[test]
fn ovn_listing_fewer_peers_than_the_config_has_nodes_fails() {
    let mut facts = situation(1, "mesh-up-n1");
    facts.node_count = 4;
    facts.expected_min = 6;
    // Only 198.18.0.2's SAs and OVN knows only it: 4 < 2x(4-1).
    facts
        .states
        .retain(|s| s.src != ip("198.18.0.3") && s.dst != ip("198.18.0.3"));
    facts.peers = PeerView::Known {
        local: ips(&["198.18.0.1"]),
        peers: ips(&["198.18.0.2"]),
        source: "OVN_Southbound Encap at unix:/tmp/sb.sock".into(),
    };
    let f = judge(&facts);
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(
        f.kind.code("ipsec.xfrm"),
        "ipsec.xfrm/missing-sas",
        "{}",
        f.summary
    );
}

#[test]
fn the_sa_list_has_direction_and_spi_and_never_keys() {
    let mut bytes = newsa("198.18.0.1", "198.18.0.2", 0xc0ffee01, Some(OVN_ALGORITHM));
    bytes.extend(newsa(
        "198.18.0.2",
        "198.18.0.1",
        0x0000_0007,
        Some(OVN_ALGORITHM),
    ));
    bytes.extend(newsa("198.18.0.5", "198.18.0.6", 9, Some(OVN_ALGORITHM)));
    bytes.extend(hex(DONE));
    let states = parse_dump(&bytes).unwrap().states;
    let mut facts = lab_facts(1, states, Ok(Vec::new()));
    facts.peers = PeerView::Unknown { why: "test".into() };
    let f = judge(&facts);
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    let sas = f.evidence["sas"].as_array().unwrap();
    assert_eq!(sas.len(), 3);
    assert_eq!(
        sas[0],
        serde_json::json!({"src": "198.18.0.1", "dst": "198.18.0.2", "spi": "0xc0ffee01",
                           "algorithm": OVN_ALGORITHM, "direction": "out", "reqid": 1,
                           "selector": "any", "bytes": 0})
    );
    assert_eq!(sas[1]["direction"], "in");
    assert_eq!(sas[1]["spi"], "0x00000007");
    assert_eq!(sas[2]["direction"], "other");
    let text = serde_json::Value::Object(f.evidence.clone()).to_string();
    assert!(!text.contains("key") && !text.contains("1111"), "{text}");
    // strongSwan's real keys never reach the evidence either (the captures
    // hold them zeroed; the kernel lab checks the live ones).
    let f = judge(&situation(1, "mesh-up-n1"));
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert!(!serde_json::Value::Object(f.evidence)
        .to_string()
        .contains("0000000000000000"));
}

#[test]
fn the_dump_parses_to_the_kernel_fields() {
    let mut bytes = newsa("198.18.0.1", "198.18.0.2", 0xc0ffee01, Some(OVN_ALGORITHM));
    bytes.extend(newsa("fd00::2", "fd00::1", 7, None));
    let chunk = parse_dump(&bytes).unwrap();
    assert!(!chunk.done, "no NLMSG_DONE yet: more recv()s follow");
    let sa = &chunk.states[0];
    assert_eq!(sa.src, ip("198.18.0.1"));
    assert_eq!(sa.dst, ip("198.18.0.2"));
    assert_eq!(sa.spi, 0xc0ffee01);
    assert!(sa.is_esp_sa() && !sa.larval);
    assert_eq!(sa.algorithm.as_deref(), Some(OVN_ALGORITHM));
    assert_eq!(chunk.states[1].algorithm.as_deref(), Some("cbc(aes)"));
    assert_eq!(chunk.states[1].dst, ip("fd00::1"));
}

#[test]
fn eperm_from_the_kernel_skips_naming_the_capability() {
    let err = parse_dump(&hex(EPERM)).unwrap_err();
    let f: Finding = err.into();
    assert_eq!(f.status, Status::Skip);
    assert!(f.summary.contains("CAP_NET_ADMIN"), "{}", f.summary);
    let err = parse_policy_dump(&hex(EPERM)).unwrap_err();
    assert!(matches!(err, ProbeError::PermissionDenied { .. }));
    assert!(err.to_string().contains("XFRM_MSG_GETPOLICY"), "{err}");
}

#[test]
fn truncated_dumps_are_parse_errors_not_panics() {
    let whole = newsa("198.18.0.1", "198.18.0.2", 1, Some(OVN_ALGORITHM));
    for cut in [1, 15, 16, 100, 239, whole.len() - 1] {
        assert!(parse_dump(&whole[..cut]).is_err(), "cut {cut}");
    }
    // A NEWSA whose own length is too short for xfrm_usersa_info (the
    // crate would slice past it).
    let mut short = whole[..100].to_vec();
    short[..4].copy_from_slice(&100u32.to_ne_bytes());
    let err = parse_dump(&short).unwrap_err().to_string();
    assert!(err.contains("shorter than xfrm_usersa_info"), "{err}");
    // The same for a policy (xfrm_userpolicy_info is 168 bytes).
    let policies = capture("mesh-up-n1.policies");
    let mut short = policies[..100].to_vec();
    short[..4].copy_from_slice(&100u32.to_ne_bytes());
    let err = parse_policy_dump(&short).unwrap_err().to_string();
    assert!(err.contains("shorter than xfrm_userpolicy_info"), "{err}");
}

#[test]
fn an_sa_to_a_removed_node_warns() {
    let mut bytes = capture("mesh-up-n1.states");
    let done = bytes.split_off(bytes.len() - 20);
    bytes.extend(newsa(
        "198.18.0.1",
        "198.18.0.9",
        0x1009,
        Some(OVN_ALGORITHM),
    ));
    bytes.extend(done);
    let states = parse_dump(&bytes).unwrap().states;
    let f = judge_with_mesh_up_policies(states);
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.status, Status::Warn, "{}", f.summary);
    assert_eq!(
        f.evidence["stale_pairs"],
        serde_json::json!(["198.18.0.1->198.18.0.9"])
    );
    assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/stale-sas");
}

#[test]
fn the_wrong_algorithm_fails() {
    let mut states = lab_states("mesh-up-n1");
    let mut bytes = newsa("198.18.0.1", "198.18.0.2", 0x5002, None);
    bytes.extend(hex(DONE));
    states.extend(parse_dump(&bytes).unwrap().states);
    let f = judge_with_mesh_up_policies(states);
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.status, Status::Fail);
    assert_eq!(
        f.evidence["algorithms"],
        serde_json::json!(["cbc(aes)", OVN_ALGORITHM])
    );
    assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/wrong-algorithm");
    assert!(f
        .remediation
        .iter()
        .any(|r| r.contains("IKE configuration OVN does not own")));
    let back = f.evidence_as::<IpsecXfrmEvidence>().unwrap();
    assert_eq!(back.sa_count, 9);
    assert!(back.sas.iter().all(|s| s.direction != SaDirection::Other));
}

#[test]
fn sas_left_when_ipsec_is_off_fail_and_so_does_a_policy_still_demanding_esp() {
    let mut facts = situation(1, "peer-stopped-n1");
    facts.ipsec_wanted = false;
    facts.expected_min = 0;
    facts.peers = PeerView::Unknown {
        why: "not needed: IPsec is not wanted".into(),
    };
    let f = judge(&facts);
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/leftover-sas");
    assert!(f
        .remediation
        .iter()
        .any(|r| r.contains("ip xfrm state flush proto esp")));
    assert_eq!(f.evidence["expected"], 0);
    let mut facts = situation(1, "armed-idle-n1");
    facts.ipsec_wanted = false;
    let f = judge(&facts);
    crate::snapshot::snapshot!("ipsec.xfrm", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(f.evidence["sa_count"], 0);
}

#[test]
fn explain_quotes_the_fixes_the_findings_give() {
    let explain = IpsecXfrm.explain();
    let mut left = situation(1, "peer-stopped-n1");
    left.ipsec_wanted = false;
    let findings = [
        judge(&left),
        judge(&situation(3, "stopped-n3")),
        judge(&situation(1, "peer-stopped-n1")),
    ];
    for f in findings {
        assert!(!f.remediation.is_empty(), "{}", f.summary);
        for step in &f.remediation {
            // IKE pending's steps name the peers; explain, "the peers named".
            let step = step.replace("198.18.0.3", "the peers named");
            assert!(explain.contains(&format!("- {step}\n")), "{step}");
        }
    }
}

/// Issue 36: without OVN the local end of a pair was "the host's first
/// address", loopback, and a missing direction read `127.0.0.1->…`. It is
/// the end the kernel uses toward the peer: the SA's or policy's own, else
/// the route's preferred source; never loopback, never link-local.
#[test]
fn the_local_end_toward_a_peer_is_the_one_the_kernel_uses_never_loopback() {
    // The stopped node of the kernel lab, OVN not asked: its peers come
    // from the ACQUIRE states it kept; its addresses list loopback first.
    let mut facts = situation(3, "stopped-n3");
    facts.peers = PeerView::Unknown { why: "down".into() };
    facts.local_addresses = ips(&["127.0.0.1", "fe80::1", "198.18.0.3"]);
    let f = judge(&facts);
    let said = format!(
        "{} {:?} {:?}",
        f.summary, f.remediation, f.evidence["missing_pairs"]
    );
    assert!(
        !said.contains("127.0.0.1") && !said.contains("fe80"),
        "{said}"
    );
    for pair in f.evidence["missing_pairs"].as_array().unwrap() {
        let pair = pair.as_str().unwrap();
        assert!(pair.contains("198.18.0.3"), "{pair}");
    }
    // Nothing in the tables places this node's end toward a peer: the
    // route's preferred source does, unless it is loopback or link-local.
    let states: Vec<SecurityAssociation> = Vec::new();
    let policies: Vec<XfrmPolicy> = Vec::new();
    let local = ips(&["127.0.0.1", "169.254.0.7", "198.19.0.1", "198.19.1.1"]);
    let toward = |route: Option<&str>| {
        super::analyse::local_toward(
            ip("198.19.0.3"),
            &local,
            false,
            &states,
            &policies,
            route.map(ip),
        )
    };
    assert_eq!(toward(Some("198.19.1.1")), Some(ip("198.19.1.1")));
    assert_eq!(toward(Some("127.0.0.1")), None);
    assert_eq!(toward(Some("169.254.0.7")), None);
    assert_eq!(toward(None), None, "never the first address of the family");
    // OVN's ovn-encap-ip is the tunnel's source when the tables say nothing.
    let encap = ips(&["198.19.0.1"]);
    assert_eq!(
        super::analyse::local_toward(ip("198.19.0.3"), &encap, true, &states, &policies, None),
        Some(ip("198.19.0.1"))
    );
    // An SA's own local end comes first, whatever the route says.
    let mut facts = situation(1, "mesh-up-n1");
    facts.peers = PeerView::Unknown { why: "down".into() };
    facts
        .route_sources
        .insert(ip("198.18.0.2"), ip("198.18.9.9"));
    let a = super::analyse(&facts);
    let p = a.peers.iter().find(|p| p.peer == ip("198.18.0.2")).unwrap();
    assert_eq!(p.local, Some(ip("198.18.0.1")));
}
