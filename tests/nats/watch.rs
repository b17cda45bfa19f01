//! Periodic runs, the doctor's JetStream bucket, transition events, OTLP
//! and `spx-doctor watch`, on a real nats-server (Debian's 2.9.10, as
//! Spinifex configures it) with agents at `--interval 2s` on three lab
//! nodes: a port's MTU lowered on the switch shows as a transition event,
//! in `watch --format json` and on `watch`'s screen (tmux) within one
//! interval + 2 s; mended, the same; a killed agent's node is stale within
//! two intervals + 2 s and `watch --once` exits 2; the bucket stays
//! bounded and a restart of nats-server loses no acknowledged revision
//! while `watch` carries on by itself; node 0's agent exports every
//! periodic run to a real OTLP/HTTP receiver (Python's opentelemetry-proto
//! decodes it), exactly that run's series, nothing that cleared.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;

use crate::support::nats::{Logged, NatsLab, Tail, BUS_ADDR, TOKEN};
use crate::support::sshd::LabNode;
use crate::support::tmux::Tmux;
use crate::support::{self, otlp, run};
use spx_test_harness::root_test;

const INTERVAL: Duration = Duration::from_secs(2);
/// The issue's bound for a fault (or its mending) to show.
const SHOWN_WITHIN: Duration = Duration::from_secs(4);
/// ... and for a dead agent's node to be stale: two intervals + 2 s.
const STALE_WITHIN: Duration = Duration::from_secs(6);
/// The receiver's port in node 0's own namespace (nobody else is there).
const OTLP_PORT: &str = "4318";

pub(super) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub(super) async fn client(ca: &Path) -> async_nats::Client {
    async_nats::ConnectOptions::new()
        .add_root_certificates(ca.to_owned())
        .require_tls(true)
        .token(TOKEN.to_owned())
        .connect(format!("nats://{BUS_ADDR}:4222"))
        .await
        .expect("the test's client connects")
}

/// Every transition event on the bus, with when it came, until dropped.
struct Events {
    seen: Arc<Mutex<Vec<(Instant, Value)>>>,
    stop: Arc<AtomicBool>,
}

impl Events {
    fn start(lab: &NatsLab) -> Events {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (sink, halt, ca) = (Arc::clone(&seen), Arc::clone(&stop), lab.server.ca.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        lab.bus.in_thread(move || {
            rt().block_on(async {
                let c = client(&ca).await;
                let mut sub = c.subscribe("spinifex.doctor.events.>").await.unwrap();
                c.flush().await.unwrap();
                let _ = tx.send(());
                // Bounded: stops when told, or after 10 minutes whatever.
                let t0 = Instant::now();
                while !halt.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(600) {
                    if let Ok(Some(m)) =
                        tokio::time::timeout(Duration::from_millis(100), sub.next()).await
                    {
                        let v: Value = serde_json::from_slice(&m.payload).unwrap_or(Value::Null);
                        sink.lock().unwrap().push((Instant::now(), v));
                    }
                }
            })
        });
        rx.recv_timeout(Duration::from_secs(15))
            .expect("subscribed to the events");
        Events { seen, stop }
    }

    fn wait(
        &self,
        after: Instant,
        within: Duration,
        what: &str,
        want: impl Fn(&Value) -> bool,
    ) -> (Instant, Value) {
        let t0 = Instant::now();
        loop {
            let hit = self
                .seen
                .lock()
                .unwrap()
                .iter()
                .find(|(t, v)| *t >= after && want(v))
                .cloned();
            if let Some(h) = hit {
                return h;
            }
            assert!(
                t0.elapsed() < within + Duration::from_secs(10),
                "{what}: no event; saw {:#?}",
                self.seen
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(_, v)| v)
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `watch --once --format json` from node `i`: (exit code, report).
pub(super) fn once(lab: &NatsLab, i: usize) -> (i32, Value) {
    let mut cmd = lab.ssh.fabric.node(i).spx();
    cmd.args(["watch", "--once", "--config"])
        .arg(lab.etc(i).join("spinifex.toml"));
    support::run_cluster_json(&mut cmd)
}

pub(super) fn node_status(doc: &Value, name: &str) -> String {
    doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .map(|n| n["status"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default()
}

pub(super) fn watch_command(lab: &NatsLab, i: usize, args: &[&str]) -> Command {
    let mut cmd = lab.ssh.fabric.node(i).spx();
    cmd.arg("watch")
        .args(args)
        .arg("--config")
        .arg(lab.etc(i).join("spinifex.toml"));
    cmd
}

/// The bucket's stream as the server holds it: (messages, bytes,
/// max per subject), and node `n`'s revisions.
fn bucket_state(lab: &NatsLab, n: &str) -> (u64, u64, i64, Vec<u64>) {
    let (ca, n) = (lab.server.ca.clone(), n.to_owned());
    lab.bus
        .in_thread(move || {
            rt().block_on(async {
                let js = async_nats::jetstream::new(client(&ca).await);
                let mut stream = js
                    .get_stream("KV_spx-doctor")
                    .await
                    .expect("the bucket's stream");
                let info = stream.info().await.unwrap().clone();
                let kv = js.get_key_value("spx-doctor").await.unwrap();
                let mut history = kv.history(n.as_str()).await.unwrap();
                let mut revisions = Vec::new();
                while let Some(Ok(e)) = history.next().await {
                    revisions.push(e.revision);
                }
                (
                    info.state.messages,
                    info.state.bytes,
                    info.config.max_messages_per_subject,
                    revisions,
                )
            })
        })
        .join()
        .unwrap()
}

pub(super) fn set_port_mtu(lab: &NatsLab, i: usize, mtu: u32) {
    lab.ssh
        .fabric
        .switch
        .ip(&["link", "set", &format!("p{i}"), "mtu", &mtu.to_string()]);
}

/// Every failing check of a cluster document, the nodes' and the cluster's,
/// as "node code summary".
fn failing(doc: &Value) -> Vec<String> {
    let nodes = doc["nodes"].as_array().into_iter().flatten();
    let node_checks = nodes.flat_map(|n| {
        let checks = n["report"]["checks"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        checks.into_iter().map(move |c| (n["name"].clone(), c))
    });
    let cluster = doc["checks"].as_array().into_iter().flatten();
    node_checks
        .chain(cluster.map(|c| (Value::from("cluster"), c.clone())))
        .filter(|(_, c)| c["status"] == "fail")
        .map(|(n, c)| format!("{n} {} {}", c["code"], c["summary"]))
        .collect()
}

fn is_transition(v: &Value, check: &str, to: impl Fn(&str) -> bool) -> bool {
    v["kind"] == "transition" && v["check"] == check && v["code_after"].as_str().is_some_and(to)
}

#[root_test]
fn watch_sees_a_fault_its_mending_and_a_dead_agent_live() {
    let test = "watch_sees_a_fault_its_mending_and_a_dead_agent_live";
    if !super::nats_or_skip(test) || !support::tool_or_skip(test, "tmux", Tmux::available()) {
        return;
    }
    let Some(python) = otlp::python_or_skip(test) else {
        return;
    };
    let endpoint = format!("http://127.0.0.1:{OTLP_PORT}");
    let interval = format!("{}s", INTERVAL.as_secs());
    let mut lab = NatsLab::with_agents(
        vec![LabNode::jumbo(); 3],
        &["--interval", &interval],
        &[
            (0, "OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            (0, "MULGA_ENV", "lab24"),
        ],
        // The lab's hosts share this machine's net.core.rmem_max (not per
        // namespace): sysctl.udp-buffers is this machine's, not the lab's.
        "[doctor]\nallow = [\"sysctl.udp-buffers/quic-starved\", \"sysctl.udp-buffers/below-required\"]\n",
    );
    let received = lab.dir.path().join("otlp.jsonl");
    let mut receiver = lab.ssh.fabric.node(0).ns.command(python.to_str().unwrap());
    receiver.arg(otlp::script()).arg(&received).arg(OTLP_PORT);
    let _receiver = Logged::spawn(receiver);

    // Every node's agent writes its report: all three ok.
    let t0 = Instant::now();
    let doc = loop {
        let (code, doc) = once(&lab, 0);
        if lab.ssh.names.iter().all(|n| node_status(&doc, n) == "ok") {
            // Nothing fails (ipsec.flags errors: the lab runs no OVS).
            assert_ne!(code, 1, "the lab before any fault: {:#?}", failing(&doc));
            break doc;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "not every node wrote a report: {doc:#}\n{}",
            lab.agent_log(0)
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(doc["via"], "jetstream");
    let pm = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "cluster.path-matrix")
        .unwrap();
    assert_eq!(pm["status"], "pass", "{pm:#}");
    lab.wait_log(
        0,
        "writing each periodic report to the spx-doctor bucket",
        1,
        Duration::from_secs(5),
    );

    let events = Events::start(&lab);
    let live = Tail::spawn(watch_command(&lab, 0, &["--format", "json"]));
    let mut screen_cmd = vec![
        "ip".to_owned(),
        "netns".into(),
        "exec".into(),
        lab.ssh.fabric.node(1).ns.name.clone(),
    ];
    screen_cmd.push(support::bin().to_owned());
    screen_cmd.extend([
        "watch".into(),
        "--config".into(),
        lab.etc(1).join("spinifex.toml").display().to_string(),
    ]);
    let tmux = Tmux::start(&screen_cmd, 200, 80, &[]);
    // The state found first: every node ok, every check first seen.
    for n in &lab.ssh.names {
        live.wait(t0, Duration::from_secs(10), "the live state found", |l| {
            l.contains(r#""kind":"node""#)
                && l.contains(&format!(r#""node":"{n}""#))
                && l.contains(r#""status":"ok""#)
        });
    }
    tmux.wait(
        &[
            "n0 ok",
            "n1 ok",
            "n2 ok",
            "cluster.path-matrix",
            "none since the watch began",
        ],
        Duration::from_secs(10),
        "the first screen",
    );

    // 1. n2's switch port drops to 1500: its jumbo frames are black-holed.
    let fault = Instant::now();
    set_port_mtu(&lab, 2, 1500);
    let black_hole = |c: &str| c == "mtu.path/black-hole";
    let (at, ev) = events.wait(fault, SHOWN_WITHIN, "the fault's event", |v| {
        is_transition(v, "mtu.path", black_hole)
    });
    assert!(
        at - fault <= SHOWN_WITHIN,
        "the event came {:?} after the fault",
        at - fault
    );
    assert_eq!(ev["code_before"], "mtu.path/ok", "{ev:#}");
    assert_eq!(ev["status"], "fail");
    assert!(
        ev["node"].is_string() && ev["since"].is_string() && ev["summary"].is_string(),
        "{ev:#}"
    );
    let (at, line) = live.wait(
        fault,
        SHOWN_WITHIN + Duration::from_secs(10),
        "the fault in watch --format json",
        |l| {
            l.contains(r#""kind":"transition""#)
                && l.contains(r#""code_after":"mtu.path/black-hole""#)
        },
    );
    assert!(
        at - fault <= SHOWN_WITHIN,
        "watch showed it {:?} after the fault: {line}",
        at - fault
    );
    let screen = tmux.wait(
        &["mtu.path/ok -> mtu.path/black-hole (fail)"],
        SHOWN_WITHIN + Duration::from_secs(2),
        "the fault on screen",
    );
    assert!(screen.contains("spx-doctor watch · 3 nodes"), "{screen}");

    // 2. nats-server restarts: nothing acknowledged is lost.
    let (_, _, _, before) = bucket_state(&lab, "n0");
    lab.server.restart();
    let (messages, bytes, per_subject, after) = bucket_state(&lab, "n0");
    let last = *before.last().expect("n0 has revisions");
    assert!(
        after.contains(&last),
        "revision {last} was acknowledged before the restart: {before:?} then {after:?}"
    );
    assert_eq!(per_subject, 5);
    assert!(
        after.len() <= 5 && messages <= 15,
        "{messages} messages, n0 {after:?}"
    );
    #[allow(clippy::disallowed_macros)]
    {
        println!(
            "KV: {messages} messages, {bytes} bytes: {} bytes per node per revision",
            bytes / messages.max(1)
        );
    }

    // 3. Mended, after the restart: the event back, and watch carried on.
    for i in 0..3 {
        lab.wait_log(i, "reconnected to NATS", 1, Duration::from_secs(15));
    }
    let mended = Instant::now();
    set_port_mtu(&lab, 2, 9000);
    let ok = |c: &str| c == "mtu.path/ok";
    let (at, ev) = events.wait(mended, SHOWN_WITHIN, "the mending's event", |v| {
        is_transition(v, "mtu.path", ok)
    });
    assert!(
        at - mended <= SHOWN_WITHIN,
        "the event came {:?} after the mending",
        at - mended
    );
    assert_eq!(ev["code_before"], "mtu.path/black-hole", "{ev:#}");
    let (at, _) = live.wait(
        mended,
        SHOWN_WITHIN + Duration::from_secs(10),
        "the mending in watch --format json",
        |l| {
            l.contains(r#""code_before":"mtu.path/black-hole""#)
                && l.contains(r#""code_after":"mtu.path/ok""#)
        },
    );
    assert!(
        at - mended <= SHOWN_WITHIN,
        "watch showed the mending {:?} after it",
        at - mended
    );
    tmux.wait(
        &["mtu.path/black-hole -> mtu.path/ok (pass)"],
        SHOWN_WITHIN + Duration::from_secs(2),
        "the mending on screen",
    );
    // The event above is the first node's mending; a node whose run began
    // before the port was mended still reports the black hole until its next
    // run. Step 4 needs every node's mended report, else its verdict is that
    // report's fail rather than the stale node's inconclusive.
    loop {
        let (code, doc) = once(&lab, 0);
        if code != 1 {
            break;
        }
        assert!(
            mended.elapsed() < SHOWN_WITHIN + 2 * INTERVAL + Duration::from_secs(5),
            "still failing {:?} after the mending: {:#?}",
            mended.elapsed(),
            failing(&doc)
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // 4. n1's agent dies: stale within two intervals + 2 s, never a pass.
    let killed = Instant::now();
    lab.kill_agent(1);
    let (code, doc) = loop {
        let (code, doc) = once(&lab, 0);
        if node_status(&doc, "n1") == "stale" {
            break (code, doc);
        }
        assert!(
            killed.elapsed() < STALE_WITHIN + Duration::from_secs(10),
            "n1 never stale: {doc:#}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        killed.elapsed() <= STALE_WITHIN + Duration::from_millis(500),
        "stale after {:?}",
        killed.elapsed()
    );
    assert_eq!(
        code,
        2,
        "a stale node is inconclusive: {:#?}\n{doc:#}",
        failing(&doc)
    );
    assert_eq!(
        doc["summary"]["unreachable"], 1,
        "its old report is not counted"
    );
    let n1 = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "n1")
        .unwrap();
    assert_eq!(n1["reason"], "stale");
    assert!(
        n1["report"].is_null(),
        "a stale report is not judged: {n1:#}"
    );
    let reach = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "cluster.reachable")
        .unwrap();
    assert_eq!(reach["status"], "error", "{reach:#}");
    live.wait(
        killed,
        STALE_WITHIN + Duration::from_secs(5),
        "n1 stale in watch --format json",
        |l| {
            l.contains(r#""kind":"node""#)
                && l.contains(r#""node":"n1""#)
                && l.contains(r#""status":"stale""#)
        },
    );
    tmux.wait(
        &["n1 stale since"],
        STALE_WITHIN + Duration::from_secs(2),
        "n1 stale on screen",
    );
    // The table's own words for a node without a report, as --cluster's.
    let (code, table, err) = run(&mut watch_command(&lab, 0, &["--once"]));
    assert_eq!(code, 2, "{err}");
    assert!(table.contains("n1") && table.contains("stale"), "{table}");

    // 5. OTLP: every periodic run of n0, exactly its series.
    let requests = otlp::received(&received);
    assert!(
        requests.len() >= 3,
        "{} OTLP requests; n0's agent: {}",
        requests.len(),
        lab.agent_log(0)
    );
    let res = &requests.last().unwrap()["resources"][0];
    assert_eq!(res["service.name"], "spx-doctor");
    assert_eq!(res["spinifex.node"], "n0");
    assert_eq!(res["mulga.env"], "lab24");
    let codes = |r: &Value| -> BTreeSet<(String, String)> {
        r["series"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["name"] == "spx_doctor_check_code")
            .map(|s| {
                (
                    s["attributes"]["check"].as_str().unwrap().to_owned(),
                    s["attributes"]["code"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let had_black_hole = requests
        .iter()
        .any(|r| codes(r).iter().any(|(_, c)| c == "mtu.path/black-hole"));
    assert!(had_black_hole, "an export during the fault said so");
    // The latest export after the mending: the cleared code is gone, and
    // its codes are those of n0's report of the same run in the bucket.
    let (_, doc) = once(&lab, 0);
    let n0 = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "n0")
        .unwrap();
    let started = n0["report"]["started_at"].as_str().unwrap().to_owned();
    let want: BTreeSet<(String, String)> = n0["report"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let t = Instant::now();
    let same_run = loop {
        let found = otlp::received(&received).into_iter().find(|r| {
            r["series"].as_array().unwrap().iter().any(|s| {
                s["name"] == "spx_doctor_last_run_timestamp_seconds"
                    && (s["value"].as_f64().unwrap() - unix_seconds(&started)).abs() < 0.001
            })
        });
        if let Some(f) = found {
            break f;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no export of n0's run at {started}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        codes(&same_run),
        want,
        "the export is the run's, nothing lingering"
    );
    assert!(!codes(&same_run)
        .iter()
        .any(|(_, c)| c == "mtu.path/black-hole"));
    drop(tmux);
}

fn unix_seconds(rfc3339: &str) -> f64 {
    let out = run(Command::new("date").args(["-u", "-d", rfc3339, "+%s.%N"])).1;
    out.trim().parse().unwrap()
}

/// A one-shot run's `--format otlp` carries exactly `--format prometheus`'s
/// series and values: the same run, recorded once as Prometheus text and
/// replayed as OTLP, decoded by Python's opentelemetry-proto.
#[test]
fn format_otlp_is_the_prometheus_series_decoded_by_opentelemetry_proto() {
    let test = "format_otlp_is_the_prometheus_series_decoded_by_opentelemetry_proto";
    let Some(python) = otlp::python_or_skip(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (bundle, prom, req) = (
        dir.path().join("b.gz"),
        dir.path().join("m.prom"),
        dir.path().join("m.otlp"),
    );
    let (code, _, err) = run(support::spx()
        .arg("--record")
        .arg(&bundle)
        .args(["--format", "prometheus", "-o"])
        .arg(&prom));
    assert!(code <= 2 && err.is_empty(), "{err}");
    let (code2, _, err) = run(support::spx()
        .arg("--replay")
        .arg(&bundle)
        .args(["--format", "otlp", "-o"])
        .arg(&req));
    assert_eq!(code2, code, "{err}");
    let decoded = otlp::decode(&python, &req);
    assert_eq!(decoded["resources"][0]["service.name"], "spx-doctor");
    let mut from_otlp: BTreeMap<String, f64> = BTreeMap::new();
    for s in decoded["series"].as_array().unwrap() {
        let attrs: Vec<String> = s["attributes"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
            .collect();
        let key = format!("{} {}", s["name"].as_str().unwrap(), attrs.join(","));
        assert!(
            from_otlp
                .insert(key.clone(), s["value"].as_f64().unwrap())
                .is_none(),
            "{key} twice"
        );
    }
    let mut from_prom: BTreeMap<String, f64> = BTreeMap::new();
    for line in std::fs::read_to_string(&prom)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        // Label values here are plain (ids, codes, versions, interfaces).
        let mut attrs: Vec<String> = if labels.is_empty() {
            Vec::new()
        } else {
            labels
                .split("\",")
                .map(|kv| kv.trim_end_matches('"').replacen("=\"", "=", 1))
                .collect()
        };
        attrs.sort();
        from_prom.insert(
            format!("{name} {}", attrs.join(",")),
            value.parse().unwrap(),
        );
    }
    let mut otlp_sorted: BTreeMap<String, f64> = BTreeMap::new();
    for (k, v) in from_otlp {
        let (name, attrs) = k.split_once(' ').unwrap();
        let mut a: Vec<&str> = if attrs.is_empty() {
            vec![]
        } else {
            attrs.split(',').collect()
        };
        a.sort();
        otlp_sorted.insert(format!("{name} {}", a.join(",")), v);
    }
    let (a, b): (BTreeSet<&String>, BTreeSet<&String>) =
        (otlp_sorted.keys().collect(), from_prom.keys().collect());
    assert_eq!(a, b, "the same series");
    assert!(from_prom.len() > 20, "{} series", from_prom.len());
    for (k, v) in &from_prom {
        let o = otlp_sorted[k];
        assert!((o - v).abs() <= 0.0005, "{k}: prometheus {v}, otlp {o}");
    }
    let _ = PathBuf::new();
}
