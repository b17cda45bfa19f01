//! `ovn.cluster`'s `run()` on recorded facts: every question it asks
//! through the seam (each member's `_Server` rows at both ends of the
//! window, the clock around each reading, the SB chassis from the leader
//! the first reading found, this node's Open_vSwitch identity) answered
//! with rows captured from real `ovsdb-server` 3.1.0 rafts (Debian 12; see
//! `checks/ovn_cluster/tests.rs` for how), moved to a cluster's addresses.

use std::time::Duration;

use serde_json::{json, Value};

use super::Facts;
use crate::checks::ovn_cluster::OvnCluster;
use crate::endpoint::Endpoint;
use crate::facts::ovsdb::raft::{
    CHASSIS_COLUMNS, DATABASE_TABLE, ENCAP_COLUMNS, OVS_IDENTITY_COLUMNS, SERVER_COLUMNS, SERVER_DB,
};
use crate::facts::ovsdb::{Answer, Row};
use crate::facts::ProbeError;
use crate::finding::Status;
use crate::host::{Fact, Request, SelectOp};
use crate::snapshot::snapshot;

fn nb(i: usize) -> String {
    format!("tcp:198.18.3.18{i}:6641")
}

fn sb(i: usize) -> String {
    format!("tcp:198.18.3.18{i}:6642")
}

fn config() -> String {
    let list = |f: fn(usize) -> String| (1..=3).map(f).collect::<Vec<_>>().join(",");
    let mut c = format!(
        "node = \"spx1\"\n[network]\nipsec_enabled = true\n\
         [nodes.spx1]\nhost = \"198.18.3.181\"\n[nodes.spx1.vpcd]\n\
         ovn_nb_addr = \"{}\"\novn_sb_addr = \"{}\"\n",
        list(nb),
        list(sb)
    );
    for n in 2..=3 {
        c.push_str(&format!("[nodes.spx{n}]\nhost = \"198.18.3.18{n}\"\n"));
    }
    c
}

fn select_op(table: &str, columns: &[&str]) -> SelectOp {
    SelectOp {
        table: table.into(),
        columns: columns.iter().map(|c| (*c).to_owned()).collect(),
        conditions: json!([]),
    }
}

fn request(endpoints: &[String], db: &str, selects: Vec<SelectOp>) -> Request {
    Request::Ovsdb {
        endpoints: endpoints
            .iter()
            .map(|e| Endpoint::parse(e).unwrap())
            .collect(),
        db: db.into(),
        selects,
    }
}

fn rows(endpoint: &str, tables: Vec<Value>) -> Fact {
    Fact::Ovsdb(Answer {
        value: tables
            .into_iter()
            .map(|t| serde_json::from_value::<Vec<Row>>(t).unwrap())
            .collect(),
        endpoint: Endpoint::parse(endpoint).unwrap(),
        passed_over: Vec::new(),
    })
}

/// `member` asked for its `_Server` rows.
fn server(member: &str) -> Request {
    request(
        &[member.to_owned()],
        SERVER_DB,
        vec![select_op(DATABASE_TABLE, &SERVER_COLUMNS)],
    )
}

/// A captured `_Server` row (name, cid, sid as ovsdb-server 3.1 wrote
/// them), with its role and index.
fn row(name: &str, cid: &str, sid: &str, leader: bool, index: u64) -> Value {
    json!([{"cid":["uuid",cid],"connected":true,"index":index,"leader":leader,
            "model":"clustered","name":name,"sid":["uuid",sid]}])
}

#[test]
fn a_lagging_nb_member_and_a_silent_sb_member_are_named_and_sb_is_read_from_its_leader() {
    let nb_cid = "f9807868-6c97-45a1-838e-cf3dc6fca988";
    let sb_cid = "3d87b0e3-0c5e-4a95-82cc-66e3869a9dbe";
    let mut facts = Facts::new().config(&config());
    // The clock around each reading, and across_window's own two reads:
    // the second reading begins 990 ms after the first ended.
    for ms in [0, 10, 10, 1000, 1010, 1010] {
        facts = facts.ok(Request::Clock, Fact::Elapsed(Duration::from_millis(ms)));
    }
    // NB: spx3 cut off from raft, at 8 while the others are at 19.
    for (i, leader, index, sid) in [
        (1, true, 19, "d9716fe8-caaa-41a1-aae3-52959f55100a"),
        (2, false, 19, "3c0acdde-1b14-4f25-b9d8-2a6010ca5886"),
        (3, false, 8, "e2066a6b-ebee-47ec-b217-548fce237475"),
    ] {
        facts = facts.ok(
            server(&nb(i)),
            rows(
                &nb(i),
                vec![row("OVN_Northbound", nb_cid, sid, leader, index)],
            ),
        );
    }
    // SB: spx2 refuses; spx3 leads, so the chassis are asked of it first.
    facts = facts
        .answer(
            server(&sb(2)),
            Err(ProbeError::Other("Connection refused (os error 111)".into())),
        )
        .ok(
            server(&sb(1)),
            rows(
                &sb(1),
                vec![row("OVN_Southbound", sb_cid, "5944df53-d15b-4f80-bcea-279e623bea53", false, 7)],
            ),
        )
        .ok(
            server(&sb(3)),
            rows(
                &sb(3),
                vec![row("OVN_Southbound", sb_cid, "0697d896-939e-47ce-8d7b-e583e135d88c", true, 7)],
            ),
        )
        .ok(
            request(
                &[sb(3), sb(1), sb(2)],
                "OVN_Southbound",
                vec![
                    select_op("Chassis", &CHASSIS_COLUMNS),
                    select_op("Encap", &ENCAP_COLUMNS),
                ],
            ),
            rows(
                &sb(3),
                vec![
                    json!([
                        {"_uuid":["uuid","c1"],"name":"spx1","hostname":"spx1","encaps":["uuid","e1"]},
                        {"_uuid":["uuid","c2"],"name":"spx2","hostname":"spx2","encaps":["uuid","e2"]},
                        {"_uuid":["uuid","c3"],"name":"spx3","hostname":"spx3","encaps":["uuid","e3"]},
                    ]),
                    json!([
                        {"_uuid":["uuid","e1"],"type":"geneve","ip":"198.18.4.181"},
                        {"_uuid":["uuid","e2"],"type":"geneve","ip":"198.18.4.182"},
                        {"_uuid":["uuid","e3"],"type":"geneve","ip":"198.18.4.183"},
                    ]),
                ],
            ),
        )
        .ok(
            request(
                &["unix:/var/run/openvswitch/db.sock".to_owned()],
                "Open_vSwitch",
                vec![select_op("Open_vSwitch", &OVS_IDENTITY_COLUMNS)],
            ),
            rows(
                "unix:/var/run/openvswitch/db.sock",
                vec![json!([{"external_ids":["map",[
                    ["hostname","spx1"],["ovn-encap-ip","198.18.4.181"],
                    ["ovn-encap-type","geneve"],["system-id","spx1"]]]}])],
            ),
        );
    let f = facts.run(&OvnCluster);
    snapshot!("ovn.cluster", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.kind.name, "member-down");
    let named: Vec<(&str, &str)> = f
        .findings
        .iter()
        .filter(|s| s.status() != Status::Pass)
        .map(|s| (s.subject.as_str(), s.kind.name))
        .collect();
    assert_eq!(
        named,
        [
            ("OVN_Northbound tcp:198.18.3.183:6641 (spx3)", "lagging"),
            ("OVN_Southbound tcp:198.18.3.182:6642 (spx2)", "member-down"),
        ]
    );
    assert!(
        f.summary
            .contains("has applied index 8, still below the 19 another member had applied at least 1.0 s earlier (11 entries behind)"),
        "{}",
        f.summary
    );
    let e: crate::checks::ovn_cluster::OvnClusterEvidence = f.evidence_as().unwrap();
    assert_eq!(e.lag_bound_ms, Some(990));
    assert_eq!(
        e.chassis_read_from.as_deref(),
        Some("tcp:198.18.3.183:6642")
    );
    assert_eq!(e.chassis.unwrap().len(), 3);
}
