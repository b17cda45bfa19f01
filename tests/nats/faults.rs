//! The bus when it misbehaves (issue 36), each situation made by hand on
//! a real nats-server (Debian's 2.9.10, as Spinifex configures it) with
//! real agents on the lab's nodes, and each judged by what the operator
//! sees: the words, the exit code and the time bound, with no agent
//! restarted.
//!
//! - a machine re-imaged from n2's disk (its /etc/spinifex, another
//!   machine id and address) answering as n2 beside it;
//! - the doctor's bucket deleted through the JetStream API under running
//!   agents and a running `watch`;
//! - n2 cut off from the bus for 30 s (port 4222 dropped by nftables in
//!   n2's own namespace), then healed;
//! - an OTLP collector that accepts and never answers;
//! - a server whose max_payload (8 KB) is below every node's report;
//! - a frozen agent, and one client flooding an agent with requests.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;

use super::watch::{client, node_status, rt, set_port_mtu, watch_command};
use crate::cluster::{cluster_check, node};
use crate::support::nats::{machine_id, rss_kib, Logged, NatsLab, Tail};
use crate::support::sshd::LabNode;
use crate::support::{self, otlp, run, run_cluster_json, Netns};
use spx_test_harness::root_test;

const INTERVAL: Duration = Duration::from_secs(2);
/// The lab's hosts share this machine's net.core.rmem_max (not per
/// namespace): sysctl.udp-buffers is this machine's, not the lab's.
const ALLOW: &str = "[doctor]\nallow = [\"sysctl.udp-buffers/quic-starved\", \"sysctl.udp-buffers/below-required\"]\n";

fn lab(nodes: usize, env: &[(usize, &str, &str)]) -> NatsLab {
    NatsLab::with_agents(
        vec![LabNode::jumbo(); nodes],
        &["--interval", "2s"],
        env,
        ALLOW,
    )
}

/// `test`'s lab of `nodes` with every node ok in `watch --once`; None when
/// there is no nats-server (a failure under CI=true).
fn lab_ok(test: &str, nodes: usize) -> Option<NatsLab> {
    if !super::nats_or_skip(test) {
        return None;
    }
    let lab = lab(nodes, &[]);
    once_until(&lab, Duration::from_secs(30), "every node ok", all_ok(&lab));
    Some(lab)
}

/// A live `watch --format json` on n0, once it shows `node` ok.
fn live_watch(lab: &NatsLab, node: &str) -> Tail {
    let live = Tail::spawn(watch_command(lab, 0, &["--format", "json"]));
    let long_ago = Instant::now() - Duration::from_secs(60);
    live.wait(long_ago, Duration::from_secs(15), "the live watch", |l| {
        node_line(l, node, "ok")
    });
    live
}

/// A live watch's node lines since `t` that say a node is not ok.
fn not_ok_since(live: &Tail, t: Instant) -> Vec<String> {
    live.lines()
        .into_iter()
        .filter(|(at, l)| {
            *at >= t && l.contains(r#""kind":"node""#) && !l.contains(r#""status":"ok""#)
        })
        .map(|(_, l)| l)
        .collect()
}

/// n2's switch port at 1500 until the live watch shows the black hole
/// (`what` names the wait), then back at 9000.
fn black_hole_shows_in(lab: &NatsLab, live: &Tail, what: &str) {
    set_port_mtu(lab, 2, 1500);
    live.wait(Instant::now(), Duration::from_secs(15), what, |l| {
        l.contains(r#""kind":"transition""#) && l.contains(r#""code_after":"mtu.path/black-hole""#)
    });
    set_port_mtu(lab, 2, 9000);
}

/// The bucket's stream deleted through the JetStream API.
fn delete_bucket(lab: &NatsLab) {
    let ca = lab.server.ca.clone();
    lab.bus
        .in_thread(move || {
            rt().block_on(async {
                let js = async_nats::jetstream::new(client(&ca).await);
                js.delete_stream("KV_spx-doctor").await.expect("deleted");
            })
        })
        .join()
        .unwrap();
}

/// A quick request: one check category, a short window.
const QUICK: [&str; 6] = ["--check", "sysctl", "--sample", "100ms", "--timeout", "4s"];

/// `watch --once` from n0 until `want` holds of it (panics after
/// `within`, with the last report): (exit code, report, when).
fn once_until(
    lab: &NatsLab,
    within: Duration,
    what: &str,
    want: impl Fn(&Value) -> bool,
) -> (i32, Value, Instant) {
    let t0 = Instant::now();
    loop {
        // While the bucket is missing there is no report: one line, exit 2.
        let (code, out, err) = run(&mut watch_command(lab, 0, &["--once", "--format", "json"]));
        let doc: Value = serde_json::from_str(&out).unwrap_or_else(|_| {
            assert!(
                code == 2 && err.contains("does not exist"),
                "{what}: {code} {out} {err}"
            );
            Value::Null
        });
        if !doc.is_null() {
            support::assert_valid_cluster(&doc);
            assert_eq!(doc["exit_code"], code, "{doc:#}");
        }
        if !doc.is_null() && want(&doc) {
            return (code, doc, Instant::now());
        }
        assert!(
            t0.elapsed() < within,
            "{what}: not within {within:?}: {doc:#}\nn0's agent: {}",
            lab.agent_log(0)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn all_ok(lab: &NatsLab) -> impl Fn(&Value) -> bool + '_ {
    |doc| lab.ssh.names.iter().all(|n| node_status(doc, n) == "ok")
}

/// A JSON line of `watch --format json` for `node` in `status`.
fn node_line(l: &str, node: &str, status: &str) -> bool {
    l.contains(r#""kind":"node""#)
        && l.contains(&format!(r#""node":"{node}""#))
        && l.contains(&format!(r#""status":"{status}""#))
}

fn since_of(line: &str) -> SystemTime {
    let v: Value = serde_json::from_str(line).unwrap();
    humantime::parse_rfc3339(v["since"].as_str().unwrap()).unwrap()
}

#[allow(clippy::disallowed_macros)] // the figures measured, for the record
fn figure(text: &str) {
    println!("issue 36 figure: {text}");
}

/// Another machine on the lab's wan switch: a namespace of the test's own
/// with its own /etc/netns files (a machine id), both removed on Drop.
struct Machine {
    ns: Netns,
    etc: PathBuf,
}

impl Machine {
    fn on(lab: &NatsLab, addr: &str) -> Machine {
        let ns = Netns::new();
        ns.veth("wan0", &lab.ssh.wan, "wclone");
        lab.ssh.wan.ip(&["link", "set", "wclone", "master", "sw"]);
        ns.ip(&["addr", "add", &format!("{addr}/24"), "dev", "wan0"]);
        let etc = PathBuf::from("/etc/netns").join(&ns.name);
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(
            etc.join("machine-id"),
            format!("{}\n", machine_id(&ns.name)),
        )
        .unwrap();
        Machine { ns, etc }
    }

    /// An agent here, reading node `i`'s config (the copy a re-imaged disk
    /// holds), as NatsLab starts its own.
    fn agent(&self, lab: &NatsLab, i: usize) -> Logged {
        let mut cmd = self.ns.command(support::bin());
        cmd.arg("agent")
            .arg("--config")
            .arg(lab.etc(i).join("spinifex.toml"))
            .args(["--interval", "2s"])
            .env_remove("SPINIFEX_CONFIG_PATH")
            .env_remove("JOURNAL_STREAM")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
            .env("HOME", "/nonexistent-spx-test-home");
        Logged::spawn(cmd)
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.etc);
    }
}

/// 1. A machine re-imaged from n2's disk answers as n2 from 198.19.0.9.
#[root_test]
fn a_cloned_node_is_named_by_both_addresses_and_judged_by_neither() {
    let Some(lab) = lab_ok(
        "a_cloned_node_is_named_by_both_addresses_and_judged_by_neither",
        3,
    ) else {
        return;
    };
    let n2_pid = lab.agent_pid(2);
    let (code, doc) = run_cluster_json(
        lab.coordinator(0)
            .args(["--check", "mtu.path"])
            .args(super::ROOMY),
    );
    assert_eq!(code, 0, "before the clone: {doc:#}");
    assert_eq!(cluster_check(&doc, "cluster.bus")["status"], "pass");

    let clone = Machine::on(&lab, "198.19.0.9");
    let twin = clone.agent(&lab, 2);
    twin.wait_for(
        "connected to NATS at",
        1,
        Duration::from_secs(15),
        "the clone",
    );
    // Both agents say so, at once: each is the other's twin.
    let said = "another spx-doctor agent answers as node n2";
    twin.wait_for(said, 1, Duration::from_secs(10), "the clone");
    lab.wait_log(2, said, 1, Duration::from_secs(10));
    assert!(twin.text().contains("198.19.0.3"), "{}", twin.text());
    assert!(
        lab.agent_log(2).contains("at 198.19.0.9 (machine-id"),
        "{}",
        lab.agent_log(2)
    );

    // Every run names it, whichever answer comes first: never exit 0, never
    // a matrix from the two reports mixed.
    for run in 0..3 {
        let (code, doc) = run_cluster_json(
            lab.coordinator(0)
                .args(["--check", "mtu.path"])
                .args(super::ROOMY),
        );
        assert_eq!(code, 1, "run {run}: {doc:#}");
        let n2 = node(&doc, "n2");
        assert_eq!(n2["status"], "duplicate", "run {run}: {n2:#}");
        assert_eq!(n2["reason"], "duplicate-node");
        assert!(n2["report"].is_null(), "neither report is n2's: {n2:#}");
        let bus = cluster_check(&doc, "cluster.bus");
        assert_eq!(bus["code"], "cluster.bus/duplicate-node", "{bus:#}");
        let summary = bus["summary"].as_str().unwrap();
        assert!(
            summary.starts_with("two machines answer as n2: one at ")
                && summary
                    .contains("at 198.18.0.3, 198.19.0.3, where the config places it (machine-id")
                && summary.contains("at 198.19.0.9 (machine-id")
                && summary.ends_with("neither report is taken as n2's"),
            "{summary}"
        );
        assert_eq!(
            bus["remediation"][0],
            "a machine re-imaged from n2's disk keeps n2's /etc/spinifex (its node name and token): give the machine at 198.19.0.9 its own node name and token (`node` and its own [nodes.NAME] in /etc/spinifex/spinifex.toml, joined as a new node), or stop spx-doctor-agent there until it has them"
        );
        for n in ["n0", "n1"] {
            assert_eq!(node(&doc, n)["status"], "ok", "{doc:#}");
        }
        // n2's row and column of the matrix come from no report of it.
        for c in doc["path_matrix"].as_array().unwrap() {
            if c["from"] == "n2" {
                assert_ne!(c["verdict"], "ok", "{c:#}");
            }
        }
    }

    // watch: n2's revisions alternate between the two agents.
    let (code, doc, _) = once_until(
        &lab,
        Duration::from_secs(15),
        "n2 duplicate in watch",
        |d| node_status(d, "n2") == "duplicate",
    );
    assert_eq!(code, 1, "{doc:#}");
    let bus = cluster_check(&doc, "cluster.bus");
    assert_eq!(bus["code"], "cluster.bus/duplicate-node", "{bus:#}");
    assert!(
        bus["summary"].as_str().unwrap().contains("198.19.0.9"),
        "{bus:#}"
    );

    // The clone stopped: n2 is itself again, with its agent never
    // restarted.
    drop(twin);
    let (code, doc) = run_cluster_json(
        lab.coordinator(0)
            .args(["--check", "mtu.path"])
            .args(super::ROOMY),
    );
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(node(&doc, "n2")["status"], "ok");
    let t = Instant::now();
    once_until(&lab, Duration::from_secs(20), "n2 ok in watch", |d| {
        node_status(d, "n2") == "ok"
    });
    figure(&format!(
        "watch: n2 one agent's again {:.1} s after the clone stopped",
        t.elapsed().as_secs_f64()
    ));
    lab.wait_log(2, "answers no more", 1, Duration::from_secs(10));
    assert_eq!(lab.agent_pid(2), n2_pid);
    drop(clone);
}

/// 2. The bucket deleted through the JetStream API under running agents and
///    a running watch.
#[root_test]
fn a_deleted_bucket_is_made_again_and_watch_picks_it_up() {
    let Some(mut lab) = lab_ok("a_deleted_bucket_is_made_again_and_watch_picks_it_up", 3) else {
        return;
    };
    let pids: Vec<Option<u32>> = (0..3).map(|i| lab.agent_pid(i)).collect();
    // Its stderr, where a JSON watch says why it is not current.
    let said = Logged::spawn(watch_command(&lab, 1, &["--format", "json"]));
    let live = live_watch(&lab, "n2");

    let deleted = Instant::now();
    delete_bucket(&lab);

    // The agents make it again, with the same bounds, in the interval.
    let (_, doc, back) = once_until(
        &lab,
        INTERVAL * 2 + Duration::from_secs(8),
        "every node ok again",
        all_ok(&lab),
    );
    figure(&format!(
        "bucket deleted: every node ok in watch --once {:.1} s later",
        (back - deleted).as_secs_f64()
    ));
    assert_eq!(doc["via"], "jetstream");
    let remade: usize = (0..3)
        .map(|i| {
            lab.agent_log(i)
                .matches("bucket was gone (deleted?): made it again with the same bounds (5 revisions per node, 1048576 bytes per value, 67108864 bytes in all)")
                .count()
        })
        .sum();
    assert!(remade >= 1, "{}", lab.agent_log(0));
    for i in 0..3 {
        let log = lab.agent_log(i);
        assert!(
            log.matches("bucket was gone").count() <= 1,
            "said once: {log}"
        );
    }
    let ca = lab.server.ca.clone();
    let (per_subject, max_bytes, max_msg) = lab
        .bus
        .in_thread(move || {
            rt().block_on(async {
                let js = async_nats::jetstream::new(client(&ca).await);
                let mut s = js.get_stream("KV_spx-doctor").await.unwrap();
                let c = s.info().await.unwrap().config.clone();
                (c.max_messages_per_subject, c.max_bytes, c.max_message_size)
            })
        })
        .join()
        .unwrap();
    assert_eq!((per_subject, max_bytes, max_msg), (5, 64 << 20, 1 << 20));

    // The running watch said so, waited and picked the new bucket up: a
    // fault made now shows in it (n2's switch port at 1500), and no node
    // was ever shown stale or unknown.
    black_hole_shows_in(&lab, &live, "a fault after the bucket came back");
    // It said why it waited: the bucket gone, or (when the agents made it
    // again before the watch looked) its watch of the bucket ended and was
    // opened again; which one depends on who is first, not on the fault.
    let t0 = Instant::now();
    loop {
        let text = said.text();
        if text.contains(
            "the bucket spx-doctor does not exist; agents make it again on their next write",
        ) || text.contains("the watch of the bucket ended")
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the live watch said nothing of the bucket:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stale = not_ok_since(&live, deleted);
    assert!(stale.is_empty(), "{stale:#?}");
    let now: Vec<Option<u32>> = (0..3).map(|i| lab.agent_pid(i)).collect();
    assert_eq!(now, pids, "no agent restarted");

    // No agent left to make it: --once says the bucket is missing, never
    // that every node is stale.
    for i in 0..3 {
        lab.kill_agent(i);
    }
    delete_bucket(&lab);
    let (code, out, err) = run(&mut watch_command(&lab, 0, &["--once"]));
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(
        err.trim(),
        "spx-doctor: error: watch: the bucket spx-doctor does not exist; agents make it again on their next write"
    );
    assert!(!err.contains("stale"));
}

/// nftables in node `i`'s own namespace: its traffic with port 4222
/// dropped, both ways, until [`Cut::heal`] (or Drop).
struct Cut<'a> {
    ns: &'a Netns,
    on: bool,
}

impl<'a> Cut<'a> {
    fn new(ns: &'a Netns) -> Cut<'a> {
        let nft = |rule: &str| {
            let argv: Vec<&str> = std::iter::once("nft").chain(rule.split(' ')).collect();
            ns.exec(&argv);
        };
        nft("add table inet spxcut");
        nft("add chain inet spxcut out { type filter hook output priority 0 ; }");
        nft("add rule inet spxcut out tcp dport 4222 drop");
        nft("add chain inet spxcut in { type filter hook input priority 0 ; }");
        nft("add rule inet spxcut in tcp sport 4222 drop");
        Cut { ns, on: true }
    }

    fn heal(&mut self) {
        if std::mem::take(&mut self.on) {
            self.ns.exec(&["nft", "delete", "table", "inet", "spxcut"]);
        }
    }
}

impl Drop for Cut<'_> {
    fn drop(&mut self) {
        if self.on {
            let _ = self
                .ns
                .try_exec(&["nft", "delete", "table", "inet", "spxcut"]);
        }
    }
}

/// 3. n2 cut off from the bus for 30 s, its agent running; then healed.
/// 2b. The live watch's consumer deleted on the server under it (what a
///    deleted bucket does to it too): the client's ordered consumer says
///    nothing until it misses two of its 5 s heartbeats, longer than two
///    of the agents' 2 s intervals. The watch asks the server for a node's
///    latest revision before it shows that node stale and takes the newer
///    one it finds: no node is shown stale.
#[root_test]
fn a_watch_whose_consumer_is_lost_asks_the_server_before_it_shows_a_node_stale() {
    let Some(lab) = lab_ok(
        "a_watch_whose_consumer_is_lost_asks_the_server_before_it_shows_a_node_stale",
        3,
    ) else {
        return;
    };
    let live = live_watch(&lab, "n2");
    let ca = lab.server.ca.clone();
    let lost = Instant::now();
    let deleted: Vec<String> = lab
        .bus
        .in_thread(move || {
            rt().block_on(async {
                let js = async_nats::jetstream::new(client(&ca).await);
                let s = js.get_stream("KV_spx-doctor").await.unwrap();
                let names: Vec<String> = s
                    .consumer_names()
                    .map(|n| n.unwrap())
                    .collect::<Vec<_>>()
                    .await;
                for n in &names {
                    s.delete_consumer(n).await.unwrap();
                }
                names
            })
        })
        .join()
        .unwrap();
    // The live watch's, and those `watch --once` left for the server to
    // expire.
    assert!(!deleted.is_empty());
    // Past the client's own discovery (two missed 5 s heartbeats) and well
    // past two intervals, so a watch that waited for it would show all
    // three nodes stale by now.
    std::thread::sleep(Duration::from_secs(12));
    let stale = not_ok_since(&live, lost);
    assert!(stale.is_empty(), "{stale:#?}");
    // And it is still live: a fault made now shows in it.
    black_hole_shows_in(&lab, &live, "a fault after the consumer was lost");
}

#[root_test]
fn a_node_cut_off_from_the_bus_is_back_in_watch_within_16_s_of_the_heal() {
    let Some(lab) = lab_ok(
        "a_node_cut_off_from_the_bus_is_back_in_watch_within_16_s_of_the_heal",
        3,
    ) else {
        return;
    };
    let pid = lab.agent_pid(2);
    let live = live_watch(&lab, "n2");

    let n2 = &lab.ssh.fabric.node(2).ns;
    let mut cut = Cut::new(n2);
    let cut_at = Instant::now();
    // The agent notices the dead connection itself (its pings), long
    // before TCP would.
    lab.wait_log(2, "lost the connection to NATS", 1, Duration::from_secs(15));
    let noticed = cut_at.elapsed();
    figure(&format!(
        "cut: n2's agent noticed after {:.1} s",
        noticed.as_secs_f64()
    ));
    assert!(noticed <= Duration::from_secs(12), "{noticed:?}");
    live.wait(
        cut_at,
        Duration::from_secs(15),
        "n2 stale while cut off",
        |l| node_line(l, "n2", "stale"),
    );
    // The server still holds its subscription: a request finds it silent,
    // not missing.
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(QUICK));
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(node(&doc, "n2")["reason"], "agent-silent", "{doc:#}");
    let left = Duration::from_secs(30).saturating_sub(cut_at.elapsed());
    std::thread::sleep(left);

    cut.heal();
    let (healed, healed_at) = (Instant::now(), SystemTime::now());
    let (seen, line) = live.wait(
        healed,
        Duration::from_secs(30),
        "n2 back in the live watch",
        |l| node_line(l, "n2", "ok"),
    );
    // The bound on the doctor's own clock: when the server stored n2's
    // first revision after the heal (the line's `since`); the wall adds
    // the watch's and this test's reading.
    let stored = since_of(&line)
        .duration_since(healed_at)
        .unwrap_or_default();
    figure(&format!(
        "heal: n2's revision stored {:.1} s after, shown by watch {:.1} s after",
        stored.as_secs_f64(),
        (seen - healed).as_secs_f64()
    ));
    assert!(stored <= Duration::from_secs(16), "{stored:?}: {line}");
    assert!(
        seen - healed <= Duration::from_secs(18),
        "{:?}",
        seen - healed
    );
    lab.wait_log(2, "reconnected to NATS", 1, Duration::from_secs(5));
    assert_eq!(lab.agent_pid(2), pid, "the same process came back");
}

/// A collector that accepts every connection, reads what it is sent and
/// never answers (a wedged collector, a proxy with a dead backend), on
/// 127.0.0.1:`port` inside `ns`, until dropped.
struct MuteCollector {
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MuteCollector {
    fn start(ns: &Netns, port: u16) -> MuteCollector {
        let listener: TcpListener = ns
            .in_thread(move || TcpListener::bind(("127.0.0.1", port)).expect("bind"))
            .join()
            .unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (flag, count) = (Arc::clone(&stop), Arc::clone(&accepted));
        let thread = std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            while !flag.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let _ = s.set_nonblocking(true);
                        held.push(s);
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
                for s in &mut held {
                    let _ = s.read(&mut [0u8; 65536]);
                }
            }
        });
        MuteCollector {
            stop,
            accepted,
            thread: Some(thread),
        }
    }
}

impl Drop for MuteCollector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// 4. n0's OTLP collector accepts and never answers.
#[root_test]
fn a_mute_collector_costs_the_agent_nothing_and_gets_exports_again() {
    let test = "a_mute_collector_costs_the_agent_nothing_and_gets_exports_again";
    if !super::nats_or_skip(test) {
        return;
    }
    let Some(python) = otlp::python_or_skip(test) else {
        return;
    };
    let endpoint = "http://127.0.0.1:4318";
    let mut lab = lab(2, &[(0, "OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)]);
    let mute = MuteCollector::start(&lab.ssh.fabric.node(0).ns, 4318);
    // n0's agent from now on exports to it (the collector is only there
    // now that its namespace is).
    lab.start_agent(0, &[]);
    lab.wait_connected(0, 1);
    let pid = lab.agent_pid(0).unwrap();

    // Count n0's bucket writes over 30 s, from the bus.
    let ca = lab.server.ca.clone();
    let writes = lab.bus.in_thread(move || {
        rt().block_on(async {
            let c = client(&ca).await;
            let mut sub = c.subscribe("$KV.spx-doctor.n0").await.unwrap();
            c.flush().await.unwrap();
            // Past the agent's first runs: the mute collector has a queue to fill.
            tokio::time::sleep(Duration::from_secs(6)).await;
            while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(1), sub.next()).await
            {
            }
            let until = Instant::now() + Duration::from_secs(30);
            let mut n = 0usize;
            while let Ok(Some(_)) =
                tokio::time::timeout(until.saturating_duration_since(Instant::now()), sub.next())
                    .await
            {
                n += 1;
            }
            n
        })
    });
    std::thread::sleep(Duration::from_secs(10));
    let rss_early = rss_kib(pid);
    // It still answers --cluster, with its report, not busy.
    let (code, doc) = run_cluster_json(lab.coordinator(1).args(QUICK));
    assert!(code < 2, "{doc:#}");
    assert_eq!(node(&doc, "n0")["status"], "ok", "{doc:#}");
    let written = writes.join().unwrap();
    let rss_late = rss_kib(pid);
    figure(&format!(
        "mute collector: {written} writes of n0 in 30 s at --interval 2s; RSS {rss_early} KiB at 16 s, {rss_late} KiB at 36 s; {} connections held by the collector",
        mute.accepted.load(Ordering::SeqCst)
    ));
    assert!(written >= 13, "{written} writes in 30 s (15 due)");
    assert!(
        mute.accepted.load(Ordering::SeqCst) >= 1,
        "exports reached it"
    );
    assert!(
        rss_late <= rss_early + 1024,
        "flat: {rss_early} KiB then {rss_late} KiB"
    );
    let log = lab.agent_log(0);
    assert_eq!(
        log.matches("is not taking exports as fast as the runs make them")
            .count(),
        1,
        "said once: {log}"
    );
    assert!(!log.contains("periodic run(s) missed"), "{log}");
    // Every run kept within its interval.
    let took: Vec<f64> = log
        .lines()
        .filter(|l| l.contains(" (periodic): "))
        .filter_map(|l| {
            let s = l.split(", exit ").nth(1)?.split(", ").nth(1)?;
            s.strip_suffix(" s")?.parse().ok()
        })
        .collect();
    assert!(took.len() >= 15, "{log}");
    let longest = took.iter().cloned().fold(0.0, f64::max);
    figure(&format!(
        "mute collector: the longest periodic run {longest:.2} s"
    ));
    assert!(longest < INTERVAL.as_secs_f64(), "{took:?}");

    // The collector answers again: exports arrive, without a restart.
    drop(mute);
    let received = lab.dir.path().join("otlp-back.jsonl");
    let mut receiver = lab.ssh.fabric.node(0).ns.command(python.to_str().unwrap());
    receiver.arg(otlp::script()).arg(&received).arg("4318");
    let _receiver = Logged::spawn(receiver);
    let back = Instant::now();
    while otlp::received(&received).is_empty() {
        assert!(
            back.elapsed() < Duration::from_secs(20),
            "no export reached the collector back: {}",
            lab.agent_log(0)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    figure(&format!(
        "collector back: first export received {:.1} s later",
        back.elapsed().as_secs_f64()
    ));
    lab.wait_log(
        0,
        "exporting to http://127.0.0.1:4318/v1/metrics again:",
        1,
        Duration::from_secs(10),
    );
    assert_eq!(lab.agent_pid(0), Some(pid));
}

/// 5. A server whose max_payload is below every node's report.
#[root_test]
fn a_report_too_large_for_the_bus_is_too_large_in_watch_too() {
    let Some(mut lab) = lab_ok(
        "a_report_too_large_for_the_bus_is_too_large_in_watch_too",
        2,
    ) else {
        return;
    };
    let pids: Vec<Option<u32>> = (0..2).map(|i| lab.agent_pid(i)).collect();
    lab.server.set_max_payload("8KB");
    for i in 0..2 {
        lab.wait_log(i, "reconnected to NATS", 1, Duration::from_secs(15));
        lab.wait_log(
            i,
            "does not fit the server's max_payload (8192 bytes): writing a small entry in its place",
            1,
            Duration::from_secs(10),
        );
    }
    let live = Tail::spawn(watch_command(&lab, 0, &["--format", "json"]));
    let (code, doc, _) = once_until(&lab, Duration::from_secs(10), "too-large in watch", |d| {
        ["n0", "n1"]
            .iter()
            .all(|n| node(d, n)["reason"] == "too-large")
    });
    assert_eq!(code, 2, "{doc:#}");
    let words = |e: &Value| -> String { e["error"].as_str().unwrap().to_owned() };
    for n in ["n0", "n1"] {
        let e = node(&doc, n);
        assert_eq!(e["status"], "unreachable", "{e:#}");
        let w = words(e);
        assert!(
            w.starts_with("the report does not fit NATS: too-large: the report (")
                && w.contains(
                    " bytes) does not fit the server's max_payload (8192 bytes); its run at "
                )
                && w.contains(" pass, "),
            "{w}"
        );
        assert!(!w.contains("no-report") && e["reason"] != "no-report");
    }
    let reach = cluster_check(&doc, "cluster.reachable");
    assert!(
        reach["remediation"][0]
            .as_str()
            .unwrap()
            .contains("raise `max_payload` in nats.conf"),
        "{reach:#}"
    );
    for n in ["n0", "n1"] {
        live.wait(
            Instant::now() - Duration::from_secs(60),
            Duration::from_secs(10),
            "too-large in the live watch",
            |l| node_line(l, n, "too-large"),
        );
    }
    // --cluster says it in the same words.
    let (code, over) = run_cluster_json(lab.coordinator(0).args(super::ROOMY));
    assert_eq!(code, 2, "{over:#}");
    for n in ["n0", "n1"] {
        let e = node(&over, n);
        assert_eq!(e["reason"], "too-large", "{e:#}");
        let w = words(e);
        assert!(
            w.starts_with("the report does not fit NATS: too-large: the report (")
                && w.ends_with(" bytes) does not fit the server's max_payload (8192 bytes)"),
            "{w}"
        );
    }
    // Room again: whole reports, the same agents.
    lab.server.set_max_payload("1MB");
    once_until(&lab, Duration::from_secs(20), "whole again", all_ok(&lab));
    lab.wait_log(0, "fits the bucket again", 1, Duration::from_secs(5));
    let now: Vec<Option<u32>> = (0..2).map(|i| lab.agent_pid(i)).collect();
    assert_eq!(now, pids);
}

/// The words: a frozen agent is silent, not missing; one client flooding
/// an agent is refused by name while an operator's run goes through.
#[root_test]
fn a_frozen_agent_is_silent_and_a_flooding_client_locks_no_one_out() {
    let test = "a_frozen_agent_is_silent_and_a_flooding_client_locks_no_one_out";
    if !super::nats_or_skip(test) {
        return;
    }
    let mut lab = NatsLab::with_agents(vec![LabNode::jumbo(); 2], &["--interval", "0"], &[], ALLOW);
    let quick = ["--check", "sysctl", "--sample", "100ms"];
    let pid = nix::unistd::Pid::from_raw(lab.agent_pid(1).unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let t0 = Instant::now();
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(QUICK));
    let took = t0.elapsed();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    assert_eq!(code, 2, "{doc:#}");
    let n1 = node(&doc, "n1");
    assert_eq!(n1["reason"], "agent-silent", "{n1:#}");
    let e = n1["error"].as_str().unwrap();
    assert!(
        e.starts_with(
            "its agent did not answer: its agent is subscribed but did not answer within "
        ) && e.ends_with(" s (stopped, hung, or overloaded)"),
        "{e}"
    );
    assert!(!e.contains("is spx-doctor-agent running"), "{e}");
    // Bounded by --timeout on the doctor's own clock; the wall adds the
    // start of a debug build on a loaded machine.
    assert!(doc["duration_ms"].as_u64().unwrap() <= 4500, "{doc:#}");
    assert!(took < Duration::from_secs(7), "{took:?}");
    let (code, doc) = run_cluster_json(lab.coordinator(0).args(quick).args(super::ROOMY));
    assert!(code < 2, "thawed: {doc:#}");

    // One client floods n0's agent (a bound of 4 runs a minute) with 500
    // different requests; the operator's run still gets its report.
    lab.start_agent(0, &["--runs-per-minute", "4"]);
    lab.wait_connected(0, 1);
    let ca = lab.server.ca.clone();
    let flood = lab.bus.in_thread(move || {
        rt().block_on(async {
            let c = client(&ca).await;
            let inbox = c.new_inbox();
            let mut sub = c.subscribe(format!("{inbox}.*")).await.unwrap();
            for i in 0..500 {
                let body = format!(
                    r#"{{"id":"f{i}","timeout_ms":3000,"sample_ms":{},"checks":["sysctl"]}}"#,
                    100 + i
                );
                c.publish_with_reply(
                    "spinifex.doctor.n0.run",
                    format!("{inbox}.{i}"),
                    Bytes::from(body),
                )
                .await
                .unwrap();
            }
            c.flush().await.unwrap();
            let mut refusals = Vec::new();
            let until = Instant::now() + Duration::from_secs(4);
            while let Ok(Some(m)) =
                tokio::time::timeout(until.saturating_duration_since(Instant::now()), sub.next())
                    .await
            {
                if let Ok(v) = serde_json::from_slice::<Value>(&m.payload) {
                    if v["error"]["kind"] == "rate-limited" {
                        refusals.push(v["error"]["message"].as_str().unwrap_or("").to_owned());
                    }
                }
            }
            (inbox, refusals)
        })
    });
    std::thread::sleep(Duration::from_millis(300));
    let (code, doc) = run_cluster_json(
        lab.coordinator(1)
            .args(["--nodes", "n0"])
            .args(quick)
            .args(super::ROOMY),
    );
    let (inbox, refusals) = flood.join().unwrap();
    assert!(code < 2, "the operator is not locked out: {doc:#}");
    assert_eq!(node(&doc, "n0")["status"], "ok");
    assert!(!refusals.is_empty());
    assert!(
        refusals[0].starts_with(&format!("requester {inbox} has started ")),
        "{:?}",
        refusals[0]
    );
    lab.wait_log(
        0,
        &format!("from {inbox}: rate-limited: requester {inbox}"),
        1,
        Duration::from_secs(2),
    );
}
