//! The swarm (`bench/swarm`, issue 37): simulated agents on a real bus.
//!
//! - It speaks the agent's protocol: the agent's own request vectors
//!   (`src/bus/wire.rs`), the hostile requests of `hostile.rs` and a good
//!   request, asked of a real `spx-doctor agent` and of a swarm node on the
//!   same bus, get the same answers: the same kinds, refusals, words and
//!   headers.
//! - Its reports are the doctor's: the reports it relabels from one judged
//!   node per role are, byte for byte, what the doctor judges from each
//!   node's own bundle.
//! - At 256 nodes, `--cluster --via nats` hears every node, names every
//!   black-holed pair and exits 1 (issue 37's CI run).

#[path = "../../src/bus/wire.rs"]
#[allow(dead_code)]
mod wire;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;

use crate::support::nats::{Logged, NatsServer, Tail, TOKEN};
use crate::support::{self, Netns};
use spx_test_harness::root_test;

/// The swarm's binary, beside the doctor's (`cargo test --workspace`
/// builds it; a test run of this crate alone builds it here).
fn swarm_bin() -> PathBuf {
    let doctor = Path::new(support::bin());
    let dir = doctor.parent().expect("the target directory");
    let swarm = dir.join("spx-swarm");
    let release = dir.file_name().is_some_and(|d| d == "release");
    let mut build = Command::new(env!("CARGO"));
    build
        .args(["build", "--quiet", "-p", "spx-swarm", "--manifest-path"])
        .arg(support::repo_root().join("Cargo.toml"));
    if release {
        build.arg("--release");
    }
    let status = build.status().expect("cargo");
    assert!(status.success(), "cargo build -p spx-swarm");
    assert!(swarm.exists(), "{}", swarm.display());
    swarm
}

/// The committed template: a real lab node's bundle.
fn template() -> PathBuf {
    support::repo_root().join("bench/swarm/testdata/n0.bundle")
}

/// The swarm on the bus at 127.0.0.1:4222 in `ns`, ready, from the
/// committed [`template`].
struct Swarm {
    /// Its directory: its config (`spinifex.toml`), its black holes.
    dir: PathBuf,
    /// Stopped when the test ends (its Drop), even on failure.
    _proc: Tail,
}

impl Swarm {
    fn start(ns: &Netns, n: usize, dir: &Path, ca: &Path, more: &[&str]) -> Swarm {
        std::fs::create_dir_all(dir).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, TOKEN).unwrap();
        let mut cmd = ns.command(swarm_bin().to_str().unwrap());
        cmd.args(["--nodes", &n.to_string(), "--bundle"])
            .arg(template())
            .arg("--spx")
            .arg(support::bin())
            .arg("--dir")
            .arg(dir)
            .args(["--bus", "127.0.0.1:4222", "--ca"])
            .arg(ca)
            .arg("--token-file")
            .arg(&token)
            .args(more);
        let proc = Tail::spawn(cmd);
        proc.wait(
            Instant::now() - Duration::from_secs(1),
            Duration::from_secs(120),
            "the swarm",
            |l| l.starts_with("ready"),
        );
        Swarm {
            dir: dir.to_owned(),
            _proc: proc,
        }
    }
}

/// One request to `subject` and every answer to it within `wait`: (the
/// reply kind, each header's name and value, the body).
async fn answers(
    c: &async_nats::Client,
    subject: &str,
    payload: Vec<u8>,
    wait: Duration,
) -> Vec<(String, Vec<(String, String)>, Value)> {
    let inbox = c.new_inbox();
    let mut sub = c.subscribe(inbox.clone()).await.unwrap();
    c.publish_with_reply(subject.to_owned(), inbox, Bytes::from(payload))
        .await
        .unwrap();
    c.flush().await.unwrap();
    let mut out = Vec::new();
    let until = Instant::now() + wait;
    while let Ok(Some(m)) =
        tokio::time::timeout(until.saturating_duration_since(Instant::now()), sub.next()).await
    {
        let mut headers: Vec<(String, String)> = m
            .headers
            .iter()
            .flat_map(|h| h.iter())
            .flat_map(|(k, vs)| {
                vs.iter()
                    .map(move |v| (k.to_string(), v.as_str().to_owned()))
            })
            .collect();
        headers.sort();
        let kind = headers
            .iter()
            .find(|(k, _)| k == "Spx-Doctor-Reply")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let final_answer = kind != "accepted";
        out.push((
            kind,
            headers,
            serde_json::from_slice(&m.payload).unwrap_or(Value::Null),
        ));
        if final_answer {
            break;
        }
    }
    out
}

/// An answer as two agents of different nodes must give it alike: the
/// node's own name and what differs between two runs taken out.
fn alike(answer: &(String, Vec<(String, String)>, Value), node: &str) -> Value {
    let (kind, headers, body) = answer;
    let headers: Vec<Value> = headers
        .iter()
        .map(|(k, v)| {
            let v = match k.as_str() {
                "Spx-Doctor-Node" => v.replace(node, "NODE"),
                // Who answered: each its own, present on both sides.
                "Spx-Doctor-Machine-Id"
                | "Spx-Doctor-Boot-Id"
                | "Spx-Doctor-Started"
                | "Spx-Doctor-Addresses" => "WHO".to_owned(),
                "traceparent" => v.get(..36).unwrap_or(v).to_owned(),
                // Each its own report's size (checked apart).
                "Spx-Doctor-Report-Bytes" => "BYTES".to_owned(),
                _ => v.clone(),
            };
            serde_json::json!([k, v])
        })
        .collect();
    let body = match kind.as_str() {
        "error" => {
            let mut e = body["error"].clone();
            e["node"] = Value::from(if e["node"] == node { "NODE" } else { "?" });
            e
        }
        "report" => {
            serde_json::json!({"node": if body["node"] == node { "NODE" } else { "?" }, "schema_version": body["schema_version"]})
        }
        _ => body.clone(),
    };
    serde_json::json!({"kind": kind, "headers": headers, "body": body})
}

#[root_test]
fn the_swarm_answers_as_the_agent_does() {
    if !super::nats_or_skip("the_swarm_answers_as_the_agent_does") {
        return;
    }
    let ns = Netns::new();
    let dir = tempfile::tempdir().unwrap();
    let server = NatsServer::start(&ns, dir.path(), "127.0.0.1", "1MB");
    // A real agent, node h1, configured as the hostile tests' is.
    let cfg = super::hostile::h1_config(dir.path(), &server.ca);
    let mut cmd = ns.command(support::bin());
    cmd.args(["agent", "--interval", "0", "--config"])
        .arg(&cfg)
        .env("HOME", "/nonexistent-spx-test-home");
    let agent = Logged::spawn(cmd);
    agent.wait_for("connected to NATS at", 1, Duration::from_secs(15), "agent");
    // Three swarm nodes, from the committed template.
    let swarm = Swarm::start(
        &ns,
        3,
        &dir.path().join("swarm"),
        &server.ca,
        &["--interval", "0", "--run-time", "300ms"],
    );

    let mut requests: Vec<Vec<u8>> = wire::REQUEST_VECTORS
        .iter()
        .map(|(text, _, _)| text.as_bytes().to_vec())
        .collect();
    requests.extend([
        br#"{"id":"h5","timeout_ms":2000,"checks":["$(touch /tmp/spx-swarm-pwned)"]}"#.to_vec(),
        b"\x1b[2J\x00\xff garbage".to_vec(),
        format!(
            r#"{{"id":"h7","timeout_ms":2000,"pad":"{}"}}"#,
            "x".repeat(8000)
        )
        .into_bytes(),
        br#"{"id":"late","timeout_ms":100}"#.to_vec(),
        // A good one: acknowledged, then the node's report.
        br#"{"id":"ok1","timeout_ms":5000,"sample_ms":100,"checks":["sysctl"]}"#.to_vec(),
    ]);
    let ca = server.ca.clone();
    let pairs = ns
        .in_thread(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    let c = super::hostile::client(&ca).await;
                    let mut out = Vec::new();
                    for r in requests {
                        let wait = Duration::from_secs(8);
                        let a = answers(&c, "spinifex.doctor.h1.run", r.clone(), wait).await;
                        let s = answers(&c, "spinifex.doctor.n1.run", r, wait).await;
                        out.push((a, s));
                    }
                    out
                })
        })
        .join()
        .unwrap();
    let mut refusals = 0;
    for (agent_said, swarm_said) in &pairs {
        let a: Vec<Value> = agent_said.iter().map(|x| alike(x, "h1")).collect();
        let s: Vec<Value> = swarm_said.iter().map(|x| alike(x, "n1")).collect();
        assert!(!a.is_empty(), "the agent answered");
        assert_eq!(a, s, "the swarm answers as the agent does");
        refusals += usize::from(a.last().unwrap()["kind"] == "error");
    }
    assert_eq!(
        refusals,
        pairs.len() - 1,
        "every request but the good one refused"
    );
    let (_, good) = pairs.last().unwrap();
    assert_eq!(good.len(), 2, "acknowledged, then answered: {good:#?}");
    let report = &good[1].2;
    support::assert_valid(report);
    assert_eq!(report["node"], "n1");
    let ids: BTreeSet<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    // The sysctl category's checks (sysctl.udp-buffers, sysctl.neigh).
    let sysctl: BTreeSet<&str> = spx_checks::CHECKS
        .iter()
        .map(|c| c.id())
        .filter(|id| id.starts_with("sysctl."))
        .collect();
    assert!(sysctl.len() >= 2, "{sysctl:?}");
    assert_eq!(ids, sysctl, "the selection's checks alone");
    assert!(!Path::new("/tmp/spx-swarm-pwned").exists());

    // A report larger than the request's inline_max_bytes: `held` with its
    // size, then given once to a fetch of the request's id; a fetch of an
    // id not held has no answer, and one outside the vocabulary is refused
    // alike.
    let ca = server.ca.clone();
    let exchanges = ns
        .in_thread(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    let c = super::hostile::client(&ca).await;
                    let mut out = Vec::new();
                    for node in ["h1", "n1"] {
                        let run = format!("spinifex.doctor.{node}.run");
                        let fetch = wire::node_fetch_subject(node);
                        let wait = Duration::from_secs(8);
                        let big = br#"{"id":"big1","timeout_ms":5000,"sample_ms":100,"checks":["sysctl"],"inline_max_bytes":1024}"#;
                        let mut said = answers(&c, &run, big.to_vec(), wait).await;
                        let f = br#"{"id":"big1"}"#.to_vec();
                        said.extend(answers(&c, &fetch, f.clone(), wait).await);
                        let again = answers(&c, &fetch, f, Duration::from_secs(1)).await;
                        let other =
                            answers(&c, &fetch, br#"{"id":"nope"}"#.to_vec(), Duration::from_secs(1))
                                .await;
                        let mut refused = Vec::new();
                        for (text, _, _) in wire::FETCH_VECTORS {
                            refused.extend(answers(&c, &fetch, text.as_bytes().to_vec(), wait).await);
                        }
                        out.push((said, again, other, refused));
                    }
                    out
                })
        })
        .join()
        .unwrap();
    let header = |a: &(String, Vec<(String, String)>, Value), name: &str| -> String {
        a.1.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut shapes = Vec::new();
    for ((said, again, other, refused), node) in exchanges.iter().zip(["h1", "n1"]) {
        let kinds: Vec<&str> = said.iter().map(|a| a.0.as_str()).collect();
        assert_eq!(kinds, ["accepted", "held", "report"], "{node}: {said:#?}");
        let announced: usize = header(&said[1], "Spx-Doctor-Report-Bytes").parse().unwrap();
        let report = &said[2].2;
        support::assert_valid(report);
        assert_eq!(report["node"], node);
        assert!(announced > 1024, "{node}: {announced}");
        assert_eq!(
            announced,
            serde_json::to_vec(report).unwrap().len(),
            "{node}: the size announced is the report's (compact JSON)"
        );
        assert_eq!(header(&said[2], "Spx-Doctor-Request"), "big1");
        assert!(again.is_empty(), "{node}: given once: {again:#?}");
        assert!(
            other.is_empty(),
            "{node}: not held, not answered: {other:#?}"
        );
        assert_eq!(
            refused.len(),
            wire::FETCH_VECTORS.len(),
            "{node}: {refused:#?}"
        );
        for (a, (text, kind, says)) in refused.iter().zip(wire::FETCH_VECTORS) {
            assert_eq!(a.0, "error", "{node}: {text}");
            assert_eq!(a.2["error"]["kind"], kind.as_str(), "{node}: {text}");
            let m = a.2["error"]["message"].as_str().unwrap();
            assert!(m.contains(says), "{node}: {text}: {m}");
        }
        let shape: Vec<Value> = said[..2]
            .iter()
            .chain(refused)
            .map(|a| alike(a, node))
            .collect();
        shapes.push(shape);
    }
    assert_eq!(
        shapes[0], shapes[1],
        "the swarm holds and fetches as the agent does"
    );
    drop(swarm);
    drop(agent);
}

/// `spx-swarm --prepare-only` into `dir`: its stdout.
fn prepare(n: usize, dir: &Path, more: &[&str]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, TOKEN).unwrap();
    let out = Command::new(swarm_bin())
        .args(["--nodes", &n.to_string(), "--bundle"])
        .arg(template())
        .arg("--spx")
        .arg(support::bin())
        .arg("--dir")
        .arg(dir)
        .args(["--bus", "127.0.0.1:4222", "--ca", "/nonexistent-ca.pem"])
        .arg("--token-file")
        .arg(&token)
        .arg("--prepare-only")
        .args(more)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "spx-swarm: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Every report a prepared swarm holds, by file name.
fn reports_in(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let sub = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("reports-")
        })
        .expect("a reports directory");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&sub)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// The swarm judges one node per role (the classes of its peers' paths, in
/// the config's order) and relabels every other node's report from it
/// (`bench/swarm/src/relabel.rs`). Here the doctor also judges every
/// node's own bundle, and the two agree byte for byte: 14 nodes, whose
/// names sort n0 n1 n10 … n13 n2 … (so a node's i-th peer is not node i),
/// n13 behind a port at 1500, the pair n2:n11 black-holed both ways and
/// n4's path to n6 flapping (its second report, a role of its own).
#[test]
fn the_relabelled_reports_are_what_the_doctor_judges() {
    let dir = tempfile::tempdir().unwrap();
    let faults = [
        "--black-hole",
        "n13",
        "--black-hole",
        "n2:n11",
        "--flap",
        "n4:n6",
    ];
    let fast = prepare(14, &dir.path().join("fast"), &faults);
    let mut every = faults.to_vec();
    every.push("--judge-every-node");
    let full = prepare(14, &dir.path().join("full"), &every);
    let (fast_reports, full_reports) = (
        reports_in(&dir.path().join("fast")),
        reports_in(&dir.path().join("full")),
    );
    assert_eq!(fast_reports.len(), 15, "14 nodes and the flapped report");
    let names = |r: &[(String, Vec<u8>)]| r.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&fast_reports), names(&full_reports));
    for ((name, relabelled), (_, judged)) in fast_reports.iter().zip(&full_reports) {
        assert!(
            relabelled == judged,
            "{name}: the relabelled report differs from the doctor's:\n{}\n{}",
            String::from_utf8_lossy(relabelled),
            String::from_utf8_lossy(judged)
        );
    }
    // The fast way judged fewer: the roles (before n13 by name, after it,
    // n13, n2, n11, n4 flapped), not the 15 reports.
    assert!(
        fast.contains("(6 judged by the doctor, 9 relabelled from them;"),
        "{fast}"
    );
    assert!(
        full.contains("(15 judged by the doctor, 0 relabelled from them;"),
        "{full}"
    );
    // And they hold what they should: n0 sees n13 and nobody else
    // black-hole; n2 sees n11 and n13.
    let doc = |name: &str| -> Value {
        serde_json::from_slice(&fast_reports.iter().find(|(n, _)| n == name).unwrap().1).unwrap()
    };
    let holes = |d: &Value| -> BTreeSet<String> {
        let m = support::check(d, "mtu.path");
        m["evidence"]["peers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["verdict"] == "blackhole")
            .map(|p| p["address"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(holes(&doc("n0.json")), ["198.18.0.14".to_owned()].into());
    assert_eq!(
        holes(&doc("n2.json")),
        ["198.18.0.12".to_owned(), "198.18.0.14".to_owned()].into()
    );
    assert_eq!(doc("n7.json")["node"], "n7");
}

/// A cluster mid-upgrade: agents from before `inline_max_bytes` refuse it
/// by name, and the gather asks each of them once more without it, so
/// every node still answers (its report in its answer).
#[root_test]
fn agents_from_before_inline_max_are_asked_again_without_it() {
    if !super::nats_or_skip("agents_from_before_inline_max_are_asked_again_without_it") {
        return;
    }
    let ns = Netns::new();
    let dir = tempfile::tempdir().unwrap();
    let server = NatsServer::start(&ns, dir.path(), "127.0.0.1", "1MB");
    let swarm = Swarm::start(
        &ns,
        3,
        &dir.path().join("swarm"),
        &server.ca,
        &[
            "--before-inline-max",
            "--interval",
            "0",
            "--run-time",
            "300ms",
        ],
    );
    let out = ns
        .spx()
        .args(["--cluster", "--via", "nats", "--config"])
        .arg(swarm.dir.join("spinifex.toml"))
        .args(["--format", "json", "--timeout", "10s"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no cluster report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let nodes = doc["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    for n in nodes {
        assert_eq!(n["status"], "ok", "{n:#}");
        assert_eq!(n["report"]["node"], n["name"]);
    }
    drop(swarm);
}

/// Issue 37's CI run: 256 swarm nodes on one real bus, n255 behind a port
/// at 1500 and the pair n3:n200 black-holed; `--cluster --via nats` (the
/// real binary, debug as the suite builds it) hears all 256, names exactly
/// the 512 black-holed pairs and exits 1.
#[root_test]
#[allow(clippy::disallowed_macros)] // its timings belong in the test log
fn a_256_node_swarm_gathered_over_nats_names_every_black_hole() {
    if !super::nats_or_skip("a_256_node_swarm_gathered_over_nats_names_every_black_hole") {
        return;
    }
    const N: usize = 256;
    let t0 = Instant::now();
    let ns = Netns::new();
    let dir = tempfile::tempdir().unwrap();
    let server = NatsServer::start(&ns, dir.path(), "127.0.0.1", "1MB");
    let swarm = Swarm::start(
        &ns,
        N,
        &dir.path().join("swarm"),
        &server.ca,
        &[
            "--black-hole",
            "n255",
            "--black-hole",
            "n3:n200",
            "--interval",
            "0",
            "--run-time",
            "300ms",
        ],
    );
    let ready = t0.elapsed();
    let want: BTreeSet<String> = std::fs::read_to_string(swarm.dir.join("black-holes"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(want.len(), 2 * (N - 1) + 2, "n255's paths and the pair's");

    let t1 = Instant::now();
    let out = ns
        .spx()
        .args(["--cluster", "--via", "nats", "--config"])
        .arg(swarm.dir.join("spinifex.toml"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    let gathered = t1.elapsed();
    let code = out.status.code().unwrap_or(-1);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no cluster report ({e}), exit {code}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(code, 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(doc["exit_code"], 1);
    assert_eq!(doc["via"], "nats");
    let nodes = doc["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), N);
    let silent: Vec<&Value> = nodes
        .iter()
        .filter(|n| n["status"] != "ok" || n["via"] != "nats" || n["report"].is_null())
        .map(|n| &n["name"])
        .collect();
    assert!(silent.is_empty(), "every node answered: {silent:?}");
    let matrix = support::check(&doc, "cluster.path-matrix");
    assert_eq!(matrix["status"], "fail");
    let failing: BTreeSet<String> = matrix["evidence"]["failing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(failing, want, "exactly the black-holed pairs named");
    let cells = doc["path_matrix"].as_array().unwrap();
    assert_eq!(cells.len(), N * (N - 1), "the matrix in full");
    let blackholes = cells.iter().filter(|c| c["verdict"] == "blackhole").count();
    let ok = cells.iter().filter(|c| c["verdict"] == "ok").count();
    assert_eq!((blackholes, ok), (want.len(), N * (N - 1) - want.len()));
    drop(swarm);
    println!(
        "256-node swarm: ready in {:.1} s, gathered in {:.1} s ({} bytes of cluster report)",
        ready.as_secs_f64(),
        gathered.as_secs_f64(),
        out.stdout.len()
    );
}

/// The bucket's bound and how many nodes it holds an entry of, read from
/// the server (`None`: no bucket yet).
fn bucket_of(ns: &Netns, ca: &Path) -> Option<(i64, usize)> {
    let ca = ca.to_owned();
    ns.in_thread(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let js = async_nats::jetstream::new(super::hostile::client(&ca).await);
                let mut stream = js.get_stream("KV_spx-doctor").await.ok()?;
                let info = stream.info().await.ok()?.clone();
                let kv = js.get_key_value("spx-doctor").await.ok()?;
                let keys = kv.keys().await.ok()?.count().await;
                Some((info.config.max_bytes, keys))
            })
    })
    .join()
    .unwrap()
}

/// Wait until the bucket is as `want` says (the last reading: a panic
/// after `within`).
fn bucket_until(
    ns: &Netns,
    ca: &Path,
    within: Duration,
    what: &str,
    want: impl Fn(i64, usize) -> bool,
) -> (i64, usize) {
    let t0 = Instant::now();
    loop {
        let now = bucket_of(ns, ca);
        if let Some((bytes, keys)) = now.filter(|(b, k)| want(*b, *k)) {
            return (bytes, keys);
        }
        assert!(t0.elapsed() < within, "{what}: the bucket is {now:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

const MIB: i64 = 1 << 20;

/// Issue 37: the bucket holds two rounds of the largest values of the
/// nodes its writers' config names (64 MiB at least): 64 MiB held 140 of
/// 1,024 nodes' reports. A larger cluster's agents raise it, never past
/// what the server takes (here its max_file_store, 256 MiB): then the
/// bound stays, or a new bucket is made at 64 MiB, and the log says which.
/// `watch --once` reads who wrote each revision from the headers and each
/// node's latest value whole, and holds every node.
#[root_test]
fn the_bucket_is_made_for_the_cluster_and_raised_for_a_larger_one_as_far_as_the_server_allows() {
    let test = "the_bucket_is_made_for_the_cluster_and_raised_for_a_larger_one_as_far_as_the_server_allows";
    if !super::nats_or_skip(test) {
        return;
    }
    let ns = Netns::new();
    let dir = tempfile::tempdir().unwrap();
    let server = NatsServer::start(&ns, dir.path(), "127.0.0.1", "1MB");
    let writing = ["--interval", "1s", "--run-time", "100ms"];
    let start = |ns: &Netns, n: usize, sub: &str, ca: &Path| {
        Swarm::start(ns, n, &dir.path().join(sub), ca, &writing)
    };

    // Three nodes: the floor.
    let three = start(&ns, 3, "three", &server.ca);
    let within = Duration::from_secs(60);
    let (bytes, _) = bucket_until(&ns, &server.ca, within, "3 nodes", |_, k| k == 3);
    assert_eq!(bytes, 64 * MIB);
    drop(three);

    // Forty: raised to 80 MiB, and watch holds all forty.
    let forty = start(&ns, 40, "forty", &server.ca);
    bucket_until(&ns, &server.ca, within, "40 nodes", |b, k| {
        b == 80 * MIB && k == 40
    });
    let (code, doc) = support::run_cluster_json(
        ns.spx()
            .args(["watch", "--once", "--config"])
            .arg(forty.dir.join("spinifex.toml")),
    );
    let nodes = doc["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 40);
    let not_ok: Vec<&Value> = nodes.iter().filter(|n| n["status"] != "ok").collect();
    assert!(not_ok.is_empty(), "exit {code}: {not_ok:#?}");
    drop(forty);

    // 130 nodes want 260 MiB, more than the server's 256: the bound stays
    // at 80, and the swarm (as an agent logs it) says so.
    let more = start(&ns, 130, "more", &server.ca);
    let said = |s: &Swarm, needle: &str| {
        let t0 = Instant::now();
        loop {
            let errors = s._proc.errors();
            if errors.iter().any(|e| e.contains(needle)) {
                break;
            }
            assert!(t0.elapsed() < within, "no {needle:?} in {errors:#?}");
            std::thread::sleep(Duration::from_millis(250));
        }
    };
    said(
        &more,
        &format!(
            "cannot raise the spx-doctor bucket's bound from {} to {} bytes",
            80 * MIB,
            260 * MIB
        ),
    );
    let (bytes, _) = bucket_until(&ns, &server.ca, within, "130 nodes", |_, k| k == 130);
    assert_eq!(bytes, 80 * MIB, "never past what the server takes");
    drop(more);

    // A new server: the bucket made at 64 MiB, and said.
    let other = Netns::new();
    let odir = tempfile::tempdir().unwrap();
    let oserver = NatsServer::start(&other, odir.path(), "127.0.0.1", "1MB");
    let fresh = Swarm::start(
        &other,
        130,
        &odir.path().join("fresh"),
        &oserver.ca,
        &writing,
    );
    said(
        &fresh,
        &format!(
            "the server would not make the spx-doctor bucket {} bytes large",
            260 * MIB
        ),
    );
    let (bytes, _) = bucket_until(&other, &oserver.ca, within, "a new server", |_, k| k == 130);
    assert_eq!(bytes, 64 * MIB);
}
