//! `ovn.cluster` against real clustered `ovsdb-server`s: a raft of three
//! for NB and one for SB, made with `ovsdb-tool create-cluster` and
//! `join-cluster` from Debian's ovn-central schemas, on loopback addresses
//! of their own (support::ovsdb_server::OvsdbCluster), the chassis written
//! with `ovn-sbctl` and this node's identity in a real Open_vSwitch
//! database. The oracle is `ovsdb-client` (and `ovs-appctl cluster/status`).

use std::path::PathBuf;

use serde_json::Value;

use crate::support::ovsdb_server::{OvsdbCluster, OvsdbServer};
use crate::support::{check, run_json, spx, write_config};

/// Three DB nodes n0..n2 (NB and SB member `i` on node `i`'s address, as
/// Spinifex lays them out), a chassis per node, and this node's (n0's)
/// Open_vSwitch row.
struct Lab {
    nb: OvsdbCluster,
    sb: OvsdbCluster,
    ovs: OvsdbServer,
    dir: tempfile::TempDir,
    /// The nodes of the config, n0 first.
    nodes: Vec<String>,
}

/// n0's overlay address, and n1's, n2's…
fn encap(i: usize) -> String {
    format!("198.18.0.{}", i + 1)
}

impl Lab {
    fn new() -> Lab {
        let nb = OvsdbCluster::nb(3);
        let sb = OvsdbCluster::sb_beside(&nb);
        let ovs = OvsdbServer::ovs();
        ovs.vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            "external_ids:system-id=n0",
            &format!("external_ids:ovn-encap-ip={}", encap(0)),
        ]);
        let nodes: Vec<String> = (0..3).map(|i| format!("n{i}")).collect();
        for (i, n) in nodes.iter().enumerate() {
            sb.sbctl(&["chassis-add", n, "geneve", &encap(i)]);
        }
        Lab {
            nb,
            sb,
            ovs,
            dir: tempfile::tempdir().unwrap(),
            nodes,
        }
    }

    /// A config naming `nodes` (each at its DB member's address when it is
    /// one of the three), this node n0, and the NB and SB members by tcp.
    fn config(&self, nodes: &[&str]) -> PathBuf {
        let mut text = String::from("node = \"n0\"\n[network]\nipsec_enabled = false\n");
        for (i, n) in nodes.iter().enumerate() {
            let host = self
                .nb
                .members
                .get(i)
                .map_or_else(|| format!("198.19.0.{}", i + 1), |m| m.addr.clone());
            text.push_str(&format!("[nodes.{n}]\nhost = \"{host}\"\n"));
            if i == 0 {
                text.push_str(&format!(
                    "[nodes.{n}.vpcd]\novn_nb_addr = \"{}\"\novn_sb_addr = \"{}\"\n",
                    self.nb.tcp_list(),
                    self.sb.tcp_list()
                ));
            }
        }
        write_config(self.dir.path(), &text)
    }

    /// `spx-doctor --check ovn.cluster` with `config`, as JSON (recorded
    /// and replayed: the replay must give the same verdict).
    fn run(&self, config: &PathBuf, extra: &[&str]) -> (i32, Value) {
        let mut cmd = spx();
        // A roomy --probe-timeout: two cores shared with a whole test run.
        cmd.args([
            "--check",
            "ovn.cluster",
            "--probe-timeout",
            "3s",
            "--ovs-db",
        ])
        .arg(self.ovs.unix())
        .arg("--config")
        .arg(config)
        .args(extra);
        run_json(&mut cmd)
    }

    fn default_config(&self) -> PathBuf {
        let nodes: Vec<&str> = self.nodes.iter().map(String::as_str).collect();
        self.config(&nodes)
    }
}

/// The subjects of a result with the given status, as (subject, code).
fn subjects(c: &Value, status: &str) -> Vec<(String, String)> {
    c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == status)
        .map(|f| {
            (
                f["subject"].as_str().unwrap().to_owned(),
                f["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_healthy_raft_of_three_with_a_chassis_per_node_passes() {
    let lab = Lab::new();
    let (code, doc) = lab.run(&lab.default_config(), &[]);
    let c = check(&doc, "ovn.cluster");
    assert_eq!(code, 0, "{c:#}");
    assert_eq!(c["code"], "ovn.cluster/ok", "{c:#}");
    let ev = &c["evidence"];
    for db in ["nb", "sb"] {
        let raft = &ev[db];
        let members = raft["members"].as_array().unwrap();
        assert_eq!(members.len(), 3, "{raft:#}");
        assert!(members.iter().all(|m| m["connected"] == true), "{raft:#}");
        assert_eq!(
            members.iter().filter(|m| m["leader"] == true).count(),
            1,
            "{raft:#}"
        );
        assert!(raft["leader"].is_string(), "{raft:#}");
        // Members are named by the config node at their address.
        assert_eq!(members[1]["node"], "n1", "{raft:#}");
    }
    // The oracle agrees on who leads NB.
    let leader = lab.nb.leader();
    assert_eq!(ev["nb"]["leader"], lab.nb.members[leader].tcp(), "{ev:#}");
    assert_eq!(ev["chassis"].as_array().unwrap().len(), 3, "{ev:#}");
    assert_eq!(ev["local"]["system_id"], "n0");
    assert_eq!(ev["local"]["encap_ips"][0], encap(0));
    assert!(ev["lag_bound_ms"].as_u64().unwrap() >= 500, "{ev:#}");
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("OVN_Northbound raft of 3, all connected"),
        "{summary}"
    );
    assert!(
        summary.contains("3 SB chassis, one per node (n0, n1, n2)"),
        "{summary}"
    );
}

/// One NB follower killed, and the SB leader killed (the other two elect
/// a new one): each is named, by address and node, as down while the
/// others answer; the raft keeps its quorum but tolerates no further loss,
/// so it fails (exit 1), and the fix starts that member's unit.
#[test]
fn a_stopped_member_is_named_while_the_others_answer() {
    let mut lab = Lab::new();
    let follower = (0..3).find(|i| *i != lab.nb.leader()).unwrap();
    lab.nb.stop_member(follower);
    let old_sb_leader = lab.sb.leader();
    lab.sb.stop_member(old_sb_leader);
    lab.sb.wait_healthy();
    assert_ne!(lab.sb.leader(), old_sb_leader);

    let (code, doc) = lab.run(&lab.default_config(), &[]);
    let c = check(&doc, "ovn.cluster");
    assert_eq!(code, 1, "{c:#}");
    assert_eq!(c["code"], "ovn.cluster/member-down", "{c:#}");
    let nb_down = format!(
        "OVN_Northbound {} (n{follower})",
        lab.nb.members[follower].tcp()
    );
    let sb_down = format!(
        "OVN_Southbound {} (n{old_sb_leader})",
        lab.sb.members[old_sb_leader].tcp()
    );
    let fails = subjects(c, "fail");
    assert_eq!(
        fails,
        [
            (nb_down.clone(), "ovn.cluster/member-down".to_owned()),
            (sb_down, "ovn.cluster/member-down".to_owned())
        ],
        "{c:#}"
    );
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!(
            "{} (n{follower}) does not answer (Connection refused",
            lab.nb.members[follower].tcp()
        )),
        "{summary}"
    );
    assert!(
        summary.contains("while 2 of 3 NB members do: the raft keeps its quorum (a majority is 2) but one more lost member stops every change"),
        "{summary}"
    );
    let fixes = crate::support::strings(&c["remediation"]);
    assert!(
        fixes[0].starts_with(&format!(
            "on n{follower}: `systemctl start ovn-ovsdb-server-nb`"
        )),
        "{fixes:#?}"
    );
    // It never answered in this run, so the kick names it by the raft
    // address it joined with.
    let kick = fixes
        .iter()
        .find(|f| f.contains("cluster/kick OVN_Northbound"))
        .unwrap_or_else(|| panic!("{fixes:#?}"));
    assert!(
        kick.contains(&format!(
            "cluster/kick OVN_Northbound {}`",
            lab.nb.members[follower].raft()
        )),
        "{kick}"
    );
    // The others passed, and the chassis were read from the new SB leader.
    let ev = &c["evidence"];
    assert_eq!(
        ev["chassis_read_from"],
        lab.sb.members[lab.sb.leader()].tcp(),
        "{ev:#}"
    );
    assert_eq!(ev["nb"]["members"][follower]["answered"], false, "{ev:#}");
    assert_eq!(
        subjects(c, "pass")
            .iter()
            .filter(|(s, _)| s.starts_with("OVN_"))
            .count(),
        4,
        "{c:#}"
    );
}

/// Every backticked command of a fix step, as words.
fn commands(step: &str) -> Vec<Vec<String>> {
    step.split('`')
        .skip(1)
        .step_by(2)
        .map(|c| c.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// The member-down fix, run as printed against the real raft (Spinifex's
/// paths swapped for the test's, `systemctl` for starting and stopping the
/// test's own process): the member is kicked by its raft address, its
/// database set aside, rejoined with `ovsdb-tool join-cluster` and
/// started; the raft is whole again and the check passes.
#[test]
fn the_printed_kick_and_rejoin_put_a_lost_member_back() {
    let mut lab = Lab::new();
    let lost = (0..3).find(|i| *i != lab.nb.leader()).unwrap();
    lab.nb.stop_member(lost);
    // Its database is gone for good: it cannot rejoin on its own.
    std::fs::remove_file(&lab.nb.members[lost].db).unwrap();
    let (code, doc) = lab.run(&lab.default_config(), &[]);
    assert_eq!(code, 1);
    let fixes = crate::support::strings(&check(&doc, "ovn.cluster")["remediation"]);
    let leader = lab.nb.leader();
    let ctl = lab.nb.members[leader].ctl.display().to_string();
    let db = lab.nb.members[lost].db.display().to_string();
    for step in fixes
        .iter()
        .filter(|f| f.starts_with("if it cannot") || f.starts_with("then "))
    {
        for words in commands(step) {
            let words: Vec<String> = words
                .into_iter()
                .map(|w| {
                    w.replace("/var/run/ovn/ovnnb_db.ctl", &ctl)
                        .replace("/var/lib/ovn/ovnnb_db.db", &db)
                })
                .collect();
            match (words[0].as_str(), words.get(1).map(String::as_str)) {
                ("systemctl", Some("stop")) => lab.nb.stop_member(lost),
                ("systemctl", Some("start")) => lab.nb.start_member(lost),
                // The database is already gone.
                ("mv", _) => assert!(!std::path::Path::new(&words[1]).exists()),
                _ => {
                    let out = std::process::Command::new(&words[0])
                        .args(&words[1..])
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{words:?}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
        }
    }
    lab.nb.wait_healthy();
    let status = lab.nb.members[leader].appctl(&["cluster/status", "OVN_Northbound"]);
    assert_eq!(status.matches(" at tcp:").count(), 3, "{status}");
    let (code, doc) = lab.run(&lab.default_config(), &[]);
    assert_eq!(code, 0, "{:#}", check(&doc, "ovn.cluster"));
}

/// A follower cut off from raft for real (`cluster/failure-test
/// stop-raft-rpc`: it still answers its clients, and with the election
/// timer raised to 16 s it stays a connected follower), while the leader
/// commits ten more transactions: its index stays behind across the whole
/// window, so it is named as lagging (a warning: exit 0), with the indexes
/// `ovsdb-client` reads.
#[test]
fn a_member_cut_off_from_raft_is_named_as_lagging() {
    let lab = Lab::new();
    lab.nb.set_election_timer(16_000);
    let leader = lab.nb.leader();
    let cut = (0..3).find(|i| *i != leader).unwrap();
    lab.nb.members[cut].appctl(&["cluster/failure-test", "stop-raft-rpc"]);
    for i in 0..10 {
        lab.nb.nbctl(&["ls-add", &format!("sw{i}")]);
    }
    let (connected, _, Some(behind_at)) = lab.nb.members[cut].server_row("OVN_Northbound").unwrap()
    else {
        panic!("no index")
    };
    let (_, _, Some(top)) = lab.nb.members[leader].server_row("OVN_Northbound").unwrap() else {
        panic!("no index")
    };
    assert!(connected && top >= behind_at + 10, "{behind_at} {top}");

    let (code, doc) = lab.run(&lab.default_config(), &[]);
    let c = check(&doc, "ovn.cluster");
    assert_eq!(code, 0, "a warning: {c:#}");
    assert_eq!(c["code"], "ovn.cluster/lagging", "{c:#}");
    let who = format!("{} (n{cut})", lab.nb.members[cut].tcp());
    assert_eq!(
        subjects(c, "warn"),
        [(
            format!("OVN_Northbound {who}"),
            "ovn.cluster/lagging".to_owned()
        )],
        "{c:#}"
    );
    let m = &c["evidence"]["nb"]["members"][cut];
    assert_eq!(m["connected"], true, "{m:#}");
    assert_eq!(m["index"], behind_at, "{m:#}");
    assert_eq!(m["behind"], top - behind_at, "{m:#}");
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!(
            "{who} has applied index {behind_at}, still below the {top} another member had applied at least"
        )),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("({} entries behind)", top - behind_at)),
        "{summary}"
    );
    // The series: its lag in entries.
    let (code, text, _) = crate::support::run(
        spx()
            .args([
                "--check",
                "ovn.cluster",
                "--format",
                "prometheus",
                "--ovs-db",
            ])
            .arg(lab.ovs.unix())
            .arg("--config")
            .arg(lab.default_config()),
    );
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!(
            "spx_doctor_ovn_raft_member_lag_entries{{db=\"OVN_Northbound\",member=\"{}\"}} {}\n",
            lab.nb.members[cut].tcp(),
            top - behind_at
        )),
        "{text}"
    );
}

/// A member frozen (SIGSTOP: its TCP handshakes complete, it never
/// answers) is named as down with the bound it was given (the probe
/// timeout), the others are judged (lag included: the first reading gives
/// it a third of the window), and the run ends within its deadline.
#[test]
fn a_member_that_hangs_is_named_within_the_probe_timeout() {
    let lab = Lab::new();
    let leader = lab.sb.leader();
    let hung = (0..3).find(|i| *i != leader).unwrap();
    lab.sb.pause_member(hung);
    let started = std::time::Instant::now();
    let (code, doc) = lab.run(&lab.default_config(), &[]);
    let took = started.elapsed();
    lab.sb.resume_member(hung);
    let c = check(&doc, "ovn.cluster");
    assert_eq!(code, 1, "{c:#}");
    assert_eq!(
        subjects(c, "fail"),
        [(
            format!("OVN_Southbound {} (n{hung})", lab.sb.members[hung].tcp()),
            "ovn.cluster/member-down".to_owned()
        )],
        "{c:#}"
    );
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("does not answer (no answer within 3000ms)"),
        "{c:#}"
    );
    let bound = c["evidence"]["lag_bound_ms"].as_u64().unwrap();
    assert!(bound >= 500, "lag still judged: {bound} ms");
    // Recorded and replayed, within a run's own default --timeout.
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
}

/// A config node whose ovn-controller never registered, and a chassis of
/// a node no longer in the config: both named; the printed `chassis-del`,
/// run as printed against the real SB, removes the stale one.
#[test]
fn a_missing_and_a_stale_chassis_are_named() {
    let lab = Lab::new();
    lab.sb
        .sbctl(&["chassis-add", "retired", "geneve", "198.18.0.9"]);
    let config = lab.config(&["n0", "n1", "n2", "n3"]);
    let (code, doc) = lab.run(&config, &[]);
    let c = check(&doc, "ovn.cluster");
    assert_eq!(code, 1, "{c:#}");
    assert_eq!(
        subjects(c, "fail"),
        [
            (
                "chassis n3".to_owned(),
                "ovn.cluster/missing-chassis".to_owned()
            ),
            (
                "chassis retired".to_owned(),
                "ovn.cluster/stale-chassis".to_owned()
            )
        ],
        "{c:#}"
    );
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("n3 has no SB chassis: its ovn-controller has not registered, so n3 has no overlay networking"),
        "{summary}"
    );
    assert!(
        summary.contains(
            "SB chassis \"retired\" (hostname unset, encap 198.18.0.9) is of no node in the config"
        ),
        "{summary}"
    );
    let fixes = crate::support::strings(&c["remediation"]);
    let del = fixes
        .iter()
        .find(|f| f.contains("chassis-del"))
        .unwrap_or_else(|| panic!("{fixes:#?}"));
    assert_eq!(
        del,
        &format!(
            "`ovn-sbctl --db=\"{}\" chassis-del retired`",
            lab.sb.tcp_list()
        )
    );
    crate::support::run_remediation(del.trim_matches('`'));
    assert!(!lab.sb.sbctl(&["show"]).contains("retired"));
    assert!(fixes.iter().any(|f| f.starts_with(
        "on n3: `systemctl status ovn-controller`; `ovs-vsctl get Open_vSwitch . external_ids:system-id` must print n3"
    )));

    // n2 removed from the config: its chassis is stale now.
    let (_, doc) = lab.run(&lab.config(&["n0", "n1"]), &[]);
    let c = check(&doc, "ovn.cluster");
    assert!(
        subjects(c, "fail").contains(&(
            "chassis n2".to_owned(),
            "ovn.cluster/stale-chassis".to_owned()
        )),
        "{c:#}"
    );
}

/// This node's own Open_vSwitch disagrees with SB: its ovn-encap-ip moved
/// (the chassis still has the old address), then its system-id is a
/// package-generated id under which its chassis registered.
#[test]
fn this_nodes_encap_ip_and_chassis_id_are_compared_with_its_chassis() {
    let lab = Lab::new();
    lab.ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:ovn-encap-ip=198.18.0.99",
    ]);
    let (code, doc) = lab.run(&lab.default_config(), &[]);
    let c = check(&doc, "ovn.cluster");
    assert_eq!(code, 1, "{c:#}");
    assert_eq!(c["code"], "ovn.cluster/encap-mismatch", "{c:#}");
    assert!(
        c["summary"].as_str().unwrap().contains(
            "n0's SB chassis has encap 198.18.0.1, but its own Open_vSwitch says ovn-encap-ip 198.18.0.99"
        ),
        "{c:#}"
    );

    lab.ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        &format!("external_ids:ovn-encap-ip={}", encap(0)),
        "external_ids:system-id=4d1e3c1a-5b8f-4f3e-9c1d-2a7b6e0f9d88",
    ]);
    lab.sb.sbctl(&["chassis-del", "n0"]);
    lab.sb.sbctl(&[
        "chassis-add",
        "4d1e3c1a-5b8f-4f3e-9c1d-2a7b6e0f9d88",
        "geneve",
        &encap(0),
    ]);
    let (_, doc) = lab.run(&lab.default_config(), &[]);
    let c = check(&doc, "ovn.cluster");
    let fails = subjects(c, "fail");
    assert_eq!(
        fails,
        [
            (
                "Open_vSwitch external_ids".to_owned(),
                "ovn.cluster/chassis-id-mismatch".to_owned()
            ),
            (
                "chassis n0".to_owned(),
                "ovn.cluster/missing-chassis".to_owned()
            ),
            (
                "chassis 4d1e3c1a-5b8f-4f3e-9c1d-2a7b6e0f9d88".to_owned(),
                "ovn.cluster/stale-chassis".to_owned()
            ),
        ],
        "{c:#}"
    );
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("n0 has no SB chassis under its name: its ovn-controller registered as \"4d1e3c1a-5b8f-4f3e-9c1d-2a7b6e0f9d88\""),
        "{summary}"
    );
    let fixes = crate::support::strings(&c["remediation"]);
    assert!(
        fixes.contains(&format!(
            "on n0: `ovs-vsctl set Open_vSwitch . external_ids:system-id=n0`, `systemctl restart ovn-controller`, then `ovn-sbctl --db=\"{}\" chassis-del 4d1e3c1a-5b8f-4f3e-9c1d-2a7b6e0f9d88`",
            lab.sb.tcp_list()
        )),
        "{fixes:#?}"
    );
}

/// A standalone NB and SB (one `ovsdb-tool create`d server each): not what
/// Spinifex runs for three nodes (a fail naming it, with the conversion
/// that keeps its data), and exactly what it runs for one.
#[test]
fn a_standalone_database_is_judged_by_the_clusters_size() {
    let nb = OvsdbServer::nb();
    let sb = OvsdbServer::sb();
    let ovs = OvsdbServer::ovs();
    ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:system-id=n0",
        "external_ids:ovn-encap-ip=198.18.0.1",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let config = |nodes: &[&str]| {
        let mut text = String::from("node = \"n0\"\n[network]\nipsec_enabled = false\n");
        for n in nodes {
            text.push_str(&format!("[nodes.{n}]\nhost = \"198.19.0.1\"\n"));
        }
        text.push_str(&format!(
            "[nodes.n0.vpcd]\novn_nb_addr = \"{}\"\novn_sb_addr = \"{}\"\n",
            nb.tcp(),
            sb.tcp()
        ));
        write_config(dir.path(), &text)
    };
    for (i, n) in ["n0", "n1", "n2"].iter().enumerate() {
        sb.sbctl(&["chassis-add", n, "geneve", &encap(i)]);
    }
    let doctor = |cfg: PathBuf| {
        let mut cmd = spx();
        cmd.args([
            "--check",
            "ovn.cluster",
            "--probe-timeout",
            "3s",
            "--ovs-db",
        ])
        .arg(ovs.unix())
        .arg("--config")
        .arg(cfg);
        run_json(&mut cmd)
    };
    let (code, doc) = doctor(config(&["n0", "n1", "n2"]));
    let c = check(&doc, "ovn.cluster");
    assert_eq!(code, 1, "{c:#}");
    assert_eq!(c["code"], "ovn.cluster/not-clustered", "{c:#}");
    assert_eq!(
        subjects(c, "fail"),
        [
            (
                format!("OVN_Northbound {}", nb.tcp()),
                "ovn.cluster/not-clustered".to_owned()
            ),
            (
                format!("OVN_Southbound {}", sb.tcp()),
                "ovn.cluster/not-clustered".to_owned()
            ),
        ],
        "{c:#}"
    );
    // And the list names one member where Spinifex runs three.
    assert_eq!(subjects(c, "warn").len(), 0, "{c:#}");
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("{} holds OVN_Northbound standalone, not as a raft member: Spinifex runs NB as a raft of 3 for a cluster of 3 or more nodes (this config has 3)", nb.tcp())),
        "{summary}"
    );
    let fixes = crate::support::strings(&c["remediation"]);
    assert!(
        fixes[0].contains("`ovsdb-tool create-cluster /var/lib/ovn/ovnnb_db.db.raft /var/lib/ovn/ovnnb_db.db tcp:127.0.0.1:6643`"),
        "{fixes:#?}"
    );

    // One node: a standalone database is Spinifex's layout.
    sb.sbctl(&["chassis-del", "n1"]);
    sb.sbctl(&["chassis-del", "n2"]);
    let (code, doc) = doctor(config(&["n0"]));
    let c = check(&doc, "ovn.cluster");
    assert_eq!(code, 0, "{c:#}");
    assert!(
        c["summary"].as_str().unwrap().starts_with(&format!(
            "OVN_Northbound standalone at {} (Spinifex's layout below 3 nodes",
            nb.tcp()
        )),
        "{c:#}"
    );
}

/// No member of NB answers at all: nothing is concluded about it (an
/// error), while SB is still judged.
#[test]
fn no_member_answering_is_an_error_not_a_verdict() {
    let lab = Lab::new();
    let dead: Vec<String> = (0..3)
        .map(|_| {
            format!(
                "tcp:127.0.0.1:{}",
                crate::support::ovsdb_server::refused_port()
            )
        })
        .collect();
    let (code, doc) = lab.run(&lab.default_config(), &["--nb-db", &dead.join(",")]);
    let c = check(&doc, "ovn.cluster");
    assert_eq!(code, 2, "{c:#}");
    assert_eq!(c["code"], "ovn.cluster/db-unreachable", "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .starts_with("no OVN_Northbound member answered (tcp:127.0.0.1:"),
        "{c:#}"
    );
    assert_eq!(
        subjects(c, "pass")
            .iter()
            .filter(|(s, _)| s.starts_with("OVN_Southbound"))
            .count(),
        3,
        "{c:#}"
    );
}
