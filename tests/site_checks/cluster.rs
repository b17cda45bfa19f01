//! Site checks across a cluster: the sshd lab's nodes, each with its own
//! doctor.d (bound over /etc/spinifex by `ip netns exec`, as its own), and
//! their agents on a real nats-server. The same check reaches the same
//! verdicts over ssh and over NATS, a check dropped into doctor.d while the
//! agents run is asked for at once, `watch` shows the agents' periodic
//! runs of it, and a node whose set differs is named by
//! `cluster.config-drift`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use spx_test_harness::root_test;

use crate::cluster::{cluster_check, node};
use crate::nats::{nats_or_skip, verdicts};
use crate::support::nats::NatsLab;
use crate::support::site::set_mode;
use crate::support::sshd::LabNode;
use crate::support::{run, run_cluster_json};

const ROOMY: [&str; 2] = ["--timeout", "20s"];

/// The lab's site check, the same bytes on every node: CRITICAL on n1, OK
/// elsewhere, with a perfdata value.
const STATE: &str = r#"#!/bin/sh
# A site check of the test lab: the node's "array", by the node's name.
case "$SPX_DOCTOR_NODE" in
  n1) echo "CRITICAL - n1's array is gone|arrays=0;;1;0;"; exit 2 ;;
  *) echo "OK - $SPX_DOCTOR_NODE sees its array|arrays=1;;1;0;"; exit 0 ;;
esac
"#;

/// Node `i`'s doctor.d (on this host) with `site.NAME` running `script`.
fn install(lab: &NatsLab, i: usize, name: &str, script: &str) -> PathBuf {
    let dir = lab.etc(i).join("doctor.d");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    set_mode(&dir, 0o755);
    set_mode(&bin, 0o755);
    let exe = bin.join(name);
    std::fs::write(&exe, script).unwrap();
    set_mode(&exe, 0o755);
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            "id = \"site.{name}\"\ntitle = \"The lab node's {name}\"\ncommand = [{:?}]\n\
             timeout = \"5s\"\nprotocol = \"nagios\"\nexplain = \"The lab's {name}.\"\n",
            exe.to_str().unwrap()
        ),
    )
    .unwrap();
    set_mode(&file, 0o644);
    file
}

fn site_result<'a>(doc: &'a Value, n: &str, id: &str) -> &'a Value {
    node(doc, n)["report"]["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("{n} has no report: {doc:#}"))
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{n} did not run {id}: {doc:#}"))
}

#[root_test]
fn site_checks_over_ssh_nats_and_watch_and_the_drift_of_their_sets() {
    const TEST: &str = "site_checks_over_ssh_nats_and_watch_and_the_drift_of_their_sets";
    if !nats_or_skip(TEST) {
        return;
    }
    let lab = NatsLab::with_agents(vec![LabNode::jumbo(); 3], &["--interval", "2s"], &[], "");
    for i in 0..3 {
        install(&lab, i, "state", STATE);
    }
    install(
        &lab,
        2,
        "extra",
        "#!/bin/sh\necho 'OK - only n2 has this'\n",
    );

    // Over ssh, then over NATS: the same verdicts.
    let (code, over_ssh) = run_cluster_json(
        lab.ssh
            .coordinator(0)
            .args(["--via", "ssh", "--check", "site"])
            .args(ROOMY),
    );
    assert_eq!(code, 1, "{over_ssh:#}");
    let (code, over_nats) =
        run_cluster_json(lab.coordinator(0).args(["--check", "site"]).args(ROOMY));
    assert_eq!(code, 1, "{over_nats:#}");
    assert_eq!(over_nats["via"], "nats");
    assert_eq!(verdicts(&over_ssh), verdicts(&over_nats));
    for doc in [&over_ssh, &over_nats] {
        assert_eq!(
            site_result(doc, "n0", "site.state")["code"],
            "site.state/ok"
        );
        let n1 = site_result(doc, "n1", "site.state");
        assert_eq!(n1["code"], "site.state/critical", "{n1:#}");
        assert_eq!(n1["summary"], "CRITICAL - n1's array is gone");
        assert_eq!(site_result(doc, "n2", "site.state")["status"], "pass");
        let drift = cluster_check(doc, "cluster.config-drift");
        assert_eq!(
            drift["code"], "cluster.config-drift/site-checks-drift",
            "{drift:#}"
        );
        let odd: Vec<&str> = drift["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["subject"].as_str().unwrap())
            .collect();
        assert_eq!(odd, ["n2"], "{drift:#}");
        assert!(
            drift["summary"]
                .as_str()
                .unwrap()
                .contains("n2 has site checks site.extra ("),
            "{drift:#}"
        );
    }

    // The cluster's table and Prometheus text carry it, node by node.
    let (code, table, err) = run(lab
        .coordinator(0)
        .args(["--check", "site"])
        .args(ROOMY)
        .env("COLUMNS", "160"));
    assert_eq!(code, 1, "{err}");
    assert!(table.contains("site.state"), "{table}");
    let (code, prom, err) = run(lab
        .coordinator(0)
        .args(["--check", "site", "--format", "prometheus"])
        .args(ROOMY));
    assert_eq!(code, 1, "{err}");
    crate::monitoring::promtool_check(&prom);
    for n in ["n0", "n1", "n2"] {
        let want = if n == "n1" { 0 } else { 1 };
        let series = format!(
            "spx_doctor_site_value{{node=\"{n}\",check=\"site.state\",label=\"arrays\",uom=\"\"}} {want}"
        );
        assert!(prom.contains(&series), "{series} not in\n{prom}");
    }

    // The agents' vocabulary is their own catalogue: n2's takes
    // site.extra, n0's refuses it, by name.
    let mut from_n2 = lab.ssh.fabric.node(2).spx();
    from_n2
        .args(["--cluster", "--config"])
        .arg(lab.etc(2).join("spinifex.toml"))
        .args(["--check", "site.extra", "--nodes", "n0,n2"])
        .args(ROOMY)
        .env_remove("SPINIFEX_CONFIG_PATH");
    let (code, doc) = run_cluster_json(&mut from_n2);
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(site_result(&doc, "n2", "site.extra")["status"], "pass");
    let n0 = node(&doc, "n0");
    assert_ne!(n0["status"], "ok", "{n0:#}");
    assert!(n0.to_string().contains("site.extra"), "{n0:#}");

    // Dropped in while the agents run: asked for at once.
    for i in 0..3 {
        install(&lab, i, "late", "#!/bin/sh\necho 'OK - just installed'\n");
    }
    let (code, doc) = run_cluster_json(
        lab.coordinator(0)
            .args(["--check", "site.late"])
            .args(ROOMY),
    );
    assert_eq!(code, 0, "{doc:#}");
    for n in ["n0", "n1", "n2"] {
        assert_eq!(
            site_result(&doc, n, "site.late")["summary"],
            "OK - just installed"
        );
    }

    // The agents' periodic runs (every 2 s, the default set) take the
    // site's checks too: watch shows n1's failing one.
    let deadline = Instant::now() + Duration::from_secs(30);
    let watched = loop {
        let mut cmd = lab.ssh.fabric.node(0).spx();
        cmd.args(["watch", "--once", "--config"])
            .arg(lab.etc(0).join("spinifex.toml"));
        let (_, doc) = run_cluster_json(&mut cmd);
        let has = |n: &str| {
            node(&doc, n)["report"]["checks"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["id"] == "site.late"))
        };
        if ["n0", "n1", "n2"].iter().all(|n| has(n)) || Instant::now() > deadline {
            break doc;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(
        site_result(&watched, "n1", "site.state")["code"],
        "site.state/critical",
        "{watched:#}"
    );
    assert_eq!(site_result(&watched, "n2", "site.extra")["status"], "pass");
}
