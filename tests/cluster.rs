//! `spx-doctor --cluster` against a real cluster lab (support::sshd): six
//! network namespaces on one bridge, each running Debian's sshd on its own
//! lab address with its own host key and its own spinifex.toml; the
//! coordinator runs in node n0's namespace and reaches the others with the
//! system ssh, pointed at the lab's ssh_config and known_hosts. What the
//! fabric carries is checked against `ping -M do` as the independent
//! oracle. SA pairing needs ESP, which this kernel lacks: it is proven on
//! real SAs in the kernel lab (`kernel_lab/cluster.rs`), over the same
//! sshd support code.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::sshd::{nft, Binary, LabNode, SshLab, Sudo};
use crate::support::{self, run, run_cluster_json, spx, write_config};
use spx_test_harness::root_test;

/// The entry of `list` in `doc` whose `key` is `value`.
pub(crate) fn entry<'a>(doc: &'a Value, list: &str, key: &str, value: &str) -> &'a Value {
    doc[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n[key] == value)
        .unwrap_or_else(|| panic!("no {list} entry {value} in {doc:#}"))
}

pub(crate) fn node<'a>(doc: &'a Value, name: &str) -> &'a Value {
    entry(doc, "nodes", "name", name)
}

pub(crate) fn cluster_check<'a>(doc: &'a Value, id: &str) -> &'a Value {
    entry(doc, "checks", "id", id)
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// Every ordered pair of lab nodes that has `n` at one end.
fn pairs_through(n: &str, names: &[String]) -> BTreeSet<String> {
    names
        .iter()
        .filter(|m| *m != n)
        .flat_map(|m| [format!("{m}->{n}"), format!("{n}->{m}")])
        .collect()
}

const CHECKS: [&str; 2] = ["--check", "mtu.path,ipsec.xfrm"];

#[root_test]
fn cluster_healthy_then_a_1500_port_an_asymmetric_path_and_drift() {
    let lab = SshLab::new(vec![LabNode::jumbo(); 6]);
    let names = lab.names.clone();

    // 1. All healthy: exit 0, every node answered, a full matrix at 9000.
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(CHECKS));
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["kind"], "cluster");
    assert_eq!(doc["ovn_read_by"], "n0");
    assert_eq!(doc["summary"]["nodes"], 6);
    assert_eq!(doc["summary"]["unreachable"], 0);
    assert_eq!(node(&doc, "n0")["via"], "in-process");
    assert!(node(&doc, "n0")["host"].is_null());
    for (i, n) in names.iter().enumerate().skip(1) {
        let e = node(&doc, n);
        assert_eq!(e["status"], "ok", "{e:#}");
        assert_eq!(e["via"], "ssh");
        assert_eq!(e["host"], lab.addr(i));
        assert_eq!(e["report"]["node"], n.as_str(), "its own config");
        assert_eq!(e["report"]["config"]["nodes"].as_array().unwrap().len(), 6);
        // NB/SB are read once, by n0: the others were told to leave them.
        let notes = e["report"]["checks"][0]["evidence"]["peer_discovery"].to_string();
        assert!(
            notes.contains("OVN SB is cluster-wide: read once in this cluster run, by n0"),
            "{notes}"
        );
    }
    let m = doc["path_matrix"].as_array().unwrap();
    assert_eq!(m.len(), 30);
    assert!(
        m.iter()
            .all(|c| c["verdict"] == "ok" && c["path_mtu"] == 9000),
        "{m:#?}"
    );
    assert_eq!(cluster_check(&doc, "cluster.reachable")["status"], "pass");
    assert_eq!(
        cluster_check(&doc, "cluster.config-drift")["status"],
        "pass"
    );
    let pm = cluster_check(&doc, "cluster.path-matrix");
    assert_eq!(pm["status"], "pass", "{pm:#}");
    assert_eq!(pm["evidence"]["largest_common_mtu"], 9000);
    assert_eq!(cluster_check(&doc, "cluster.sa-pairs")["status"], "skip");
    assert!(
        doc["duration_ms"].as_u64().unwrap() < 5000,
        "one probe round and one ssh each: {}",
        doc["duration_ms"]
    );

    // NB is read by n0 alone: pointed at a port nobody listens on, n0's
    // ipsec.flags says so; the others never try it (no NB in what they
    // say) and name n0 as the reader.
    let (code, doc) = run_cluster_json(lab.coordinator(0).args([
        "--check",
        "ipsec.flags",
        "--nb-db",
        &format!("tcp:{}:1", lab.underlay(0)),
    ]));
    assert_eq!(code, 2, "{doc:#}");
    let mine = &node(&doc, "n0")["report"]["checks"][0];
    assert!(
        mine["summary"]
            .as_str()
            .unwrap()
            .contains("NB_Global.ipsec could not be read"),
        "{mine:#}"
    );
    for n in names.iter().skip(1) {
        let theirs = &node(&doc, n)["report"]["checks"][0];
        assert_eq!(theirs["evidence"]["nb_read_by"], "n0", "{theirs:#}");
        assert!(
            !theirs["summary"].as_str().unwrap().contains("NB"),
            "{theirs:#}"
        );
    }

    // Locally the coordinator executes nothing but ssh: no shell, ever.
    let trace = lab.dir.path().join("execve.trace");
    let mut traced = lab.fabric.node(0).ns.command("/usr/bin/strace");
    traced
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=execve,execveat",
            "-e",
            "status=successful",
            "-o",
        ])
        .arg(&trace)
        .arg(support::bin())
        .args(["--cluster", "--ssh-config"])
        .arg(&lab.ssh_config)
        .args(CHECKS)
        .args(["--format", "json"])
        .env("HOME", "/nonexistent-spx-test-home");
    let (code, _, err) = run(&mut traced);
    assert_eq!(code, 0, "{err}");
    let programs: BTreeSet<String> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter(|l| l.contains("execve"))
        .filter_map(|l| l.split('"').nth(1).map(str::to_owned))
        .collect();
    let expected: BTreeSet<String> = [support::bin().to_owned(), "/usr/bin/ssh".to_owned()].into();
    assert_eq!(
        programs,
        expected,
        "{}",
        std::fs::read_to_string(&trace).unwrap()
    );

    // The table (-v: every result) fits a 100-column terminal and shows
    // both matrices.
    let (code, text, err) = run(lab
        .coordinator(0)
        .args(CHECKS)
        .arg("-v")
        .env("COLUMNS", "100"));
    assert_eq!(code, 0, "{err}");
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    assert!(text.contains("path MTU, rows from, columns to:"), "{text}");
    assert!(
        text.contains("6 nodes (6 answered); OVN NB/SB read once, by n0"),
        "{text}"
    );

    // Prometheus: every node's series with a node label, and the matrix:
    // a count per verdict, and no series for a healthy pair (one per
    // failing pair only; never N²).
    // (mtu.path alone: promtool's lint objects to the existing
    // spx_doctor_esp_sa_count name, a gauge with a `_count` suffix.)
    let (code, text, err) =
        run(lab
            .coordinator(0)
            .args(["--check", "mtu.path", "--format", "prometheus"]));
    assert_eq!(code, 0, "{err}");
    crate::monitoring::promtool_check(&text);
    for line in [
        "spx_doctor_cluster_paths{verdict=\"ok\"} 30",
        "spx_doctor_check_status{node=\"n3\",check=\"mtu.path\",status=\"pass\"} 1",
        "spx_doctor_cluster_check_status{check=\"cluster.path-matrix\",status=\"pass\"} 1",
        "spx_doctor_cluster_node_up{node=\"n4\"} 1",
        "spx_doctor_run_exit_code{node=\"n2\"} 0",
        "spx_doctor_cluster_run_exit_code 0",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line}:\n{text}");
    }
    assert!(
        !text.contains("spx_doctor_cluster_path_mtu_bytes{")
            && !text.contains("spx_doctor_path_mtu_bytes{"),
        "no series per healthy pair:\n{text}"
    );

    // 2. n3's switch port at 1500: exactly the paths through it fail, both
    // directions, black-holed at 1500.
    lab.fabric.switch.ip(&["link", "set", "p3", "mtu", "1500"]);
    let (n0, n3) = (lab.fabric.node(0), lab.underlay(3));
    assert!(
        n0.ping_df(n3, 1472) && !n0.ping_df(n3, 1473),
        "the oracle: 1500 to n3"
    );
    assert!(n0.ping_df(lab.underlay(4), 8972), "the oracle: 9000 to n4");
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(CHECKS));
    assert_eq!(code, 1, "{doc:#}");
    let pm = cluster_check(&doc, "cluster.path-matrix");
    assert_eq!(pm["status"], "fail", "{pm:#}");
    assert_eq!(
        strings(&pm["evidence"]["failing"]),
        pairs_through("n3", &names),
        "{:#}",
        node(&doc, "n3")["report"]
    );
    assert_eq!(pm["evidence"]["cut_off"], serde_json::json!(["n3"]));
    assert_eq!(pm["evidence"]["asymmetric"], serde_json::json!([]));
    assert_eq!(pm["evidence"]["largest_common_mtu"], 1500);
    let summary = pm["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("10 of 30 paths cannot carry 9000 bytes: every path to and from n3 (carries 1500: n3's link or its switch port): n0<->n3, n1<->n3, n2<->n3, n3<->n4, n3<->n5"),
        "{summary}"
    );
    for c in doc["path_matrix"].as_array().unwrap() {
        let through = c["from"] == "n3" || c["to"] == "n3";
        assert_eq!(
            c["verdict"],
            if through { "blackhole" } else { "ok" },
            "{c}"
        );
        if !through {
            assert_eq!(c["path_mtu"], 9000, "{c}");
            continue;
        }
        // The size, as ping -M do finds it from the same node. A veth's
        // receive check allows a VLAN tag's 4 bytes more, so from n3 the
        // path carries 1504, which mtu.path may prove only in part in its
        // 3 rounds (then it says so: path_mtu_inexact).
        let mtu = c["path_mtu"].as_u64().unwrap() as u32;
        assert!((1500..=1504).contains(&mtu), "{c}");
        let from: usize = c["from"].as_str().unwrap()[1..].parse().unwrap();
        let to: usize = c["to"].as_str().unwrap()[1..].parse().unwrap();
        let n = lab.fabric.node(from);
        assert!(
            n.ping_df(lab.underlay(to), mtu - 28),
            "oracle: {c} carries its path_mtu"
        );
        if c.get("path_mtu_inexact").is_none() {
            assert!(
                !n.ping_df(lab.underlay(to), mtu - 27),
                "oracle: {c} carries no more"
            );
        }
    }
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(["--for", "enable-jumbo"]));
    assert_eq!(code, 1, "{doc:#}");
    let runbook = doc["runbook"].as_array().unwrap();
    assert!(
        runbook[0]
            .as_str()
            .unwrap()
            .starts_with("STOP: not every pair carries 9000"),
        "{runbook:#?}"
    );
    assert!(runbook[1]
        .as_str()
        .unwrap()
        .starts_with("one node at a time, in this order: n0, n1, n2, n3, n4, n5"));
    lab.fabric.switch.ip(&["link", "set", "p3", "mtu", "9000"]);

    // 3. An asymmetric path: n1's firewall drops echo requests above 1500
    // bytes (its replies are not limited). n1 reaches everyone at 9000;
    // no one reaches n1 above 1500.
    nft(
        &lab,
        1,
        "table inet spxlab {\n chain input {\n  type filter hook input priority 0; policy accept;\n  icmp type echo-request meta length > 1500 drop\n }\n}\n",
    );
    let (n1, n2) = (lab.fabric.node(1), lab.fabric.node(2));
    assert!(
        n1.ping_df(lab.underlay(2), 8972),
        "the oracle: n1->n2 carries 9000"
    );
    assert!(
        !n2.ping_df(lab.underlay(1), 8972) && n2.ping_df(lab.underlay(1), 1472),
        "the oracle: n2->n1 1500"
    );
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(CHECKS));
    assert_eq!(code, 1, "{doc:#}");
    let pm = cluster_check(&doc, "cluster.path-matrix");
    let into_n1: BTreeSet<String> = names
        .iter()
        .filter(|m| *m != "n1")
        .map(|m| format!("{m}->n1"))
        .collect();
    assert_eq!(strings(&pm["evidence"]["failing"]), into_n1, "{pm:#}");
    let asym = strings(&pm["evidence"]["asymmetric"]);
    assert_eq!(asym.len(), 5, "{asym:#?}");
    assert!(
        asym.contains("n1->n2 carries 9000, n2->n1 only 1500 (blackhole)"),
        "{asym:#?}"
    );
    assert_eq!(pm["evidence"]["cut_off"], serde_json::json!([]));
    nft(&lab, 1, "delete table inet spxlab");

    // 4. Drift: n2's config turns IPsec on; the others have it off.
    lab.write_config(2, &lab.config_text(2, true, 9000));
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(CHECKS));
    assert_eq!(code, 1, "{doc:#}");
    let drift = cluster_check(&doc, "cluster.config-drift");
    assert_eq!(drift["status"], "fail");
    assert_eq!(
        drift["summary"],
        "the nodes' configs disagree: ipsec_enabled: n2 has ipsec_enabled = true (the other 5 have ipsec_enabled = false)"
    );
    assert_eq!(
        drift["evidence"]["drift"][0]["values"][1]["nodes"],
        serde_json::json!(["n2"])
    );
    assert_eq!(cluster_check(&doc, "cluster.sa-pairs")["status"], "error");
    assert_eq!(cluster_check(&doc, "cluster.path-matrix")["status"], "pass");
}

#[root_test]
fn cluster_names_every_way_a_node_does_not_answer() {
    let mut nodes = vec![LabNode::jumbo(); 6];
    nodes[4].binary = Binary::Missing;
    nodes[5].binary = Binary::Hangs;
    let mut lab = SshLab::new(nodes);
    lab.stop_sshd(2);
    lab.change_known_host_key(3);
    let known = std::fs::read_to_string(&lab.known_hosts).unwrap();

    let t0 = Instant::now();
    let (code, doc) =
        run_cluster_json(
            lab.coordinator(0)
                .args(["--check", "mtu.path", "--timeout", "4s"]),
        );
    let took = t0.elapsed();
    assert_eq!(code, 2, "nothing failed, four nodes unseen: {doc:#}");
    assert!(
        took < Duration::from_millis(5000),
        "bounded by --timeout 4s: {took:?}"
    );
    assert_eq!(doc["summary"]["unreachable"], 4);
    assert_eq!(node(&doc, "n1")["status"], "ok");
    let reason = |n: &str| node(&doc, n)["reason"].as_str().unwrap().to_owned();
    let error = |n: &str| node(&doc, n)["error"].as_str().unwrap().to_owned();
    assert_eq!(reason("n2"), "connection-refused");
    assert!(
        error("n2").contains("Connection refused"),
        "{}",
        error("n2")
    );
    assert_eq!(reason("n3"), "host-key-changed");
    assert_eq!(
        error("n3"),
        format!(
            "host key changed: Host key for {} has changed and you have requested strict checking.",
            lab.addr(3)
        )
    );
    assert_eq!(reason("n4"), "binary-not-found");
    assert!(
        error("n4").contains("spx-doctor") && error("n4").contains("not found"),
        "{}",
        error("n4")
    );
    assert_eq!(reason("n5"), "deadline");
    // The changed key was never accepted: known_hosts is as it was, and n3's
    // sshd never authenticated anyone.
    assert_eq!(std::fs::read_to_string(&lab.known_hosts).unwrap(), known);
    assert!(!lab.sshd_log(3).contains("Accepted"), "{}", lab.sshd_log(3));
    let reach = cluster_check(&doc, "cluster.reachable");
    assert_eq!(reach["status"], "error");
    assert!(
        reach["summary"]
            .as_str()
            .unwrap()
            .starts_with("4 of 6 nodes did not answer"),
        "{reach:#}"
    );
    assert!(
        reach["remediation"]
            .to_string()
            .contains("never accepts a changed key"),
        "{reach:#}"
    );
    // n0 and n1 still probed everyone: their rows are measured.
    let pm = cluster_check(&doc, "cluster.path-matrix");
    assert_eq!(pm["status"], "error", "{pm:#}");
    for c in doc["path_matrix"].as_array().unwrap() {
        let measured = c["from"] == "n0" || c["from"] == "n1";
        assert_eq!(c["verdict"] == "ok", measured, "{c}");
    }

    // The same run as JUnit, read by junitparser: a suite per node in order
    // (those that answered hold their checks, those that did not are empty
    // and say why), then the cluster checks.
    if crate::junit::junitparser_or_skip("cluster_names_every_way_a_node_does_not_answer (junit)") {
        let dir = tempfile::tempdir().unwrap();
        let xml = dir.path().join("cluster.xml");
        let (code, _, err) = run(lab
            .coordinator(0)
            .args([
                "--check",
                "mtu.path",
                "--timeout",
                "4s",
                "--format",
                "junit",
                "--output",
            ])
            .arg(&xml));
        assert_eq!(code, 2, "{err}");
        let junit = crate::junit::read_junit(&xml);
        let suites = junit["suites"].as_array().unwrap();
        let names: Vec<&str> = suites.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["n0", "n1", "n2", "n3", "n4", "n5", "cluster"],
            "{junit:#}"
        );
        for s in &suites[..2] {
            assert_eq!(s["tests"], 1, "mtu.path: {s:#}");
            assert_eq!(s["cases"][0]["name"], "mtu.path");
            assert_eq!(s["system_err"], Value::Null);
        }
        for (s, n) in suites[2..6].iter().zip(["n2", "n3", "n4"]) {
            assert_eq!(s["tests"], 0, "{s:#}");
            assert_eq!(s["system_err"], node(&doc, n)["error"], "{s:#}");
        }
        // n5's words depend on who saw its deadline first in this second
        // run (its worker killing ssh, or the collector giving up on the
        // worker under load): both name the deadline.
        assert_eq!(suites[5]["tests"], 0, "{:#}", suites[5]);
        assert!(
            suites[5]["system_err"]
                .as_str()
                .is_some_and(|e| e.contains("deadline")),
            "{:#}",
            suites[5]
        );
        let cluster = &suites[6];
        let ids: Vec<&str> = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        let cases: Vec<&str> = cluster["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(cases, ids, "{cluster:#}");
        let reachable =
            &cluster["cases"][ids.iter().position(|i| *i == "cluster.reachable").unwrap()];
        assert_eq!(reachable["results"][0]["kind"], "error", "{reachable:#}");
    }

    // A preflight never passes on a node it could not see.
    let (code, doc) =
        run_cluster_json(
            lab.coordinator(0)
                .args(["--for", "enable-jumbo", "--timeout", "4s"]),
        );
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(doc["profile"], "enable-jumbo");

    // Without the silent nodes: 0.
    let (code, doc) = run_cluster_json(
        lab.coordinator(0)
            .args(["--check", "mtu.path", "--nodes", "n1,n0"]),
    );
    assert_eq!(code, 0, "{doc:#}");
    let order: Vec<&str> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["n1", "n0"], "--nodes order");

    // The table names them too (wide enough that no line breaks).
    let (code, text, _) =
        run(lab
            .coordinator(0)
            .args(["--check", "mtu.path", "--timeout", "4s", "--width", "1000"]));
    assert_eq!(code, 2);
    assert!(
        text.contains("n3 (host key changed: Host key for"),
        "{text}"
    );
    assert!(
        text.contains("6 nodes (2 answered, 4 did not: n2–n5);"),
        "{text}"
    );
}

/// A lab of `count` nodes, each with a login user `spinifex` and
/// passwordless sudo, except n2, whose sudo wants a password.
fn sudo_lab(count: usize) -> SshLab {
    let mut nodes = vec![LabNode::jumbo(); count];
    for n in nodes.iter_mut() {
        n.user = Some(Sudo::NoPassword);
    }
    nodes[2].user = Some(Sudo::Password);
    SshLab::new(nodes)
}

#[root_test]
fn cluster_over_sudo_and_a_sudo_that_wants_a_password() {
    let lab = sudo_lab(3);
    let (code, doc) = run_cluster_json(lab.coordinator(0).args([
        "--check",
        "ipsec.xfrm",
        "--ssh-user",
        "spinifex",
    ]));
    assert_eq!(code, 2, "{doc:#}");
    // n1 ran the doctor as root through `sudo -n`: the SA dump needs
    // CAP_NET_ADMIN, and it concluded.
    let n1 = node(&doc, "n1");
    assert_eq!(n1["status"], "ok", "{n1:#}");
    assert_eq!(n1["report"]["checks"][0]["status"], "pass", "{n1:#}");
    assert!(lab.sshd_log(1).contains("Accepted publickey for spinifex"));
    let n2 = node(&doc, "n2");
    assert_eq!(n2["reason"], "sudo-password", "{n2:#}");
    assert_eq!(
        n2["error"],
        "sudo wants a password: sudo: a password is required"
    );
    assert!(cluster_check(&doc, "cluster.reachable")["remediation"]
        .to_string()
        .contains("spinifex ALL=(root) NOPASSWD: /usr/local/bin/spx-doctor"));
}

/// A stand-in `ssh` that records its argv and says "Connection refused":
/// proof of what the doctor would run, and whether it ran anything at all.
struct FakeSsh {
    dir: tempfile::TempDir,
}

impl FakeSsh {
    fn new() -> FakeSsh {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ssh = dir.path().join("ssh");
        std::fs::write(
            &ssh,
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$(dirname \"$0\")/argv.$$\"\necho 'ssh: connect to host x port 22: Connection refused' >&2\nexit 255\n",
        )
        .unwrap();
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeSsh { dir }
    }

    fn path(&self) -> String {
        format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// Every recorded argv, one Vec per ssh run.
    fn runs(&self) -> Vec<Vec<String>> {
        std::fs::read_dir(self.dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("argv."))
            .map(|e| {
                std::fs::read_to_string(e.path())
                    .unwrap()
                    .lines()
                    .map(str::to_owned)
                    .collect()
            })
            .collect()
    }
}

#[test]
fn hostile_names_and_values_are_refused_before_any_ssh_runs() {
    let fake = FakeSsh::new();
    let dir = tempfile::tempdir().unwrap();
    let good = "[nodes.n1]\nhost = \"198.18.0.2\"\n[nodes.n2]\nhost = \"198.18.0.3\"\n";
    for (config, args, says) in [
        (
            "[nodes.\"n1;touch /tmp/spx-pwned\"]\nhost = \"198.18.0.2\"\n",
            &[][..],
            "node name",
        ),
        (
            "[nodes.n1]\nhost = \"-oProxyCommand=touch /tmp/spx-pwned\"\n",
            &[],
            "nodes.n1.host",
        ),
        (
            good,
            &["--nodes", "n1;id"],
            "--nodes: unknown node \"n1;id\"; the config's nodes: n1, n2",
        ),
        (good, &["--nodes", "n9"], "the config's nodes: n1, n2"),
        (
            good,
            &["--ssh-user", "root;id"],
            "--ssh-user: \"root;id\" is not a user name",
        ),
        (
            good,
            &["--ssh-user=-oProxyCommand=id"],
            "--ssh-user: \"-oProxyCommand=id\" is not a user name",
        ),
        (
            good,
            &["--remote-bin", "spx-doctor;id"],
            "--remote-bin: \"spx-doctor;id\" cannot be passed",
        ),
        (good, &["--remote-bin", "$(id)"], "--remote-bin"),
        (
            good,
            &["--interface", "eth0$x"],
            "--interface: \"eth0$x\" cannot be passed",
        ),
        (
            good,
            &["--ssh-config", "/nonexistent/ssh_config"],
            "--ssh-config /nonexistent/ssh_config",
        ),
        (
            good,
            &["--timeout", "1200ms"],
            "in a cluster run the nodes get 900ms of it",
        ),
        ("", &[], "has no [nodes.*] tables"),
    ] {
        let cfg = write_config(dir.path(), config);
        let (code, out, err) = run(spx()
            .env("PATH", fake.path())
            .arg("--cluster")
            .arg("--config")
            .arg(&cfg)
            .args(args));
        assert_eq!(code, 2, "{config} {args:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(fake.runs().is_empty(), "ssh ran for {args:?}");
    }
    // A config path with a space cannot be passed to the nodes' shells.
    let spaced = dir.path().join("with space");
    std::fs::create_dir(&spaced).unwrap();
    let cfg = write_config(&spaced, good);
    let (code, _, err) = run(spx()
        .env("PATH", fake.path())
        .arg("--cluster")
        .arg("--config")
        .arg(&cfg));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot be passed to the other nodes' shells safely (it contains ' ')"),
        "{err}"
    );
    assert!(fake.runs().is_empty());
    assert!(!std::path::Path::new("/tmp/spx-pwned").exists());
}

#[test]
fn the_remote_command_is_single_quoted_words_and_host_keys_stay_checked() {
    let fake = FakeSsh::new();
    let dir = tempfile::tempdir().unwrap();
    // No `node`: both nodes are remote; n1 reads OVN for the cluster.
    let cfg = write_config(
        dir.path(),
        "[nodes.n1]\nhost = \"198.18.0.2:8443\"\n[nodes.n2]\nadvertise = \"198.18.0.3\"\n",
    );
    let (code, doc) = run_cluster_json(
        spx()
            .env("PATH", fake.path())
            .arg("--cluster")
            .arg("--config")
            .arg(&cfg)
            .args([
                "--check",
                "mtu.path",
                "--ssh-user",
                "spinifex",
                "--peer",
                "198.18.0.9",
                "--mtu",
                "9000",
            ]),
    );
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(node(&doc, "n1")["reason"], "connection-refused");
    assert_eq!(doc["ovn_read_by"], "n1");
    // Per node: `ssh OPTIONS -G HOST` (what the ssh_config makes of it:
    // the stand-in answers nothing, so host keys are checked strictly),
    // then the run itself.
    let (mut asked, mut runs): (Vec<_>, Vec<_>) = fake
        .runs()
        .into_iter()
        .partition(|r| r.contains(&"-G".to_owned()));
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(asked.len(), 2, "{asked:?}");
    runs.sort_by_key(|r| r.contains(&"198.18.0.3".to_owned()));
    asked.sort_by_key(|r| r.contains(&"198.18.0.3".to_owned()));
    for (g, run) in asked.iter().zip(&runs) {
        let at = run.iter().position(|w| w == "--").unwrap();
        let mut expected = run[..at - 3].to_vec();
        expected.push("-G".into());
        expected.push(run[at - 1].clone());
        assert_eq!(g, &expected, "the same options, nothing run remotely");
    }
    let cfg_word = format!("'{}'", cfg.display());
    for (argv, host, reader) in [
        (&runs[0], "198.18.0.2", false),
        (&runs[1], "198.18.0.3", true),
    ] {
        assert_eq!(
            &argv[..5],
            ["-o", "BatchMode=yes", "-o", "ConnectTimeout=4", "-T"],
            "{argv:?}"
        );
        // Host keys are checked strictly whatever the ssh_config says,
        // and known_hosts is the operator's.
        assert!(
            !argv.iter().any(|w| w.contains("KnownHosts")
                || (w.contains("StrictHostKeyChecking") && w != "StrictHostKeyChecking=yes")),
            "{argv:?}"
        );
        let at = argv.iter().position(|w| w == "--").unwrap();
        assert_eq!(argv[at - 1], host, "the port is ssh_config's business");
        assert_eq!(
            &argv[at - 5..at - 1],
            ["-l", "spinifex", "-o", "StrictHostKeyChecking=yes"]
        );
        let remote = &argv[at + 1..];
        for w in remote {
            assert!(
                w.len() >= 2
                    && w.starts_with('\'')
                    && w.ends_with('\'')
                    && w[1..w.len() - 1]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._/:,+=@%-".contains(c)),
                "not a plain quoted word: {w:?}"
            );
        }
        let words: Vec<&str> = remote.iter().map(String::as_str).collect();
        assert_eq!(
            &words[..7],
            [
                "'sudo'",
                "'-n'",
                "'spx-doctor'",
                "'--format'",
                "'json'",
                "'--config'",
                cfg_word.as_str()
            ]
        );
        let joined = words.join(" ");
        assert!(joined.contains("'--check' 'mtu.path'"), "{joined}");
        assert!(
            joined.contains("'--timeout' '8000ms' '--sample' '1000ms' '--probe-timeout' '1000ms'"),
            "{joined}"
        );
        assert!(
            joined.contains("'--mtu' '9000' '--peer' '198.18.0.9'"),
            "{joined}"
        );
        assert_eq!(joined.contains("'--ovn-read-by' 'n1'"), reader, "{joined}");
    }
}

#[test]
fn cluster_checks_belong_to_cluster_runs() {
    // Not selected by default in a node run.
    let (_, doc) = support::run_json(spx().args(["--skip", "sysctl", "--sample", "100ms"]));
    assert!(!doc["checks"].to_string().contains("\"cluster."), "{doc:#}");
    // Asked for by name: a skip that says how to run it.
    let (code, doc) = support::run_json(spx().args(["--check", "cluster.path-matrix"]));
    assert_eq!(code, 0);
    let c = support::check(&doc, "cluster.path-matrix");
    assert_eq!(c["status"], "skip");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("run `spx-doctor --cluster`"),
        "{c:#}"
    );
    // The cluster flags need --cluster.
    let (code, _, err) = run(spx().args(["--nodes", "n1"]));
    assert_eq!(code, 2);
    assert!(err.contains("--cluster"), "{err}");
    // Listed and explained like every other check.
    let (_, list, _) = run(spx().arg("list"));
    for id in [
        "cluster.reachable",
        "cluster.config-drift",
        "cluster.path-matrix",
        "cluster.sa-pairs",
    ] {
        assert!(list.contains(id), "{list}");
        let (code, text, _) = run(spx().args(["explain", id]));
        assert_eq!(code, 0);
        assert!(
            text.contains("(judged by `spx-doctor --cluster` from every node's report)"),
            "{text}"
        );
    }
}

/// The fixes of `cluster.reachable`, one per node that did not answer.
fn fixes(doc: &Value) -> Vec<String> {
    support::strings(&cluster_check(doc, "cluster.reachable")["remediation"])
}

/// The fix naming `name` (`name: …`).
fn fix_for(doc: &Value, name: &str) -> String {
    let prefix = format!("{name}: ");
    fixes(doc)
        .into_iter()
        .find(|f| f.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no fix for {name}: {:#?}", fixes(doc)))
}

#[root_test]
fn a_lax_ssh_config_never_lets_a_changed_host_key_through() {
    let lab = SshLab::new(vec![LabNode::jumbo(); 4]);
    lab.change_known_host_key(1);
    lab.forget_known_host(2);
    let known = std::fs::read_to_string(&lab.known_hosts).unwrap();
    // The operator's ssh_config turns host-key checking off: OpenSSH would
    // warn about n1's changed key and log in anyway, and add n2's.
    let lax = lab.ssh_config_with("lax_ssh_config", &["StrictHostKeyChecking no"]);
    let (code, doc) = run_cluster_json(
        lab.coordinator_with(0, &lax)
            .args(["--check", "ipsec.xfrm"]),
    );
    assert_eq!(code, 2, "{doc:#}");
    let n1 = node(&doc, "n1");
    assert_eq!(n1["reason"], "host-key-changed", "{n1:#}");
    assert_eq!(n1["report"], Value::Null);
    assert_eq!(
        n1["error"],
        format!(
            "host key changed: Host key for {} has changed and you have requested strict checking.",
            lab.addr(1)
        )
    );
    let n2 = node(&doc, "n2");
    assert_eq!(n2["reason"], "host-key-unknown", "{n2:#}");
    assert_eq!(n2["report"], Value::Null);
    assert_eq!(node(&doc, "n3")["status"], "ok");
    // Nothing was accepted: known_hosts is as it was, and neither sshd
    // authenticated anyone.
    assert_eq!(std::fs::read_to_string(&lab.known_hosts).unwrap(), known);
    for i in [1, 2] {
        assert!(!lab.sshd_log(i).contains("Accepted"), "{}", lab.sshd_log(i));
    }
    // The fixes name the known_hosts file and the host as ssh has them.
    let kh = lab.known_hosts.display().to_string();
    let f1 = fix_for(&doc, "n1");
    assert!(
        f1.contains(&format!("`ssh-keygen -f {kh} -R {}`", lab.addr(1)))
            && f1.contains(&format!("`ssh-keyscan {} | ssh-keygen -lf -`", lab.addr(1)))
            && f1.contains("never accepts a changed key"),
        "{f1}"
    );
    let f2 = fix_for(&doc, "n2");
    assert!(
        f2.contains(&format!("{kh} has no key for {}", lab.addr(2)))
            && f2.contains(&format!("`ssh-keyscan {} >> {kh}`", lab.addr(2))),
        "{f2}"
    );

    // `accept-new` adds a key never seen (n2's), as OpenSSH documents, and
    // still refuses a changed one (n1's).
    let new = lab.ssh_config_with(
        "accept_new_ssh_config",
        &["StrictHostKeyChecking accept-new"],
    );
    let (code, doc) = run_cluster_json(
        lab.coordinator_with(0, &new)
            .args(["--check", "ipsec.xfrm"]),
    );
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(node(&doc, "n1")["reason"], "host-key-changed");
    assert_eq!(node(&doc, "n2")["status"], "ok", "{doc:#}");
    let now = std::fs::read_to_string(&lab.known_hosts).unwrap();
    assert!(now.starts_with(&known), "only added to: {now}");
    assert!(
        now[known.len()..].starts_with(&format!("{} ", lab.addr(2))),
        "{now}"
    );
    assert!(!lab.sshd_log(1).contains("Accepted"), "{}", lab.sshd_log(1));
}

#[root_test]
fn fixes_name_the_remote_bin_and_the_user_this_run_used() {
    let lab = sudo_lab(5);
    // The doctor where this site installs it, /etc/spinifex/bin: there on
    // n1 and n2, missing on n3, not executable on n4.
    const BIN: &str = "/etc/spinifex/bin/spx-doctor";
    for i in 1..5 {
        std::fs::create_dir_all(lab.node_spinifex(i, "bin")).unwrap();
    }
    for i in [1, 2] {
        std::os::unix::fs::symlink(support::bin(), lab.node_spinifex(i, "bin/spx-doctor")).unwrap();
    }
    std::fs::write(lab.node_spinifex(4, "bin/spx-doctor"), "#!/bin/sh\n").unwrap();
    let no_usual_words = |f: &str| {
        assert!(
            !f.contains("/usr/local/bin") && !f.contains("pass --remote-bin PATH"),
            "{f}"
        );
    };

    // As spinifex, through sudo.
    let (code, doc) = run_cluster_json(lab.coordinator(0).args([
        "--check",
        "ipsec.xfrm",
        "--ssh-user",
        "spinifex",
        "--remote-bin",
        BIN,
    ]));
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(node(&doc, "n1")["status"], "ok", "{doc:#}");
    assert_eq!(node(&doc, "n2")["reason"], "sudo-password");
    let f2 = fix_for(&doc, "n2");
    assert!(
        f2.contains(&format!("`spinifex ALL=(root) NOPASSWD: {BIN}`")),
        "{f2}"
    );
    no_usual_words(&f2);
    // sudo finds neither a missing nor a non-executable file.
    for n in ["n3", "n4"] {
        assert_eq!(node(&doc, n)["reason"], "binary-not-found", "{doc:#}");
        let f = fix_for(&doc, n);
        assert!(
            f.contains(&format!("nothing is at --remote-bin {BIN} there"))
                && f.contains(&format!("`install -m 0755 spx-doctor {BIN}` on {n}")),
            "{f}"
        );
        no_usual_words(&f);
    }

    // As root: the remote shell tells a missing file (127) from one it
    // cannot execute (126).
    let (code, doc) = run_cluster_json(lab.coordinator(0).args([
        "--check",
        "ipsec.xfrm",
        "--remote-bin",
        BIN,
        "--nodes",
        "n0,n3,n4",
    ]));
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(node(&doc, "n3")["reason"], "binary-not-found");
    assert_eq!(node(&doc, "n4")["reason"], "not-executable", "{doc:#}");
    let f4 = fix_for(&doc, "n4");
    assert!(f4.contains(&format!("`chmod 0755 {BIN}` on n4")), "{f4}");
    no_usual_words(&f4);

    // No --ssh-user: the user is the one the ssh_config names, and the
    // fix says which (and that --ssh-user is another way).
    let other = lab.ssh_config_with("user_ssh_config", &["User spx-nobody"]);
    let (code, doc) = run_cluster_json(lab.coordinator_with(0, &other).args([
        "--check",
        "ipsec.xfrm",
        "--nodes",
        "n0,n1",
    ]));
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(node(&doc, "n1")["reason"], "permission-denied", "{doc:#}");
    let f1 = fix_for(&doc, "n1");
    assert!(
        f1.contains("public key for spx-nobody there")
            && f1.contains(&format!(
                "`ssh-copy-id -F {} spx-nobody@{}`",
                other.display(),
                lab.addr(1)
            ))
            && f1.ends_with("or pass --ssh-user"),
        "{f1}"
    );
}

#[root_test]
fn nodes_still_queued_behind_parallel_at_the_deadline_say_so() {
    let lab = SshLab::new(vec![LabNode::jumbo(); 12]);
    // Each node's doctor takes its 1 s sample window; two at a time, 11
    // nodes cannot all start in 3 s: at most 3 starts per session (at 0,
    // after 1 s, after 2 s), so at least 5 are still queued at the end.
    let (code, doc) = run_cluster_json(lab.coordinator(0).args([
        "--check",
        "udp.rcvbuf-errors",
        "--parallel",
        "2",
        "--timeout",
        "3s",
    ]));
    assert_eq!(code, 2, "{doc:#}");
    let queued: Vec<&Value> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["reason"] == "queued")
        .collect();
    assert!(queued.len() >= 5, "{doc:#}");
    for n in &queued {
        let name = n["name"].as_str().unwrap();
        let error = n["error"].as_str().unwrap();
        assert!(
            error.starts_with("still queued behind --parallel at the deadline: waited ")
                && error.ends_with(
                    "s for one of --parallel 2 ssh sessions; the deadline came before it started"
                ),
            "{error}"
        );
        let fix = fix_for(&doc, name);
        assert!(
            fix.contains("for one of --parallel 2 ssh sessions and never started")
                && fix
                    .contains("raise --parallel (to 11 to start every node at once) or --timeout")
                && !fix.contains("is the host up"),
            "{fix}"
        );
        // Never started: its sshd saw no one.
        let i: usize = name[1..].parse().unwrap();
        assert!(!lab.sshd_log(i).contains("Accepted"), "{}", lab.sshd_log(i));
    }
    // Those that started late and ran out of time say they waited too.
    for n in doc["nodes"].as_array().unwrap() {
        if n["reason"] == "deadline" {
            let name = n["name"].as_str().unwrap();
            let fix = fix_for(&doc, name);
            if n["error"].as_str().unwrap().contains("it had waited") {
                assert!(fix.contains("raise --parallel"), "{fix}");
            }
        }
    }

    // The table says it too, once per queued node.
    let (code, text, _) = run(lab.coordinator(0).args([
        "--check",
        "udp.rcvbuf-errors",
        "--parallel",
        "2",
        "--timeout",
        "3s",
        "--nodes",
        "n0,n1,n2,n3,n4,n5,n6,n7",
        "--width",
        "1000",
    ]));
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("(still queued behind --parallel at the deadline: waited"),
        "{text}"
    );
}

/// What a hostile node writes into its report's text: a window title, a
/// screen clear, colour, a C1 CSI, DEL, a right-to-left override, a line
/// of its own making, and the end of a Prometheus label.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7} \u{1b}[2J \u{1b}[31mred\u{1b}[0m \u{9b}2J \u{7f} \u{202e}desrever \r\nFORGED: cluster.path-matrix pass\r\n\\\"} 1";

/// True for a character a terminal acts on.
fn acts(c: char) -> bool {
    c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)
}

/// The table of a run whose node n2 forged its report: nothing in it acts
/// on a terminal, and no line (no row of a table) starts with words of the
/// node's making.
fn assert_inert(text: &str) {
    if let Some(c) = text.chars().find(|c| *c != '\n' && acts(*c)) {
        panic!("{c:?} reached the terminal:\n{text}");
    }
    assert!(text.contains(r"\x1b]0;pwned\x07"), "{text}");
    assert!(text.contains("FORGED"), "{text}");
    for line in text.lines() {
        let start = line.trim_start_matches(|c: char| "│┆ ".contains(c));
        assert!(!start.starts_with("FORGED"), "{line}\n{text}");
    }
}

#[root_test]
fn a_node_report_of_terminal_control_is_shown_inert() {
    let mut nodes = vec![LabNode::jumbo(); 3];
    nodes[2].binary = Binary::Forged;
    let lab = SshLab::new(nodes);
    let args = ["--check", "mtu.path"];
    // A valid report (what n2's doctor says as a node), its texts replaced.
    let (code, json, err) =
        run(lab
            .fabric
            .node(2)
            .spx()
            .args(args)
            .args(["--format", "json", "--ovn-read-by", "n0"]));
    assert_eq!(code, 0, "{err}");
    let mut forged: Value = serde_json::from_str(&json).unwrap();
    forged["exit_code"] = 1.into();
    forged["tool"]["version"] = format!("0.1.0 {HOSTILE}").into();
    let c = &mut forged["checks"][0];
    c["status"] = "fail".into();
    c["summary"] = format!("the path {HOSTILE}").into();
    c["remediation"] = serde_json::json!([format!("fix: {HOSTILE}"), HOSTILE]);
    std::fs::write(lab.dir.path().join("forged.json"), forged.to_string()).unwrap();

    // JSON keeps the exact text.
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(args));
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(node(&doc, "n2")["status"], "ok");
    assert_eq!(node(&doc, "n2")["report"], forged);
    assert_eq!(cluster_check(&doc, "cluster.reachable")["status"], "warn");

    // The table (-v: the forged pass too), plain and in colour: data,
    // never control.
    let (code, text, _) = run(lab
        .coordinator(0)
        .args(args)
        .arg("-v")
        .env("COLUMNS", "250"));
    assert_eq!(code, 1);
    assert_inert(&text);
    assert!(
        text.contains(r"\u{9b}2J \x7f \u{202e}desrever \r\nFORGED: cluster.path-matrix pass\r\n"),
        "{text}"
    );
    assert!(
        text.contains("n2 runs 0.1.0 \\x1b]0;pwned\\x07"),
        "the cluster checks too: {text}"
    );
    let (code, text, _) = run(lab
        .coordinator(0)
        .args(args)
        .args(["--color", "always", "-v"])
        .env("COLUMNS", "250"));
    assert_eq!(code, 1);
    // The table's own colours are SGR sequences (ESC [ … m); nothing else.
    let mut plain = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find('\u{1b}') {
        plain.push_str(&rest[..at]);
        let seq = &rest[at + 1..];
        let end = seq.find('m').unwrap_or_else(|| panic!("not SGR: {seq:?}"));
        assert!(
            seq.starts_with('[') && seq[1..end].chars().all(|c| c.is_ascii_digit() || c == ';'),
            "not SGR: {:?}",
            &seq[..end + 1]
        );
        rest = &seq[end + 1..];
    }
    plain.push_str(rest);
    assert_inert(&plain);

    // JUnit shows the controls as the table does: junitparser reads it.
    if crate::junit::junitparser_or_skip("a_node_report_of_terminal_control_is_shown_inert (junit)")
    {
        let dir = tempfile::tempdir().unwrap();
        let xml = dir.path().join("cluster.xml");
        let (code, _, err) = run(lab
            .coordinator(0)
            .args(args)
            .args(["--format", "junit", "--output"])
            .arg(&xml));
        assert_eq!(code, 1, "{err}");
        let junit = crate::junit::read_junit(&xml);
        let n2 = &junit["suites"][2];
        assert_eq!(n2["name"], "n2", "{junit:#}");
        let result = &n2["cases"][0]["results"][0];
        assert_eq!(result["kind"], "failure", "{junit:#}");
        let message = result["message"].as_str().unwrap();
        assert!(
            message.contains(r"\x1b]0;pwned\x07 \x1b[2J") && message.contains(r"\r\nFORGED"),
            "{message:?}"
        );
        assert!(!message.chars().any(acts), "{message:?}");
    }

    // Prometheus: the label value escaped as the exposition format says;
    // promtool reads every line.
    let (code, text, err) = run(lab
        .coordinator(0)
        .args(args)
        .args(["--format", "prometheus"]));
    assert_eq!(code, 1, "{err}");
    crate::monitoring::promtool_check(&text);
    // The text format escapes backslash, double quote and line feed in a
    // label value; everything else is the value's own UTF-8.
    let version = forged["tool"]["version"].as_str().unwrap();
    let escaped = version
        .replace('\\', r"\\")
        .replace('"', r#"\""#)
        .replace('\n', r"\n");
    let info = format!("spx_doctor_info{{node=\"n2\",version=\"{escaped}\"}} 1");
    assert!(text.lines().any(|l| l == info), "{info:?}\n{text}");
    assert!(!text.lines().any(|l| l.starts_with("FORGED")), "{text}");
}
