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
