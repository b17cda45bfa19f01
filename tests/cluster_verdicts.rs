//! `spx-doctor --cluster` on the cluster lab (support::sshd: namespaces with
//! real sshd, each node its own spinifex.toml), where one condition must get
//! one verdict whichever node meets it, the narrow point is named where it
//! is, and a matrix cell never claims a probe that did not happen: the node
//! that reads OVN judges its local Open_vSwitch row as every other node
//! does (against a real `ovsdb-server`); a node whose own link was left at
//! 1500 is told to raise it (its own mtu.path's command), not to configure
//! a switch port; and cells toward a node that did not answer (sshd
//! stopped, host gone) place what the others probed where its address can
//! be known, else show it by address, never "did not probe" and never a
//! fail.

use serde_json::Value;

use crate::cluster::{cluster_check, node};
use crate::support::ovsdb_server::OvsdbServer;
use crate::support::run_cluster_json;
use crate::support::sshd::{LabNode, SshLab};
use spx_test_harness::root_test;

/// Node `n`'s one check result in a cluster document.
fn only_check<'a>(doc: &'a Value, n: &str) -> &'a Value {
    let e = node(doc, n);
    assert_eq!(e["status"], "ok", "{e:#}");
    &e["report"]["checks"][0]
}

/// The same local Open_vSwitch row gets the same verdict on the node that
/// reads OVN for the cluster (told nothing, its config naming no NB) as on
/// the nodes told to leave OVN alone: a stale ipsec_encapsulation fails
/// everywhere, a missing local database is an error everywhere. Before, the
/// reader skipped for want of ovn_nb_addr without looking at its row.
#[root_test]
fn ipsec_flags_judges_the_local_row_alike_on_the_node_that_reads_ovn() {
    let lab = SshLab::new(vec![LabNode::jumbo(); 3]);
    // One real Open_vSwitch database every node is pointed at (its socket
    // is a file, seen from every namespace): the same row everywhere.
    let ovs = OvsdbServer::ovs();
    ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "other_config:ipsec_encapsulation=true",
    ]);
    let (code, doc) = run_cluster_json(lab.coordinator(0).args([
        "--check",
        "ipsec.flags",
        "--ovs-db",
        &ovs.unix(),
    ]));
    assert_eq!(doc["ovn_read_by"], "n0");
    assert_eq!(code, 1, "{doc:#}");
    for n in &lab.names {
        let c = only_check(&doc, n);
        assert_eq!(c["status"], "fail", "{n}: {c:#}");
        assert_eq!(c["code"], "ipsec.flags/stale-ovs-ipsec", "{n}: {c:#}");
        assert_eq!(c["evidence"]["ovs_ipsec_encapsulation"], "true", "{c:#}");
        assert!(
            c["remediation"][0]
                .as_str()
                .unwrap()
                .starts_with("ovs-vsctl remove Open_vSwitch . other_config ipsec_encapsulation"),
            "{n}: {c:#}"
        );
    }
    // The reader says why NB itself was not judged.
    let reader = only_check(&doc, "n0");
    let nb = reader["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["subject"] == "NB_Global.ipsec")
        .unwrap_or_else(|| panic!("{reader:#}"));
    assert_eq!(nb["status"], "skip", "{nb:#}");
    assert!(
        nb["summary"].as_str().unwrap().contains("ovn_nb_addr"),
        "{nb:#}"
    );

    // Cleared: the reader skips for want of NB (saying its row agrees), the
    // others pass (NB is the reader's); none of them fails.
    ovs.vsctl(&[
        "remove",
        "Open_vSwitch",
        ".",
        "other_config",
        "ipsec_encapsulation",
    ]);
    let (_, doc) = run_cluster_json(lab.coordinator(0).args([
        "--check",
        "ipsec.flags",
        "--ovs-db",
        &ovs.unix(),
    ]));
    let reader = only_check(&doc, "n0");
    assert_eq!(reader["status"], "skip", "{reader:#}");
    assert!(
        reader["summary"]
            .as_str()
            .unwrap()
            .contains("the local ipsec_encapsulation agrees with the config"),
        "{reader:#}"
    );
    for n in &lab.names[1..] {
        assert_eq!(only_check(&doc, n)["status"], "pass", "{doc:#}");
    }

    // No local database at all: an error on every node alike.
    let absent = format!("unix:{}/absent-db.sock", lab.dir.path().display());
    let (code, doc) =
        run_cluster_json(
            lab.coordinator(0)
                .args(["--check", "ipsec.flags", "--ovs-db", &absent]),
        );
    assert_eq!(code, 2, "{doc:#}");
    for n in &lab.names {
        let c = only_check(&doc, n);
        assert_eq!(c["status"], "error", "{n}: {c:#}");
        assert_eq!(c["code"], "ipsec.flags/db-unreachable", "{n}: {c:#}");
    }
    let _ = cluster_check(&doc, "cluster.reachable");
}

/// n2's own link left at 1500 behind a jumbo switch port: every probe from
/// it stops at its link (local-mtu) and every probe to it is dropped there.
/// The matrix names n2's own eth0 and the command its own report knows,
/// not "its link or its switch port" with "configure its switch port"; run
/// in n2, that command makes the matrix pass.
#[root_test]
fn a_node_whose_own_link_is_at_1500_is_told_to_raise_it_not_its_switch_port() {
    let mut nodes = vec![LabNode::jumbo(); 4];
    nodes[2].spec.mtu = 1500;
    let lab = SshLab::new(nodes);
    // The oracle: n2's eth0 at 1500, its switch port at 9000.
    let n2 = lab.fabric.node(2);
    let link: Value = serde_json::from_str(&n2.ns.ip(&["-j", "link", "show", "eth0"])).unwrap();
    assert_eq!(link[0]["mtu"], 1500, "{link}");
    let port: Value =
        serde_json::from_str(&lab.fabric.switch.ip(&["-j", "link", "show", "p2"])).unwrap();
    assert_eq!(port[0]["mtu"], 9000, "{port}");

    let (code, doc) = run_cluster_json(lab.coordinator(0).args(["--check", "mtu.path"]));
    assert_eq!(code, 1, "{doc:#}");
    let from_n2: Vec<&Value> = doc["path_matrix"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["from"] == "n2")
        .collect();
    assert!(
        from_n2.iter().all(|c| c["verdict"] == "local-mtu"),
        "{from_n2:#?}"
    );
    let pm = cluster_check(&doc, "cluster.path-matrix");
    assert_eq!(
        pm["evidence"]["cut_off"],
        serde_json::json!(["n2"]),
        "{pm:#}"
    );
    let summary = pm["summary"].as_str().unwrap();
    assert!(
        summary.contains("every path to and from n2 (carries 1500: n2's own link, eth0 at 1500)"),
        "{summary}"
    );
    assert!(!summary.contains("switch port"), "{summary}");
    let fixes: Vec<&str> = pm["remediation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(
        fixes[0],
        "n2: its own link is below 9000, so every path to and from it fails: on n2, `ip link set dev eth0 mtu 9000` (as its own mtu.path says)",
        "{fixes:#?}"
    );
    assert!(
        !fixes
            .iter()
            .any(|f| f.contains("configure its switch port")),
        "{fixes:#?}"
    );
    // n2's own report knew the same command.
    let own = only_check(&doc, "n2");
    assert!(
        own["remediation"]
            .to_string()
            .contains("`ip link set dev eth0 mtu 9000`"),
        "{own:#}"
    );

    // The fix, run on n2 as printed: every path carries 9000.
    let cmd = fixes[0].split('`').nth(1).unwrap();
    let words: Vec<&str> = cmd.split_whitespace().collect();
    assert_eq!(words[..2], ["ip", "link"], "{cmd}");
    n2.ns.ip(&words[1..]);
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(["--check", "mtu.path"]));
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(cluster_check(&doc, "cluster.path-matrix")["status"], "pass");
}
