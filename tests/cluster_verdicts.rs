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
use crate::support::sshd::{node_config, LabNode, SshLab};
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

/// Every node's config names the others by their wan address only (no
/// `advertise`), and mtu.path's peers come from each node's peers.nft
/// (`spinifex_encap_peers`, the underlay): only a node's own report says
/// which underlay address is its.
fn lab_without_advertise(n: usize) -> SshLab {
    let lab = SshLab::new(vec![LabNode::jumbo(); n]);
    let wan: Vec<String> = (0..n).map(|i| lab.addr(i)).collect();
    let nodes: Vec<(&str, &str, Option<&str>)> = lab
        .names
        .iter()
        .zip(&wan)
        .map(|(name, w)| (name.as_str(), w.as_str(), None))
        .collect();
    let underlay: Vec<&str> = (0..n).map(|i| lab.underlay(i)).collect();
    for i in 0..n {
        lab.write_config(i, &node_config(&lab.names[i], false, 9000, &nodes));
        let dir = std::path::Path::new("/etc/netns")
            .join(&lab.fabric.node(i).ns.name)
            .join("spinifex/firewall");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("peers.nft"),
            format!(
                "define spinifex_peers = {{ {} }}\ndefine spinifex_encap_peers = {{ {} }}\n",
                wan.join(", "),
                underlay.join(", ")
            ),
        )
        .unwrap();
    }
    lab
}

/// The path matrix cells of `doc` toward `to`, from the nodes that answered.
fn cells_to<'a>(doc: &'a Value, to: &str) -> Vec<&'a Value> {
    doc["path_matrix"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["to"] == to)
        .filter(|c| node(doc, c["from"].as_str().unwrap())["status"] == "ok")
        .collect()
}

/// n2 does not answer (its sshd stopped, then its host gone: links down).
/// Its underlay address is in no config (no advertise) and its own report
/// is missing, yet every other node probed it: the cells toward n2 show
/// those results by address as what may be n2, never "did not probe"; an
/// SB Encap row of chassis n2 (read once, by n0) places them; and a
/// failure toward n2 is shown, never judged a fail.
#[root_test]
fn cells_toward_a_node_that_did_not_answer_never_claim_a_probe_did_not_happen() {
    let mut lab = lab_without_advertise(4);
    lab.stop_sshd(2);
    let n2 = lab.underlay(2).to_owned();
    assert!(
        lab.fabric.node(0).ping_df(&n2, 8972),
        "the oracle: n2 is up"
    );
    let run = |lab: &SshLab, extra: &[&str]| {
        run_cluster_json(
            lab.coordinator(0)
                .args(["--check", "mtu.path", "--timeout", "6s"])
                .args(extra),
        )
    };

    // 1. sshd stopped: the others' results for n2's address, by address.
    let (code, doc) = run(&lab, &[]);
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(node(&doc, "n2")["reason"], "connection-refused");
    assert!(
        !doc.to_string().contains("did not probe"),
        "no cell claims a probe that happened did not: {doc:#}"
    );
    let toward = cells_to(&doc, "n2");
    assert_eq!(toward.len(), 3);
    for c in &toward {
        assert_eq!(c["verdict"], "not-measured", "{c}");
        let detail = c["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("n2 did not answer (connection refused); ")
                && detail.contains(&format!("probed {n2} (ok at 9000)"))
                && detail.ends_with("which no config, report or SB Encap row places: it may be n2"),
            "{c}"
        );
    }
    let pm = cluster_check(&doc, "cluster.path-matrix");
    assert_eq!(pm["status"], "error", "{pm:#}");
    assert!(
        pm["summary"].as_str().unwrap().ends_with(&format!(
            "probed but placed by no config, report or SB Encap row: {n2} (ok at 9000 from n0, n1 and n3), which may be n2"
        )),
        "{pm:#}"
    );
    let unplaced = pm["evidence"]["unplaced"].as_array().unwrap();
    assert_eq!(unplaced.len(), 3, "{pm:#}");
    assert!(unplaced
        .iter()
        .all(|u| u["address"] == n2.as_str() && u["may_be"] == serde_json::json!(["n2"])));

    // 2. The SB Encap table (one chassis per node, named as Spinifex's
    // install pins it, after the node) is read by n0 alone: its rows place
    // n2's address for every row.
    let sb = OvsdbServer::sb();
    for i in 0..4 {
        sb.sbctl(&["chassis-add", &lab.names[i], "geneve", lab.underlay(i)]);
    }
    let (code, doc) = run(&lab, &["--sb-db", &sb.unix()]);
    assert_eq!(code, 2, "{doc:#}");
    let mine = only_check(&doc, "n0");
    assert_eq!(
        mine["evidence"]["peers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["address"] == n2.as_str())
            .unwrap()["node"],
        "n2",
        "{mine:#}"
    );
    for c in cells_to(&doc, "n2") {
        assert_eq!(c["verdict"], "ok", "{c}");
        assert_eq!(c["path_mtu"], 9000, "{c}");
    }
    let pm = cluster_check(&doc, "cluster.path-matrix");
    assert_eq!(pm["status"], "error", "n2's own row is unmeasured: {pm:#}");
    assert!(pm["evidence"].get("unplaced").is_none(), "{pm:#}");

    // 3. n2 behind a 1500 port: placed, the black hole toward it is shown
    // with its size, but n2 did not answer, so no cell of it fails.
    lab.fabric.switch.ip(&["link", "set", "p2", "mtu", "1500"]);
    assert!(!lab.fabric.node(0).ping_df(&n2, 1477), "the oracle: 1504");
    let (_, doc) = run(&lab, &["--sb-db", &sb.unix()]);
    for c in cells_to(&doc, "n2") {
        assert_eq!(c["verdict"], "not-measured", "{c}");
        assert!(
            c["detail"]
                .as_str()
                .unwrap()
                .contains("measured blackhole at 150"),
            "{c}"
        );
    }
    let pm = cluster_check(&doc, "cluster.path-matrix");
    assert_eq!(pm["status"], "error", "never a fail: {pm:#}");
    assert_eq!(pm["evidence"]["failing"], serde_json::json!([]), "{pm:#}");
    lab.fabric.switch.ip(&["link", "set", "p2", "mtu", "9000"]);

    // 4. The host gone: its links down. Nothing answers at its address;
    // still shown by address, never "did not probe", never a fail.
    let ns = &lab.fabric.node(2).ns;
    ns.ip(&["link", "set", "eth0", "down"]);
    ns.ip(&["link", "set", "wan0", "down"]);
    let (code, doc) = run(&lab, &[]);
    assert_eq!(code, 2, "{doc:#}");
    assert!(!doc.to_string().contains("did not probe"), "{doc:#}");
    for c in cells_to(&doc, "n2") {
        assert_eq!(c["verdict"], "not-measured", "{c}");
        assert!(
            c["detail"]
                .as_str()
                .unwrap()
                .contains(&format!("probed {n2} (unreachable)")),
            "{c}"
        );
    }
    assert_eq!(
        cluster_check(&doc, "cluster.path-matrix")["status"],
        "error"
    );
}

/// ovn.cluster in a cluster run: n0 reads a real three-member NB and SB
/// raft for the cluster (over their unix sockets, which every namespace
/// sees); n1 and n2 leave them alone and read only their own Open_vSwitch
/// (each node its own real ovsdb-server, seen at the same path through its
/// own /etc/spinifex); cluster.chassis puts each node's identity beside
/// the chassis n0 read. n2's chassis still carries an old address: named
/// from n2's own report, which no single node could do.
#[root_test]
fn cluster_chassis_compares_each_nodes_own_encap_ip_with_the_sb_the_reader_saw() {
    use crate::support::ovsdb_server::OvsdbCluster;
    let lab = SshLab::new(vec![LabNode::jumbo(); 3]);
    let nb = OvsdbCluster::nb(3);
    let sb = OvsdbCluster::sb_beside(&nb);
    let mut local = Vec::new();
    for i in 0..3 {
        let ovs = OvsdbServer::ovs();
        ovs.vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            &format!("external_ids:system-id={}", lab.names[i]),
            &format!("external_ids:ovn-encap-ip={}", lab.underlay(i)),
        ]);
        std::os::unix::fs::symlink(&ovs.sock, lab.node_spinifex(i, "ovs.sock")).unwrap();
        local.push(ovs);
        let text = format!(
            "{}[nodes.n0.vpcd]\novn_nb_addr = \"{}\"\novn_sb_addr = \"{}\"\n",
            lab.config_text(i, false, 9000),
            nb.unix_list(),
            sb.unix_list()
        );
        lab.write_config(i, &text);
    }
    let register = |old_n2: bool| {
        for i in 0..3 {
            let name = &lab.names[i];
            let _ = std::process::Command::new("ovn-sbctl")
                .args([
                    &format!("--db={}", sb.unix_list()),
                    "--if-exists",
                    "chassis-del",
                    name,
                ])
                .status();
            let ip = if old_n2 && i == 2 {
                "198.18.0.99".to_owned()
            } else {
                lab.underlay(i).to_owned()
            };
            sb.sbctl(&["chassis-add", name, "geneve", &ip]);
        }
    };
    let run = || {
        run_cluster_json(lab.coordinator(0).args([
            "--check",
            "ovn.cluster",
            "--ovs-db",
            "unix:/etc/spinifex/ovs.sock",
            "--probe-timeout",
            "3s",
        ]))
    };

    register(false);
    let (code, doc) = run();
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["ovn_read_by"], "n0");
    let reader = only_check(&doc, "n0");
    assert_eq!(reader["code"], "ovn.cluster/ok", "{reader:#}");
    assert_eq!(reader["evidence"]["chassis"].as_array().unwrap().len(), 3);
    for n in &lab.names[1..] {
        let c = only_check(&doc, n);
        assert_eq!(c["status"], "pass", "{n}: {c:#}");
        // The others never asked NB or SB.
        assert_eq!(c["evidence"]["read_by"], "n0", "{c:#}");
        assert!(
            c["evidence"]["nb"].is_null() && c["evidence"]["sb"].is_null(),
            "{c:#}"
        );
        assert_eq!(c["evidence"]["local"]["system_id"], n.as_str(), "{c:#}");
    }
    let cc = cluster_check(&doc, "cluster.chassis");
    assert_eq!(cc["code"], "cluster.chassis/ok", "{cc:#}");
    assert_eq!(cc["evidence"]["read_by"], "n0");

    register(true);
    let (code, doc) = run();
    assert_eq!(code, 1, "{doc:#}");
    let cc = cluster_check(&doc, "cluster.chassis");
    assert_eq!(cc["code"], "cluster.chassis/encap-mismatch", "{cc:#}");
    assert_eq!(
        cc["summary"],
        format!(
            "n2's SB chassis has encap 198.18.0.99, but its own Open_vSwitch says ovn-encap-ip {}: the other nodes send n2's tunnels to the wrong address",
            lab.underlay(2)
        )
    );
    let fails: Vec<&Value> = cc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "fail")
        .collect();
    assert_eq!(fails.len(), 1, "{cc:#}");
    assert_eq!(fails[0]["subject"], "n2");
    // n0's own ovn.cluster knows only its own address: it passes.
    assert_eq!(only_check(&doc, "n0")["status"], "pass", "{doc:#}");
}
