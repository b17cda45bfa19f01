//! `spx-doctor agent` and `--cluster --via nats` against a real
//! `nats-server` (Debian's 2.9.10, configured as Spinifex's template:
//! TLS from a CA made by the test, token, JetStream, max_payload 1MB)
//! and real agents on the nodes of the sshd cluster lab
//! (`support::nats::NatsLab`). The ssh transport on the same lab is the
//! oracle: both must reach the same verdicts.

mod faults;
mod hostile;
mod path;
mod refusals;
mod swarm;
mod watch;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::{cluster_check, node};
use crate::support::nats::{self, NatsLab};
use crate::support::sshd::LabNode;
use crate::support::{self, run, run_cluster_json};
use spx_test_harness::root_test;

const CHECKS: [&str; 2] = ["--check", "mtu.path,ipsec.xfrm"];
/// The lab's nodes share two cores: a run over NATS starts all of them at
/// the same instant (over ssh the handshakes spread them), so a generous
/// deadline keeps a loaded machine from turning a verdict into a time-out.
const ROOMY: [&str; 2] = ["--timeout", "20s"];

/// Tests that need a nats-server say so, and must run under CI=true.
pub(crate) fn nats_or_skip(test: &str) -> bool {
    support::tool_or_skip(
        test,
        "nats-server (Debian's nats-server)",
        nats::available(),
    )
}

/// Every verdict of a cluster report, without the words and timings
/// that differ between two runs: exit code, each node's checks (status
/// and code), the cluster checks but cluster.bus (a transport's own), the
/// matrix (verdict; the size where it is exact on both sides).
pub(crate) fn verdicts(doc: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    out.insert("exit_code".into(), doc["exit_code"].to_string());
    for n in doc["nodes"].as_array().unwrap() {
        let name = n["name"].as_str().unwrap();
        out.insert(format!("{name} status"), n["status"].to_string());
        for c in n["report"]["checks"].as_array().into_iter().flatten() {
            out.insert(
                format!("{name} {}", c["id"].as_str().unwrap()),
                format!("{} {}", c["status"], c["code"]),
            );
        }
    }
    // cluster.bus judges the bus itself: over ssh there is none (a skip).
    for c in doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] != "cluster.bus")
    {
        out.insert(
            c["id"].as_str().unwrap().to_owned(),
            format!("{} {}", c["status"], c["code"]),
        );
    }
    for c in doc["path_matrix"].as_array().unwrap() {
        out.insert(
            format!(
                "{}->{}",
                c["from"].as_str().unwrap(),
                c["to"].as_str().unwrap()
            ),
            c["verdict"].to_string(),
        );
    }
    out
}

#[root_test]
fn nats_and_ssh_give_the_same_verdicts_on_a_lab_with_a_black_hole() {
    if !nats_or_skip("nats_and_ssh_give_the_same_verdicts_on_a_lab_with_a_black_hole") {
        return;
    }
    let mut nodes = vec![LabNode::jumbo(); 6];
    nodes[5].spec.port_mtu = 1500;
    let lab = NatsLab::new(nodes);
    let (n0, n5) = (lab.ssh.fabric.node(0), lab.ssh.underlay(5));
    assert!(
        n0.ping_df(n5, 1472) && !n0.ping_df(n5, 1473),
        "the oracle: 1500 to n5"
    );

    let (code, over_ssh) = run_cluster_json(
        lab.ssh
            .coordinator(0)
            .args(["--via", "ssh"])
            .args(CHECKS)
            .args(ROOMY),
    );
    assert_eq!(code, 1, "{over_ssh:#}");
    assert_eq!(over_ssh["via"], "ssh");
    // The default, with this node's [nodes.n0.nats]: NATS. A caller's
    // trace goes along.
    let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let t0 = Instant::now();
    let (code, over_nats) = run_cluster_json(
        lab.coordinator(0)
            .env("TRACEPARENT", trace)
            .args(CHECKS)
            .args(ROOMY),
    );
    let took = t0.elapsed();
    assert_eq!(code, 1, "{over_nats:#}");
    assert_eq!(over_nats["via"], "nats");
    let (a, b) = (verdicts(&over_nats), verdicts(&over_ssh));
    let differ: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("{k}: nats {:?}, ssh {:?}", a.get(k), b.get(k)))
        .collect();
    assert!(
        differ.is_empty(),
        "{differ:#?}\nn5 over NATS: {:#}\nn5's agent: {}",
        node(&over_nats, "n5")["report"]["checks"],
        lab.agent_log(5)
    );
    let pm = cluster_check(&over_nats, "cluster.path-matrix");
    assert_eq!(
        pm["evidence"]["cut_off"],
        serde_json::json!(["n5"]),
        "{pm:#}"
    );
    for (i, name) in lab.ssh.names.iter().enumerate() {
        let e = node(&over_nats, name);
        assert_eq!(e["via"], "nats", "{e:#}");
        assert!(e["host"].is_null(), "{e:#}");
        assert_eq!(e["report"]["node"], name.as_str(), "its own agent's report");
        // Every agent ran once for this request, in the caller's trace.
        lab.wait_log(
            i,
            "4bf92f3577b34da6a3ce929d0e0e4736",
            1,
            Duration::from_secs(2),
        );
    }
    // n0's report came from n0's agent, which read OVN for the cluster;
    // the others were told to leave it.
    assert_eq!(over_nats["ovn_read_by"], "n0");
    let theirs =
        node(&over_nats, "n3")["report"]["checks"][0]["evidence"]["peer_discovery"].to_string();
    assert!(
        theirs.contains("OVN SB is cluster-wide: read once in this cluster run, by n0"),
        "{theirs}"
    );
    assert!(
        took < Duration::from_secs(17),
        "the gather ends when every node answered, not at the deadline (20 s): {took:?}"
    );
    let reach = cluster_check(&over_nats, "cluster.reachable");
    assert_eq!(
        reach["summary"],
        "all 6 nodes answered with a valid report (6 agents over NATS)"
    );

    // Over NATS the coordinator executes nothing at all.
    let trace_file = lab.dir.path().join("execve.trace");
    let mut traced = lab.ssh.fabric.node(0).ns.command("/usr/bin/strace");
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
        .arg(&trace_file)
        .arg(support::bin())
        .args([
            "--cluster",
            "--format",
            "json",
            "--timeout",
            "20s",
            "--config",
        ])
        .arg(lab.etc(0).join("spinifex.toml"))
        .args(CHECKS)
        .env("HOME", "/nonexistent-spx-test-home");
    let (code, _, err) = run(&mut traced);
    assert_eq!(code, 1, "{err}");
    let execs: Vec<String> = std::fs::read_to_string(&trace_file)
        .unwrap()
        .lines()
        .filter(|l| l.contains("execve"))
        .map(str::to_owned)
        .collect();
    assert_eq!(execs.len(), 1, "only the doctor itself: {execs:#?}");

    // The table (-v: the passes' summaries too; wide enough that no line
    // breaks) says the transport and names the black hole the same way.
    let (code, text, err) = run(lab
        .coordinator(0)
        .args(CHECKS)
        .args(ROOMY)
        .args(["-v", "--width", "1000"]));
    assert_eq!(code, 1, "{err}");
    assert!(text.contains("(6 agents over NATS)"), "{text}");
    assert!(
        text.contains("every path to and from n5 (carries 1500"),
        "{text}"
    );
}

#[root_test]
fn an_agent_killed_is_named_and_back_in_the_next_run() {
    if !nats_or_skip("an_agent_killed_is_named_and_back_in_the_next_run") {
        return;
    }
    let mut lab = NatsLab::new(vec![LabNode::jumbo(); 3]);
    let (code, doc) =
        run_cluster_json(lab.coordinator(0).args(["--check", "mtu.path"]).args(ROOMY));
    assert_eq!(code, 0, "{doc:#}");

    lab.kill_agent(2);
    let t0 = Instant::now();
    let (code, doc) =
        run_cluster_json(
            lab.coordinator(0)
                .args(["--check", "mtu.path", "--timeout", "4s"]),
        );
    let took = t0.elapsed();
    assert_eq!(code, 2, "{doc:#}");
    assert!(
        took < Duration::from_millis(4500),
        "bounded by --timeout: {took:?}"
    );
    let n2 = node(&doc, "n2");
    assert_eq!(n2["status"], "unreachable");
    assert_eq!(n2["reason"], "no-agent");
    assert_eq!(
        n2["error"],
        "no agent answered on NATS: is spx-doctor-agent running on n2?"
    );
    for n in ["n0", "n1"] {
        let e = node(&doc, n);
        assert_eq!(e["status"], "ok", "{e:#}");
        assert_eq!(e["report"]["checks"][0]["id"], "mtu.path");
    }
    let reach = cluster_check(&doc, "cluster.reachable");
    assert!(
        reach["remediation"][0]
            .as_str()
            .unwrap()
            .starts_with("n2: start its agent"),
        "{reach:#}"
    );
    // Asked alone, on its own subject, the server says at once that no
    // one listens.
    let t0 = Instant::now();
    let (code, doc) = run_cluster_json(lab.coordinator(0).args([
        "--check",
        "mtu.path",
        "--nodes",
        "n2",
        "--timeout",
        "4s",
    ]));
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(node(&doc, "n2")["reason"], "no-agent");
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "no responders is known at once: {:?}",
        t0.elapsed()
    );

    // Back: the next run has it.
    lab.start_agent(2, &[]);
    lab.wait_connected(2, 1);
    let (code, doc) =
        run_cluster_json(lab.coordinator(0).args(["--check", "mtu.path"]).args(ROOMY));
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(node(&doc, "n2")["status"], "ok");

    // No agent anywhere: said once, with --via ssh as the way without.
    for i in 0..3 {
        lab.kill_agent(i);
    }
    let (code, doc) =
        run_cluster_json(
            lab.coordinator(0)
                .args(["--check", "mtu.path", "--timeout", "3s"]),
        );
    assert_eq!(code, 2, "{doc:#}");
    let said = "no spx-doctor agent answered on NATS: are the agents installed?";
    let checks = doc["checks"].to_string();
    assert_eq!(checks.matches(said).count(), 1, "{checks}");
    let reach = cluster_check(&doc, "cluster.reachable");
    assert!(
        reach["summary"].as_str().unwrap().starts_with(said),
        "{reach:#}"
    );
    assert_eq!(
        reach["remediation"].as_array().unwrap().len(),
        2,
        "{reach:#}"
    );
    assert!(checks.contains("--cluster --via ssh`"), "{checks}");
    for part in [&reach["summary"], &reach["remediation"]] {
        assert!(
            !part.to_string().contains("is spx-doctor-agent running on"),
            "{reach:#}"
        );
    }
    // The table names no node's missing agent one by one either.
    let (_, text, _) = run(lab
        .coordinator(0)
        .args(["--check", "mtu.path", "--timeout", "3s"]));
    assert!(!text.contains("is spx-doctor-agent running on"), "{text}");
}

#[root_test]
fn wrong_token_wrong_ca_and_a_server_down_are_named_and_the_agents_reconnect() {
    if !nats_or_skip("wrong_token_wrong_ca_and_a_server_down_are_named_and_the_agents_reconnect") {
        return;
    }
    let mut lab = NatsLab::new(vec![LabNode::jumbo(); 2]);
    let quick = ["--check", "sysctl", "--sample", "100ms", "--timeout", "3s"];
    let reasons = |doc: &Value| -> Vec<(String, String)> {
        doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["reason"].as_str().unwrap_or("").to_owned(),
                    n["error"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };

    // A wrong token on the coordinator's node.
    let ca = lab.server.ca.display().to_string();
    lab.write_config(0, "not-the-token", &ca);
    let t0 = Instant::now();
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(quick));
    assert_eq!(code, 2, "{doc:#}");
    assert!(t0.elapsed() < Duration::from_secs(3));
    for (reason, error) in reasons(&doc) {
        assert_eq!(reason, "nats-auth", "{doc:#}");
        assert!(error.contains("authorization violation"), "{error}");
    }
    let reach = cluster_check(&doc, "cluster.reachable");
    assert_eq!(
        reach["summary"]
            .as_str()
            .unwrap()
            .matches("authorization violation")
            .count(),
        1,
        "said once: {reach:#}"
    );

    // A CA that did not sign the server's certificate.
    let other = lab.dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    nats::pki(&other, "198.19.0.254");
    lab.write_config(0, nats::TOKEN, &other.join("ca.pem").display().to_string());
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(quick));
    assert_eq!(code, 2, "{doc:#}");
    for (reason, error) in reasons(&doc) {
        assert_eq!(reason, "nats-tls", "{doc:#}");
        assert!(error.contains("invalid peer certificate"), "{error}");
    }
    // A CA file that is not there.
    lab.write_config(0, nats::TOKEN, "/nonexistent-spx/ca.pem");
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(quick));
    assert_eq!(code, 2, "{doc:#}");
    assert!(reasons(&doc)[0]
        .1
        .contains("cannot read the CA certificate /nonexistent-spx/ca.pem"));
    lab.write_config(0, nats::TOKEN, &ca);

    // The server down: named, no hang; the agents say they lost it.
    lab.server.stop();
    let t0 = Instant::now();
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(quick));
    assert_eq!(code, 2, "{doc:#}");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    for (reason, error) in reasons(&doc) {
        assert_eq!(reason, "nats-connect", "{doc:#}");
        assert!(error.contains("Connection refused"), "{error}");
    }
    for i in 0..2 {
        lab.wait_log(
            i,
            "lost the connection to NATS at 198.19.0.254:4222",
            1,
            Duration::from_secs(5),
        );
    }
    // An agent started now, with a wrong token, keeps trying with backoff.
    lab.write_config(1, "not-the-token", &ca);
    lab.start_agent(1, &[]);
    lab.wait_log(
        1,
        "cannot connect: NATS at 198.19.0.254:4222",
        2,
        Duration::from_secs(5),
    );
    lab.server.restart();
    lab.wait_log(1, "authorization violation", 1, Duration::from_secs(15));
    // n0's agent reconnects by itself; n1's, given the right token, too.
    lab.wait_log(
        0,
        "reconnected to NATS at 198.19.0.254:4222",
        1,
        Duration::from_secs(15),
    );
    lab.write_config(1, nats::TOKEN, &ca);
    lab.start_agent(1, &[]);
    lab.wait_connected(1, 1);
    let (code, doc) = run_cluster_json(
        lab.coordinator(0)
            .args(["--check", "sysctl", "--sample", "100ms"])
            .args(ROOMY),
    );
    assert!(code < 2, "{doc:#}");
    assert_eq!(doc["summary"]["unreachable"], 0, "{doc:#}");
}
