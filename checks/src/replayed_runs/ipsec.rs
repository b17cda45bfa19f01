//! `ipsec.flags` and `ipsec.xfrm` on recorded OVSDB rows and SA dumps.

use std::net::IpAddr;

use serde_json::{json, Value};

use super::Facts;
use crate::checks::ipsec_flags::IpsecFlags;
use crate::checks::ipsec_xfrm::IpsecXfrm;
use crate::endpoint::Endpoint;
use crate::facts::ovsdb::{Answer, Row};
use crate::facts::xfrm::{
    PolicyAction, PolicyDir, PolicyTemplate, SecurityAssociation, Selector, XfrmPolicy,
};
use crate::finding::Status;
use crate::host::{Fact, Request, SelectOp};
use crate::snapshot::snapshot;

const NB: &str = "tcp:198.18.3.181:6641";
const SB: &str = "tcp:198.18.3.181:6642";
const OVS: &str = "unix:/var/run/openvswitch/db.sock";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn select(endpoint: &str, db: &str, table: &str, columns: &[&str], rows: Value) -> (Request, Fact) {
    let endpoint = Endpoint::parse(endpoint).unwrap();
    let rows: Vec<Row> = serde_json::from_value(rows).unwrap();
    (
        Request::Ovsdb {
            endpoints: vec![endpoint.clone()],
            db: db.into(),
            selects: vec![SelectOp {
                table: table.into(),
                columns: columns.iter().map(|c| (*c).to_owned()).collect(),
                conditions: json!([]),
            }],
        },
        Fact::Ovsdb(Answer {
            value: vec![rows],
            endpoint,
            passed_over: Vec::new(),
        }),
    )
}

fn config(ipsec: bool, nodes: usize) -> String {
    let mut c = format!(
        "node = \"spx1\"\n[network]\nipsec_enabled = {ipsec}\n\
         [nodes.spx1]\nhost = \"198.18.3.181\"\n[nodes.spx1.vpcd]\n\
         ovn_nb_addr = \"{NB}\"\novn_sb_addr = \"{SB}\"\n"
    );
    for n in 2..=nodes {
        c.push_str(&format!("[nodes.spx{n}]\nhost = \"198.18.3.18{n}\"\n"));
    }
    c
}

fn ovs_row(encapsulation: Option<&str>) -> (Request, Fact) {
    let mut other = vec![json!(["system-id", "spx1"])];
    if let Some(v) = encapsulation {
        other.push(json!(["ipsec_encapsulation", v]));
    }
    select(
        OVS,
        "Open_vSwitch",
        "Open_vSwitch",
        &["other_config", "external_ids"],
        json!([{
            "other_config": ["map", other],
            "external_ids": ["map", [["ovn-encap-ip", "198.18.3.181"], ["ovn-encap-type", "geneve"]]],
        }]),
    )
}

#[test]
fn flags_left_on_after_disabling_ipsec_fail() {
    // performance-tuning §3: ipsec_enabled = false in the config, but
    // NB_Global.ipsec and ipsec_encapsulation still true.
    let (nb, nb_rows) = select(
        NB,
        "OVN_Northbound",
        "NB_Global",
        &["ipsec"],
        json!([{"ipsec": true}]),
    );
    let (ovs, ovs_rows) = ovs_row(Some("true"));
    let f = Facts::new()
        .config(&config(false, 2))
        .ok(nb, nb_rows)
        .ok(ovs, ovs_rows)
        .run(&IpsecFlags);
    snapshot!("ipsec.flags", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert!(
        f.remediation.iter().any(|r| r.contains("ipsec=false")),
        "{:?}",
        f.remediation
    );
}

/// A geneve selector between two nodes: `udp dport 6081` or `udp sport
/// 6081`, as strongSwan sets it on ovs-monitor-ipsec's connections.
fn geneve(src: &str, dst: &str, dport: bool) -> Selector {
    Selector {
        src: ip(src),
        dst: ip(dst),
        src_prefix: 32,
        dst_prefix: 32,
        proto: 17,
        sport: if dport { 0 } else { 6081 },
        sport_mask: if dport { 0 } else { 0xffff },
        dport: if dport { 6081 } else { 0 },
        dport_mask: if dport { 0xffff } else { 0 },
        ifindex: 0,
    }
}

fn sa(src: &str, dst: &str, spi: u32, reqid: u32, dport: bool) -> SecurityAssociation {
    SecurityAssociation {
        src: ip(src),
        dst: ip(dst),
        spi,
        proto: 50,
        mode: 0,
        reqid,
        algorithm: Some("rfc4106(gcm(aes))".into()),
        selector: Some(geneve(src, dst, dport)),
        larval: false,
        bytes: 0,
        packets: 0,
        layout: None,
    }
}

fn policy(src: &str, dst: &str, dir: PolicyDir, reqid: u32, spi: u32) -> XfrmPolicy {
    XfrmPolicy {
        selector: geneve(src, dst, true),
        dir,
        socket: false,
        action: PolicyAction::Allow,
        priority: 366911,
        index: reqid * 8 + dir as u32,
        templates: vec![PolicyTemplate {
            src: ip("0.0.0.0"),
            dst: ip("0.0.0.0"),
            proto: 50,
            spi,
            reqid,
            mode: 0,
            optional: false,
        }],
        mark: None,
    }
}

/// The OVN side of a node of three that wants IPsec, as peer discovery
/// reads it: the local OVS row (ovn-encap-ip 198.18.3.181, looked for at
/// its socket first) and the SB `Encap` rows of the three chassis.
fn three_nodes_in_ovn(facts: Facts) -> Facts {
    let (ovs, ovs_rows) = ovs_row(Some("true"));
    let (sb, sb_rows) = select(
        SB,
        "OVN_Southbound",
        "Encap",
        &["ip", "type", "chassis_name"],
        json!([
            {"ip": "198.18.3.181", "type": "geneve"},
            {"ip": "198.18.3.182", "type": "geneve"},
            {"ip": "198.18.3.183", "type": "geneve"},
        ]),
    );
    facts
        .exists("/var/run/openvswitch/db.sock", true)
        .ok(ovs, ovs_rows)
        .ok(sb, sb_rows)
}

#[test]
fn a_missing_sa_pair_is_named_from_the_sb_encap_rows() {
    // Three nodes want IPsec. With spx2 both of ovs-monitor-ipsec's
    // connections are up (4 SAs); with spx3 only this node's -out-
    // connection (its geneve to spx3 and the replies), and nothing demands
    // ESP for spx3's geneve to here: that direction is named.
    let (me, two, three) = ("198.18.3.181", "198.18.3.182", "198.18.3.183");
    let f = Facts::new()
        .config(&config(true, 3))
        .ok(
            Request::XfrmStates,
            Fact::Xfrm(vec![
                sa(me, two, 0xc1, 2, true),
                sa(two, me, 0xc2, 2, false),
                sa(two, me, 0xc3, 1, true),
                sa(me, two, 0xc4, 1, false),
                sa(me, three, 0xc5, 4, true),
                sa(three, me, 0xc6, 4, false),
            ]),
        )
        .ok(
            Request::XfrmPolicies,
            Fact::XfrmPolicies(vec![
                policy(me, two, PolicyDir::Out, 2, 0xc1),
                policy(two, me, PolicyDir::In, 1, 0),
                policy(me, three, PolicyDir::Out, 4, 0xc5),
            ]),
        )
        .ok(
            Request::Addresses,
            Fact::Addresses(vec![ip("127.0.0.1"), ip(me)]),
        );
    let f = three_nodes_in_ovn(f).run(&IpsecXfrm);
    snapshot!("ipsec.xfrm", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(
        f.summary,
        "IPsec is wanted but missing 198.18.3.183->198.18.3.181 (no SA, and no policy demands one: nothing encrypts that geneve)"
    );
    assert_eq!(f.evidence["sa_count"], 6);
    assert_eq!(f.evidence["expected"], 8);
    assert_eq!(f.evidence["sas"][0]["direction"], "out");
    assert_eq!(f.evidence["sas"][0]["selector"], "udp dport 6081");
}

#[test]
fn ipsec_policy_names_an_sa_without_a_policy_as_plaintext() {
    // The same node and OVN rows: with spx2 ovs-monitor-ipsec's 4 SAs and
    // their policies; with spx3 two SAs and no policy (removed behind
    // charon's back): its geneve leaves in plaintext beside them.
    let (me, two, three) = ("198.18.3.181", "198.18.3.182", "198.18.3.183");
    let f = Facts::new()
        .config(&config(true, 3))
        .ok(
            Request::XfrmPolicies,
            Fact::XfrmPolicies(vec![
                policy(me, two, PolicyDir::Out, 2, 0xc1),
                policy(two, me, PolicyDir::In, 1, 0),
            ]),
        )
        .ok(
            Request::XfrmStates,
            Fact::Xfrm(vec![
                sa(me, two, 0xc1, 2, true),
                sa(two, me, 0xc3, 1, true),
                sa(me, three, 0xc5, 4, true),
                sa(three, me, 0xc6, 3, true),
            ]),
        )
        .ok(
            Request::Addresses,
            Fact::Addresses(vec![ip("127.0.0.1"), ip(me)]),
        );
    let f = three_nodes_in_ovn(f).run(&crate::checks::ipsec_policy::IpsecPolicy);
    snapshot!("ipsec.policy", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.evidence["peers"][0]["out"], "encrypted");
    assert_eq!(f.evidence["peers"][1]["out"], "plaintext");
    assert_eq!(f.evidence["peers"][1]["sas"], 2);
}

#[test]
fn ipsec_errors_replays_the_recorded_window() {
    // The kernel lab's stopped node: XfrmInNoStates +3 while its peers
    // still encrypted to it, in the 1.5 s the live run measured.
    let text = |v: u64| crate::checks::ipsec_errors::tests::stat_text(&[("XfrmInNoStates", v)]);
    let f = Facts::new()
        .config(&config(true, 3))
        .file("/proc/net/xfrm_stat", &text(21))
        .file("/proc/net/xfrm_stat", &text(24))
        .window(2, 1502)
        .run(&crate::checks::ipsec_errors::IpsecErrors);
    snapshot!("ipsec.errors", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.evidence["window_ms"], 1500);
    assert_eq!(f.evidence["ipsec_wanted"], true);
    // A kernel without the counters: a skip that says so.
    let f = Facts::new()
        .no_file("/proc/net/xfrm_stat")
        .run(&crate::checks::ipsec_errors::IpsecErrors);
    snapshot!("ipsec.errors", f);
    assert_eq!(f.status, Status::Skip, "{}", f.summary);
}
