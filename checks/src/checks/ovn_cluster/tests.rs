//! The judgement of `ovn.cluster` on recorded `_Server` rows. Every row
//! here was captured on 2026-12-01 from real `ovsdb-server` 3.1.0
//! processes (Debian 12: openvswitch 3.1.0-2+deb12u1, with ovn-central
//! 23.03.1's ovn-nb.ovsschema), three-member OVN_Northbound rafts made on
//! 127.0.0.1 with `ovsdb-tool create-cluster`/`join-cluster`, read with
//! `ovsdb-client transact tcp:… '["_Server",{"op":"select","table":
//! "Database","where":[["name","==","OVN_Northbound"]],"columns":[…]}]'`:
//! a healthy raft; the same after two of its members were killed (the
//! survivor, 5 s later); a follower cut off with `cluster/failure-test
//! stop-raft-rpc` while the leader committed (index 8 against 19); a
//! member still joining a cluster whose other member is gone; the leader
//! of another cluster. Rows marked "constructed" are not captures: they
//! change one field of a captured row, to reach a state a test cannot make
//! happen on demand (two leaders at once).

use std::net::IpAddr;
use std::time::Duration;

use serde_json::{json, Value};

use crate::endpoint::Endpoint;
use crate::facts::ovsdb::raft::{server_rows, LocalChassis, SbChassis, ServerDb};
use crate::finding::{Finding, Status};
use crate::schema_check;

use super::analyse::{analyse, Foreign, Problem};
use super::facts::{Db, DbFacts, DbSide, Member, MemberRead, MemberRef, OvnFacts, Read};
use super::OvnClusterEvidence;

const CID: &str = "3d87b0e3-0c5e-4a95-82cc-66e3869a9dbe";

fn captured(v: Value) -> ServerDb {
    let mut rows = server_rows(&[serde_json::from_value(v).unwrap()]).unwrap();
    rows.remove(0)
}

/// The healthy raft's leader (n0), and its followers (n1, n2), index 5.
fn leader() -> ServerDb {
    captured(
        json!({"cid":["uuid",CID],"connected":true,"index":5,"leader":true,
        "model":"clustered","name":"OVN_Northbound",
        "sid":["uuid","0697d896-939e-47ce-8d7b-e583e135d88c"]}),
    )
}
fn follower1() -> ServerDb {
    captured(
        json!({"cid":["uuid",CID],"connected":true,"index":5,"leader":false,
        "model":"clustered","name":"OVN_Northbound",
        "sid":["uuid","5944df53-d15b-4f80-bcea-279e623bea53"]}),
    )
}
fn follower2() -> ServerDb {
    captured(
        json!({"cid":["uuid",CID],"connected":true,"index":5,"leader":false,
        "model":"clustered","name":"OVN_Northbound",
        "sid":["uuid","c654cb45-206c-4e4e-b7eb-0c457aee3e00"]}),
    )
}
/// follower2, 5 s after the other two were killed.
fn survivor() -> ServerDb {
    captured(
        json!({"cid":["uuid",CID],"connected":false,"index":5,"leader":false,
        "model":"clustered","name":"OVN_Northbound",
        "sid":["uuid","c654cb45-206c-4e4e-b7eb-0c457aee3e00"]}),
    )
}
/// The leader of a cluster of its own.
fn other_leader() -> ServerDb {
    captured(
        json!({"cid":["uuid","782c9bc8-5143-4039-8143-5cdff14835e9"],"connected":true,
        "index":2,"leader":true,"model":"clustered","name":"OVN_Northbound",
        "sid":["uuid","1974d68b-16e0-427c-8c45-6f0581d99e19"]}),
    )
}
/// A member still joining (its cluster's other member gone).
fn joining() -> ServerDb {
    captured(
        json!({"cid":["uuid","00000000-0000-0000-0000-000000000000"],"connected":false,
        "index":["set",[]],"leader":false,"model":"clustered","name":"OVN_Northbound",
        "sid":["uuid","b6600099-f3b6-44d9-90db-224cd5e45e5e"]}),
    )
}
/// A standalone database (`ovsdb-tool create`).
fn standalone() -> ServerDb {
    captured(
        json!({"cid":["set",[]],"connected":true,"index":["set",[]],"leader":true,
        "model":"standalone","name":"OVN_Northbound","sid":["set",[]]}),
    )
}
/// The raft with a follower cut off from it: leader, follower, cut.
fn lagging_raft() -> [ServerDb; 3] {
    let cid = "f9807868-6c97-45a1-838e-cf3dc6fca988";
    let row = |leader: bool, index: u64, sid: &str| {
        captured(
            json!({"cid":["uuid",cid],"connected":true,"index":index,"leader":leader,
            "model":"clustered","name":"OVN_Northbound","sid":["uuid",sid]}),
        )
    };
    [
        row(true, 19, "d9716fe8-caaa-41a1-aae3-52959f55100a"),
        row(false, 19, "3c0acdde-1b14-4f25-b9d8-2a6010ca5886"),
        row(false, 8, "e2066a6b-ebee-47ec-b217-548fce237475"),
    ]
}

fn member(i: usize, db: Db) -> MemberRef {
    let port = match db {
        Db::Nb => 6641,
        Db::Sb => 6642,
    };
    MemberRef {
        endpoint: Endpoint::parse(&format!("tcp:198.18.9.{}:{port}", i + 1)).unwrap(),
        node: Some(format!("n{i}")),
    }
}

/// A database whose members said `start` then `end`.
fn db(db: Db, reads: Vec<(MemberRead, MemberRead)>) -> DbSide {
    DbSide::Read(DbFacts {
        db,
        members: reads
            .into_iter()
            .enumerate()
            .map(|(i, (start, end))| Member {
                who: member(i, db),
                start,
                end,
            })
            .collect(),
    })
}

/// The same row at both ends of the window.
fn still(r: ServerDb) -> (MemberRead, MemberRead) {
    (MemberRead::Row(r.clone()), MemberRead::Row(r))
}

fn refused() -> (MemberRead, MemberRead) {
    let why = "Connection refused (os error 111)".to_owned();
    (MemberRead::Silent(why.clone()), MemberRead::Silent(why))
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn chassis(name: &str, encap: &str) -> SbChassis {
    SbChassis {
        name: name.into(),
        hostname: None,
        encap_ips: vec![ip(encap)],
    }
}

/// n0 of three nodes: healthy NB and SB, a chassis per node, its own
/// identity agreeing.
fn healthy() -> OvnFacts {
    OvnFacts {
        node: Some("n0".into()),
        nodes: vec!["n0".into(), "n1".into(), "n2".into()],
        nb: db(
            Db::Nb,
            vec![still(leader()), still(follower1()), still(follower2())],
        ),
        sb: db(
            Db::Sb,
            vec![still(leader()), still(follower1()), still(follower2())],
        ),
        lag_bound: Some(Duration::from_millis(990)),
        chassis: Read::Answered {
            value: vec![
                chassis("n0", "198.18.0.1"),
                chassis("n1", "198.18.0.2"),
                chassis("n2", "198.18.0.3"),
            ],
            from: member(0, Db::Sb).endpoint,
        },
        local: Read::Answered {
            value: LocalChassis {
                system_id: Some("n0".into()),
                encap_ips: vec![ip("198.18.0.1")],
            },
            from: Endpoint::parse("unix:/var/run/openvswitch/db.sock").unwrap(),
        },
    }
}

/// The follower n2 cut off from raft (recorded: index 8 against 19).
fn lagging() -> OvnFacts {
    let [l, f, cut] = lagging_raft();
    let mut facts = healthy();
    facts.nb = db(Db::Nb, vec![still(l), still(f), still(cut)]);
    facts
}

/// n0 and n1 killed; n2 left alone (recorded).
fn two_lost() -> OvnFacts {
    let mut facts = healthy();
    facts.nb = db(Db::Nb, vec![refused(), refused(), still(survivor())]);
    facts
}

/// n2's address answers for another cluster.
fn foreign() -> OvnFacts {
    let mut facts = healthy();
    facts.nb = db(
        Db::Nb,
        vec![still(leader()), still(follower1()), still(other_leader())],
    );
    facts
}

/// n1 says it leads as well (constructed).
fn two_leaders() -> OvnFacts {
    let mut second = follower1();
    second.leader = true;
    let mut facts = healthy();
    facts.nb = db(
        Db::Nb,
        vec![still(leader()), still(second), still(follower2())],
    );
    facts
}

/// Standalone NB and SB for three nodes.
fn standalone_for_three() -> OvnFacts {
    let mut facts = healthy();
    facts.nb = db(Db::Nb, vec![still(standalone())]);
    facts.sb = db(Db::Sb, vec![still(standalone())]);
    facts
}

/// Four nodes, two NB members listed.
fn two_listed() -> OvnFacts {
    let mut facts = healthy();
    facts.nodes.push("n3".into());
    facts.chassis = Read::NotAsked;
    facts.nb = db(Db::Nb, vec![still(leader()), still(follower1())]);
    facts
}

/// n2's address in the NB list serves SB.
fn wrong_endpoint() -> OvnFacts {
    let sb_only = MemberRead::Lacks(vec!["OVN_Southbound".into()]);
    let mut facts = healthy();
    facts.nb = db(
        Db::Nb,
        vec![
            still(leader()),
            still(follower1()),
            (sb_only.clone(), sb_only),
        ],
    );
    facts
}

/// n3 without a chassis, a retired chassis, n0's chassis at an old
/// address, n1's at an address only n1's own report could check.
fn chassis_wrong() -> OvnFacts {
    let mut facts = healthy();
    facts.nodes.push("n3".into());
    if let Read::Answered { value, .. } = &mut facts.chassis {
        value.push(chassis("retired", "198.18.0.9"));
        value[1].encap_ips = vec![ip("198.18.0.22")];
    }
    if let Read::Answered { value, .. } = &mut facts.local {
        value.encap_ips = vec![ip("198.18.0.99")];
    }
    facts
}

/// n0's system-id a package-generated uuid, under which it registered.
const PACKAGE_ID: &str = "4d1e3c1a-5b8f-4f3e-9c1d-2a7b6e0f9d88";
fn registered_as_package_id() -> OvnFacts {
    let mut facts = healthy();
    if let Read::Answered { value, .. } = &mut facts.chassis {
        value[0].name = PACKAGE_ID.into();
    }
    if let Read::Answered { value, .. } = &mut facts.local {
        value.system_id = Some(PACKAGE_ID.into());
    }
    facts
}

/// No SB member answers.
fn sb_silent() -> OvnFacts {
    let mut facts = healthy();
    facts.sb = db(Db::Sb, vec![refused(), refused(), refused()]);
    facts.chassis = Read::Failed("no member of OVN_Southbound answered".into());
    facts
}

/// n1 reads OVN; this node's Open_vSwitch is down.
fn local_down() -> OvnFacts {
    let mut facts = healthy();
    facts.nb = DbSide::Elsewhere("n1".into());
    facts.sb = DbSide::Elsewhere("n1".into());
    facts.chassis = Read::NotAsked;
    facts.lag_bound = None;
    facts.local = Read::Failed("no socket at /var/run/openvswitch/db.sock".into());
    facts
}

/// Judged as the check judges, every verdict checked against the schema.
fn judge(f: &OvnFacts) -> Finding {
    schema_check::valid("ovn.cluster", super::judge(f))
}

fn codes(f: &Finding) -> Vec<(String, &'static str)> {
    f.findings
        .iter()
        .filter(|s| s.status() != Status::Pass)
        .map(|s| (s.subject.to_string(), s.kind.name))
        .collect()
}

#[test]
fn a_healthy_raft_passes_with_a_subject_per_member_and_chassis() {
    let f = healthy();
    assert_eq!(analyse(&f), []);
    let v = judge(&f);
    assert_eq!(v.status, Status::Pass, "{}", v.summary);
    assert_eq!(
        v.summary,
        "OVN_Northbound raft of 3, all connected, leader tcp:198.18.9.1:6641 (n0), index 5; \
         OVN_Southbound raft of 3, all connected, leader tcp:198.18.9.1:6642 (n0), index 5; \
         3 SB chassis, one per node (n0, n1, n2); this node's chassis id n0 with ovn-encap-ip 198.18.0.1"
    );
    assert_eq!(v.findings.len(), 10);
    let e: OvnClusterEvidence = v.evidence_as().unwrap();
    assert_eq!(e.nb.unwrap().leader.as_deref(), Some("tcp:198.18.9.1:6641"));
}

#[test]
fn a_member_cut_off_from_raft_lags_by_the_entries_it_never_applied() {
    let mut facts = lagging();
    let got = analyse(&facts);
    assert_eq!(
        got,
        [Problem::Lagging {
            db: Db::Nb,
            member: member(2, Db::Nb),
            index: Some(8),
            reference: 19,
            behind: Some(11),
            bound: Duration::from_millis(990),
            leader: Some(member(0, Db::Nb)),
        }]
    );
    let v = judge(&facts);
    assert_eq!(v.status, Status::Warn);
    assert_eq!(
        v.summary,
        "tcp:198.18.9.3:6641 (n2) has applied index 8, still below the 19 another member had \
         applied at least 1.0 s earlier (11 entries behind): its clients read an old OVN_Northbound"
    );
    assert!(v.remediation[0].starts_with("on n2: `ovn-appctl -t /var/run/ovn/ovnnb_db.ctl cluster/status OVN_Northbound` shows its log; on n0 the same command shows its match_index"));
    // The kick names it by the server id it answered with.
    assert!(
        v.remediation[1].ends_with(
            "on n0, `ovn-appctl -t /var/run/ovn/ovnnb_db.ctl cluster/kick OVN_Northbound e2066a6b-ebee-47ec-b217-548fce237475`"
        ),
        "{:?}",
        v.remediation
    );

    // Readings too close together to bound a lag: not judged, and said.
    facts.lag_bound = Some(Duration::from_millis(200));
    assert_eq!(analyse(&facts), []);
    let v = judge(&facts);
    assert!(
        v.summary.contains(
            "(lag not judged: the readings were 200 ms apart, under 500 ms; --sample 1s judges it)"
        ),
        "{}",
        v.summary
    );
}

#[test]
fn a_follower_one_commit_behind_at_the_start_that_caught_up_is_not_lagging() {
    let mut behind = follower1();
    behind.index = Some(4); // constructed: the entry not yet applied
    let mut facts = healthy();
    facts.nb = db(
        Db::Nb,
        vec![
            still(leader()),
            (
                MemberRead::Row(behind.clone()),
                MemberRead::Row(follower1()),
            ),
            still(follower2()),
        ],
    );
    assert_eq!(analyse(&facts), []);
    // Still there at the end: it is.
    facts.nb = db(
        Db::Nb,
        vec![still(leader()), still(behind), still(follower2())],
    );
    assert!(matches!(
        analyse(&facts)[..],
        [Problem::Lagging {
            index: Some(4),
            reference: 5,
            behind: Some(1),
            ..
        }]
    ));
}

#[test]
fn two_members_lost_leave_the_survivor_without_a_quorum() {
    let facts = two_lost();
    let got = analyse(&facts);
    assert!(
        matches!(
            got[0],
            Problem::MemberDown {
                healthy: 0,
                listed: 3,
                ..
            }
        ),
        "{got:?}"
    );
    assert!(matches!(got[1], Problem::MemberDown { .. }), "{got:?}");
    assert!(matches!(got[2], Problem::Disconnected { .. }), "{got:?}");
    assert_eq!(
        got[3],
        Problem::NoLeader {
            db: Db::Nb,
            connected: 0,
            listed: 3
        }
    );
    let v = judge(&facts);
    assert_eq!(v.kind.name, "no-leader", "the worst heads: {}", v.summary);
    assert!(
        v.summary.contains("OVN_Northbound has no leader: 0 of 3 members answer connected and a majority is 2, so the raft has lost its quorum"),
        "{}",
        v.summary
    );
    assert!(
        v.summary.contains("tcp:198.18.9.1:6641 (n0) does not answer (Connection refused (os error 111)) while 0 of 3 NB members do: the raft has lost its quorum"),
        "{}",
        v.summary
    );
}

#[test]
fn a_member_of_another_cluster_is_foreign_and_not_a_second_leader() {
    let facts = foreign();
    assert_eq!(
        analyse(&facts),
        [Problem::ForeignMember {
            db: Db::Nb,
            member: member(2, Db::Nb),
            why: Foreign::OtherCluster {
                cid: "782c9bc8-5143-4039-8143-5cdff14835e9".into(),
                cluster: CID.into(),
            },
        }]
    );
    let v = judge(&facts);
    assert!(
        v.remediation[0]
            .starts_with("rejoin it to this cluster on n2: `systemctl stop ovn-ovsdb-server-nb`"),
        "{:?}",
        v.remediation
    );
    assert!(v.remediation[0].contains("`ovsdb-tool join-cluster /var/lib/ovn/ovnnb_db.db OVN_Northbound tcp:198.18.9.3:6643 tcp:198.18.9.1:6643`"), "{:?}", v.remediation);
}

#[test]
fn a_member_still_joining_is_disconnected_not_foreign() {
    let mut facts = healthy();
    facts.nb = db(
        Db::Nb,
        vec![still(leader()), still(follower1()), still(joining())],
    );
    assert_eq!(
        analyse(&facts),
        [Problem::Disconnected {
            db: Db::Nb,
            member: member(2, Db::Nb),
            leader: Some(member(0, Db::Nb)),
        }]
    );
    // A raft of only joining members has no cluster id to vote for.
    facts.nb = db(Db::Nb, vec![still(joining()), refused(), refused()]);
    let got = analyse(&facts);
    assert!(
        got.iter()
            .all(|p| !matches!(p, Problem::ForeignMember { .. })),
        "{got:?}"
    );
}

#[test]
fn two_leaders_of_one_cluster_are_named() {
    let facts = two_leaders();
    let got = analyse(&facts);
    assert_eq!(
        got,
        [Problem::SeveralLeaders {
            db: Db::Nb,
            leaders: vec![member(0, Db::Nb), member(1, Db::Nb)],
        }]
    );
    assert_eq!(judge(&facts).kind.name, "several-leaders");
}

#[test]
fn standalone_is_spinifexs_layout_below_three_nodes_only() {
    let mut facts = healthy();
    facts.nodes = vec!["n0".into()];
    facts.chassis = Read::Answered {
        value: vec![chassis("n0", "198.18.0.1")],
        from: member(0, Db::Sb).endpoint,
    };
    facts.nb = db(Db::Nb, vec![still(standalone())]);
    facts.sb = db(Db::Sb, vec![still(standalone())]);
    assert_eq!(analyse(&facts), []);
    let v = judge(&facts);
    assert!(
        v.summary.starts_with("OVN_Northbound standalone at tcp:198.18.9.1:6641 (n0) (Spinifex's layout below 3 nodes: it tolerates no loss of its host)"),
        "{}",
        v.summary
    );

    let facts = standalone_for_three();
    let got = analyse(&facts);
    assert!(
        matches!(
            &got[..],
            [
                Problem::NotClustered {
                    nodes: 3,
                    listed: 1,
                    ..
                },
                Problem::NotClustered { .. }
            ]
        ),
        "{got:?}"
    );
    assert_eq!(judge(&facts).kind.name, "not-clustered");

    // Two standalone servers listed as one: each is its own database.
    let mut facts = facts;
    facts.nodes = vec!["n0".into(), "n1".into()];
    facts.chassis = Read::NotAsked;
    facts.sb = DbSide::Unnamed("no SB".into());
    facts.nb = db(Db::Nb, vec![still(standalone()), still(standalone())]);
    let got = analyse(&facts);
    assert!(
        matches!(
            &got[..],
            [
                Problem::NotClustered { listed: 2, .. },
                Problem::NotClustered { listed: 2, .. }
            ]
        ),
        "no member count for a list that is no raft: {got:?}"
    );
    assert!(judge(&facts)
        .summary
        .contains("yet the list names 2 servers: each is a database of its own"));
}

#[test]
fn the_list_must_be_the_three_members_spinifex_runs() {
    let mut facts = two_listed();
    let got = analyse(&facts);
    assert_eq!(
        got,
        [Problem::MemberCount {
            db: Db::Nb,
            listed: 2,
            nodes: 4,
            same_server: vec![],
        }]
    );
    let v = judge(&facts);
    assert_eq!(v.status, Status::Warn);
    assert!(
        v.summary
            .starts_with("the NB list names 2 members: 2 of 2 tolerate no failure"),
        "{}",
        v.summary
    );

    // One server named twice (two addresses of one host).
    facts.nb = db(
        Db::Nb,
        vec![still(leader()), still(follower1()), still(follower1())],
    );
    let got = analyse(&facts);
    assert_eq!(
        got,
        [Problem::MemberCount {
            db: Db::Nb,
            listed: 3,
            nodes: 4,
            same_server: vec![(member(1, Db::Nb), member(2, Db::Nb))],
        }]
    );
    assert!(judge(&facts)
        .summary
        .contains("tcp:198.18.9.2:6641 (n1) and tcp:198.18.9.3:6641 (n2) are one server"));
}

#[test]
fn a_member_serving_another_database_is_a_wrong_endpoint() {
    let v = judge(&wrong_endpoint());
    assert_eq!(v.kind.name, "foreign-member");
    assert!(v.summary.contains("tcp:198.18.9.3:6641 (n2) answers but serves OVN_Southbound, not OVN_Northbound: a wrong endpoint in the list"), "{}", v.summary);
    assert!(
        v.remediation[0].contains("ovn_nb_addr under [nodes.*.vpcd]"),
        "{:?}",
        v.remediation
    );
}

#[test]
fn chassis_missing_stale_misplaced_and_this_nodes_id() {
    let facts = chassis_wrong();
    let got = analyse(&facts);
    assert_eq!(
        got,
        [
            Problem::EncapMismatch {
                node: "n0".into(),
                sb: vec![ip("198.18.0.1")],
                local: vec![ip("198.18.0.99")],
            },
            Problem::MissingChassis {
                node: "n3".into(),
                registered_as: None
            },
            Problem::StaleChassis {
                name: "retired".into(),
                hostname: None,
                encap_ips: vec![ip("198.18.0.9")],
                this_nodes_id: false
            },
        ],
        "n1's chassis address is not known here: another node's own report has it"
    );
    let v = judge(&facts);
    assert_eq!(
        codes(&v),
        [
            ("chassis n0".to_owned(), "encap-mismatch"),
            ("chassis n3".to_owned(), "missing-chassis"),
            ("chassis retired".to_owned(), "stale-chassis")
        ]
    );
    assert!(v.remediation.contains(&"`ovn-sbctl --db=\"tcp:198.18.9.1:6642,tcp:198.18.9.2:6642,tcp:198.18.9.3:6642\" chassis-del retired`".to_owned()), "{:?}", v.remediation);

    // Its system-id a package-generated uuid under which it registered.
    let facts = registered_as_package_id();
    let id = PACKAGE_ID;
    let got = analyse(&facts);
    assert_eq!(
        got,
        [
            Problem::ChassisIdMismatch {
                node: "n0".into(),
                system_id: Some(id.into())
            },
            Problem::MissingChassis {
                node: "n0".into(),
                registered_as: Some(id.into())
            },
            Problem::StaleChassis {
                name: id.into(),
                hostname: None,
                encap_ips: vec![ip("198.18.0.1")],
                this_nodes_id: true
            },
        ]
    );
    let v = judge(&facts);
    assert_eq!(
        v.kind.name, "missing-chassis",
        "declared first among the fails"
    );
}

#[test]
fn a_node_that_does_not_read_ovn_judges_its_own_identity_alone() {
    let mut facts = healthy();
    facts.nb = DbSide::Elsewhere("n1".into());
    facts.sb = DbSide::Elsewhere("n1".into());
    facts.chassis = Read::NotAsked;
    facts.lag_bound = None;
    let v = judge(&facts);
    assert_eq!(v.status, Status::Pass, "{}", v.summary);
    assert_eq!(
        v.summary,
        "this node's chassis id n0 with ovn-encap-ip 198.18.0.1; NB and SB are read once, by n1 (cluster.chassis compares this node's chassis with SB)"
    );
    let e: OvnClusterEvidence = v.evidence_as().unwrap();
    assert_eq!(e.read_by.as_deref(), Some("n1"));
    assert_eq!(e.local.unwrap().system_id.as_deref(), Some("n0"));

    if let Read::Answered { value, .. } = &mut facts.local {
        value.system_id = None;
    }
    let v = judge(&facts);
    assert_eq!(v.kind.name, "chassis-id-mismatch");
    assert_eq!(
        v.remediation,
        ["on n0: `ovs-vsctl set Open_vSwitch . external_ids:system-id=n0`, `systemctl restart ovn-controller`"]
    );

    let v = judge(&local_down());
    assert_eq!((v.status, v.kind.name), (Status::Error, "local-unreadable"));

    facts.local = Read::Denied("root to connect to unix:/var/run/openvswitch/db.sock".into());
    let v = judge(&facts);
    assert_eq!(v.status, Status::Skip);
    assert_eq!(
        v.needs.as_deref(),
        Some("root to connect to unix:/var/run/openvswitch/db.sock")
    );
}

#[test]
fn with_no_ovn_named_the_agreeing_identity_leaves_a_skip_saying_why() {
    let mut facts = healthy();
    facts.nb =
        DbSide::Unnamed("the config has no [nodes.*.vpcd] ovn_nb_addr (pass --nb-db)".into());
    facts.sb =
        DbSide::Unnamed("the config has no [nodes.*.vpcd] ovn_sb_addr (pass --sb-db)".into());
    facts.chassis = Read::NotAsked;
    let v = judge(&facts);
    assert_eq!(v.status, Status::Skip, "{}", v.summary);
    assert_eq!(
        v.summary,
        "not applicable here: the config has no [nodes.*.vpcd] ovn_nb_addr (pass --nb-db); the config has no [nodes.*.vpcd] ovn_sb_addr (pass --sb-db); this node's chassis id n0 with ovn-encap-ip 198.18.0.1"
    );
    // A wrong identity still fails, as on every other node.
    if let Read::Answered { value, .. } = &mut facts.local {
        value.system_id = Some("other".into());
    }
    assert_eq!(judge(&facts).kind.name, "chassis-id-mismatch");
}

#[test]
fn no_member_answering_is_an_error() {
    let facts = sb_silent();
    let got = analyse(&facts);
    assert!(
        matches!(&got[..], [Problem::Unreachable { db: Db::Sb, silent }] if silent.len() == 3),
        "the chassis, unread for the same reason, are not named twice: {got:?}"
    );
    let v = judge(&facts);
    assert_eq!((v.status, v.kind.name), (Status::Error, "db-unreachable"));
}

/// Every kind the check declares is reached by a scenario here, each
/// verdict is valid against the schema, and every problem that is a fail
/// or a warning says how to fix it.
#[test]
fn every_kind_is_reached_and_every_problem_has_its_fix() {
    use crate::kind::Kinds;
    let scenarios = [
        healthy(),
        lagging(),
        two_lost(),
        foreign(),
        two_leaders(),
        standalone_for_three(),
        two_listed(),
        wrong_endpoint(),
        chassis_wrong(),
        registered_as_package_id(),
        sb_silent(),
        local_down(),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for facts in &scenarios {
        let v = judge(facts);
        seen.extend(v.findings.iter().map(|s| s.kind.name));
        for p in analyse(facts) {
            let said = super::words::said(&p, facts);
            let status = said.kind.doc().status;
            assert!(!said.subject.is_empty() && !said.text.is_empty());
            assert!(
                !matches!(status, Status::Fail | Status::Warn) || !said.fixes.is_empty(),
                "{p:?} has no fix"
            );
        }
    }
    for kind in super::OvnClusterKind::DOCS {
        assert!(
            seen.contains(kind.name),
            "no scenario reaches {}",
            kind.name
        );
    }
}
