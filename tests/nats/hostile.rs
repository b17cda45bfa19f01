//! A hostile bus: anyone holding the token can publish anything to an
//! agent. Each request outside the vocabulary gets a typed refusal; a
//! report that does not fit max_payload is a typed error, never a cut
//! document; 10,000 requests in a burst, twice, are answered, refused or
//! dropped, never queued without bound: the agent stays up, its RSS stays
//! flat, at most its runs-per-minute bound of probe runs happens, and
//! (under strace) no request makes it execute anything or open a file it
//! names.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;

use crate::support::nats::{rss_kib, Logged, NatsServer, TOKEN};
use crate::support::{self, Netns};
use spx_test_harness::root_test;

const SUBJECT: &str = "spinifex.doctor.h1.run";

struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0 as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

pub(super) async fn client(ca: &Path) -> async_nats::Client {
    async_nats::ConnectOptions::new()
        .add_root_certificates(ca.to_owned())
        .require_tls(true)
        .token(TOKEN.to_owned())
        .connect("nats://127.0.0.1:4222")
        .await
        .expect("the test's client connects")
}

/// The final answer to one request: (kind header, body), skipping the
/// acknowledgement.
async fn ask(c: &async_nats::Client, payload: Vec<u8>) -> (String, Value) {
    let inbox = c.new_inbox();
    let mut sub = c.subscribe(inbox.clone()).await.unwrap();
    c.publish_with_reply(SUBJECT, inbox, Bytes::from(payload))
        .await
        .unwrap();
    c.flush().await.unwrap();
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .expect("an answer within 10 s")
            .expect("a message");
        let kind = m
            .headers
            .as_ref()
            .and_then(|h| h.get("Spx-Doctor-Reply"))
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default();
        if kind == "accepted" {
            assert!(m.payload.is_empty());
            continue;
        }
        let body = serde_json::from_slice(&m.payload).unwrap_or(Value::Null);
        return (kind, body);
    }
}

/// 10,000 requests at once (half identical, half of 50 other kinds):
/// how each was answered, by kind (`none` when nothing came).
async fn burst(c: &async_nats::Client) -> BTreeMap<String, usize> {
    let inbox = c.new_inbox();
    let mut sub = c.subscribe(format!("{inbox}.*")).await.unwrap();
    let n = 10_000;
    for i in 0..n {
        let sample = if i % 2 == 0 { 100 } else { 101 + i % 50 };
        let body = format!(
            r#"{{"id":"b{i}","timeout_ms":3000,"sample_ms":{sample},"checks":["sysctl"]}}"#
        );
        c.publish_with_reply(SUBJECT, format!("{inbox}.{i}"), Bytes::from(body))
            .await
            .unwrap();
    }
    c.flush().await.unwrap();
    let mut last: Vec<Option<String>> = vec![None; n];
    let until = Instant::now() + Duration::from_secs(8);
    while let Ok(Some(m)) =
        tokio::time::timeout(until.saturating_duration_since(Instant::now()), sub.next()).await
    {
        let i: usize = m.subject.rsplit('.').next().unwrap().parse().unwrap();
        let h = |k: &str| {
            m.headers
                .as_ref()
                .and_then(|h| h.get(k))
                .map(|v| v.as_str().to_owned())
        };
        let kind = match h("Spx-Doctor-Reply").as_deref() {
            Some("error") => {
                let body: Value = serde_json::from_slice(&m.payload).unwrap();
                body["error"]["kind"].as_str().unwrap().to_owned()
            }
            Some(k) => k.to_owned(),
            None => "?".into(),
        };
        if last[i].as_deref() != Some("report") {
            last[i] = Some(kind);
        }
    }
    let mut counts = BTreeMap::new();
    for k in last {
        *counts
            .entry(k.unwrap_or_else(|| "none".into()))
            .or_insert(0) += 1;
    }
    counts
}

/// Node h1's config in `dir`: its bus at 127.0.0.1:4222, TLS against `ca`.
pub(super) fn h1_config(dir: &Path, ca: &Path) -> std::path::PathBuf {
    let cfg = dir.join("spinifex.toml");
    std::fs::write(
        &cfg,
        format!(
            "node = \"h1\"\n[network]\nipsec_enabled = false\n[nodes.h1]\nhost = \"127.0.0.1\"\n{}",
            support::nats::nats_tables(
                &["h1".to_owned()],
                "127.0.0.1:4222",
                &ca.display().to_string(),
                TOKEN
            )
        ),
    )
    .unwrap();
    cfg
}

#[root_test]
fn hostile_requests_are_refused_or_bounded() {
    if !super::nats_or_skip("hostile_requests_are_refused_or_bounded") {
        return;
    }
    let ns = Netns::new();
    let dir = tempfile::tempdir().unwrap();
    let mut server = NatsServer::start(&ns, dir.path(), "127.0.0.1", "1MB");
    let cfg = h1_config(dir.path(), &server.ca);
    let trace = dir.path().join("agent.trace");
    let mut cmd = ns.command("/usr/bin/strace");
    cmd.args([
        "-f",
        "-qq",
        "--seccomp-bpf",
        "-e",
        "trace=execve,execveat,open,openat",
        "-o",
    ])
    .arg(&trace)
    .arg(support::bin())
    .args([
        "agent",
        "--interval",
        "0",
        "--runs-per-minute",
        "3",
        "--config",
    ])
    .arg(&cfg)
    .env("HOME", "/nonexistent-spx-test-home");
    let agent = Logged::spawn(cmd);
    agent.wait_for("connected to NATS at", 1, Duration::from_secs(15), "agent");
    let strace_pid = agent.child.id();
    let agent_pid: u32 =
        std::fs::read_to_string(format!("/proc/{strace_pid}/task/{strace_pid}/children"))
            .unwrap()
            .split_whitespace()
            .next()
            .expect("strace's child: the agent")
            .parse()
            .unwrap();
    // Ours, by pid, whatever happens: a tracee outlives a killed strace.
    let _agent_guard = KillOnDrop(agent_pid);

    let ca = server.ca.clone();
    let rt = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };

    // 1. Every hostile request: a typed refusal, no run.
    let refusals = ns
        .in_thread(move || {
            rt().block_on(async {
                let c = client(&ca).await;
                let mut out = Vec::new();
                for body in [
                    br#"{"id":"h1","timeout_ms":2000,"checks":["/etc/shadow"]}"#.to_vec(),
                    br#"{"id":"h2","timeout_ms":2000,"config":"/tmp/spx-hostile-config.toml"}"#.to_vec(),
                    br#"{"id":"h3","timeout_ms":2000,"record":"/tmp/spx-hostile-record"}"#.to_vec(),
                    br#"{"id":"h4","timeout_ms":86400000}"#.to_vec(),
                    br#"{"id":"h5","timeout_ms":2000,"checks":["$(touch /tmp/spx-hostile-pwned)"]}"#.to_vec(),
                    br#"{"id":"h6","timeout_ms":2000,"peer":["198.18.0.9"]}"#.to_vec(),
                    b"\x1b[2J\x00\xff garbage".to_vec(),
                    format!(r#"{{"id":"h7","timeout_ms":2000,"pad":"{}"}}"#, "x".repeat(8000)).into_bytes(),
                ] {
                    out.push(ask(&c, body).await);
                }
                out
            })
        })
        .join()
        .unwrap();
    let kinds: Vec<&str> = refusals
        .iter()
        .map(|(k, b)| {
            assert_eq!(k, "error", "{b:#}");
            assert_eq!(b["error"]["node"], "h1", "{b:#}");
            b["error"]["kind"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "unknown-check",
            "unknown-field",
            "unknown-field",
            "timeout-too-long",
            "unknown-check",
            "unknown-field",
            "not-json",
            "oversize"
        ]
    );
    assert_eq!(refusals[1].1["error"]["request"], "h2");
    assert!(!agent.text().contains("run 1:"), "{}", agent.text());

    // 2. A good request: acknowledged, then the node's report (JSON v1,
    // as `spx-doctor --format json` writes it).
    let ca = server.ca.clone();
    let good = br#"{"id":"ok1","timeout_ms":5000,"sample_ms":100,"checks":["sysctl"]}"#;
    let (kind, report) = ns
        .in_thread(move || rt().block_on(async { ask(&client(&ca).await, good.to_vec()).await }))
        .join()
        .unwrap();
    assert_eq!(kind, "report", "{report:#}");
    support::assert_valid(&report);
    assert_eq!(report["node"], "h1");
    assert_eq!(report["checks"][0]["id"], "sysctl.udp-buffers");

    // 3. max_payload below the report: a typed error, never a cut one.
    server.set_max_payload("1KB");
    agent.wait_for("reconnected to NATS", 1, Duration::from_secs(15), "agent");
    let ca = server.ca.clone();
    let (kind, body) = ns
        .in_thread(move || rt().block_on(async { ask(&client(&ca).await, good.to_vec()).await }))
        .join()
        .unwrap();
    assert_eq!(kind, "error", "{body:#}");
    assert_eq!(body["error"]["kind"], "too-large", "{body:#}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not fit the server's max_payload (1024 bytes)"),
        "{body:#}"
    );
    server.set_max_payload("1MB");
    agent.wait_for("reconnected to NATS", 2, Duration::from_secs(15), "agent");

    // 4. Two bursts of 10,000: bounded runs, flat memory, still up.
    let before = rss_kib(agent_pid);
    let ca = server.ca.clone();
    let first = ns
        .in_thread(move || rt().block_on(async { burst(&client(&ca).await).await }))
        .join()
        .unwrap();
    let after_first = rss_kib(agent_pid);
    let ca = server.ca.clone();
    let second = ns
        .in_thread(move || rt().block_on(async { burst(&client(&ca).await).await }))
        .join()
        .unwrap();
    let after_second = rss_kib(agent_pid);
    let runs = agent
        .text()
        .lines()
        .filter(|l| l.starts_with("spx-doctor agent: run "))
        .count();
    assert!(
        runs <= 3,
        "at most 3 runs a minute, saw {runs}:\n{}",
        agent.text()
    );
    for counts in [&first, &second] {
        for kind in counts.keys() {
            assert!(
                ["report", "busy", "rate-limited", "none", "accepted"].contains(&kind.as_str()),
                "{counts:?}"
            );
        }
        assert_eq!(counts.values().sum::<usize>(), 10_000);
        // What the agent could not read in time the client dropped
        // (bounded by its subscription capacity); of the rest, the few
        // identical to the run shared its report, the others were refused.
        let refused = counts.get("busy").copied().unwrap_or(0)
            + counts.get("rate-limited").copied().unwrap_or(0);
        assert!(refused > 1_000, "{counts:?}");
        assert!(
            counts.get("none").copied().unwrap_or(0) < 9_000,
            "{counts:?}"
        );
    }
    assert!(
        after_second <= after_first + 2048,
        "RSS flat between bursts: {before} KiB before, {after_first} after one, {after_second} after two"
    );
    assert!(
        after_first <= before + 16384,
        "{before} -> {after_first} KiB"
    );
    assert!(
        std::fs::read_to_string(format!("/proc/{agent_pid}/status")).is_ok(),
        "the agent is up"
    );
    // Still answering.
    let ca = server.ca.clone();
    let (kind, body) = ns
        .in_thread(move || {
            rt().block_on(async {
                ask(
                    &client(&ca).await,
                    br#"{"id":"late","timeout_ms":100}"#.to_vec(),
                )
                .await
            })
        })
        .join()
        .unwrap();
    assert_eq!(
        (kind.as_str(), &body["error"]["kind"]),
        ("error", &Value::from("bad-value"))
    );
    // systemd stops it with SIGTERM, whether or not the bus is there.
    server.stop();
    agent.wait_for("lost the connection", 1, Duration::from_secs(5), "agent");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent_pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    agent.wait_for("stopping", 1, Duration::from_secs(3), "agent");
    let t0 = Instant::now();
    while Path::new(&format!("/proc/{agent_pid}")).exists() && t0.elapsed() < Duration::from_secs(3)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !Path::new(&format!("/proc/{agent_pid}/status")).exists()
            || std::fs::read_to_string(format!("/proc/{agent_pid}/status"))
                .unwrap_or_default()
                .contains("zombie"),
        "the agent ended on SIGTERM"
    );
    drop(agent);

    // Under strace: nothing executed but the agent itself, and no file a
    // request named was ever opened.
    let traced = std::fs::read_to_string(&trace).unwrap();
    let execs: Vec<&str> = traced.lines().filter(|l| l.contains("execve")).collect();
    assert_eq!(execs.len(), 1, "{execs:#?}");
    assert!(execs[0].contains("spx-doctor"), "{execs:#?}");
    for named in ["spx-hostile", "/etc/shadow"] {
        assert!(!traced.contains(named), "opened {named}");
    }
    assert!(!Path::new("/tmp/spx-hostile-pwned").exists());
}

/// systemd's stop while the agent waits on a server that accepts and never
/// speaks (no INFO, so each connect attempt lasts its 5 s): the agent stops
/// at once, not when the attempt gives up.
#[root_test]
fn a_stop_while_the_agent_connects_ends_it_at_once() {
    let ns = Netns::new();
    let dir = tempfile::tempdir().unwrap();
    // Bound in the namespace; the backlog completes the handshake, nobody
    // accepts or writes.
    let listener = ns
        .in_thread(|| std::net::TcpListener::bind("127.0.0.1:4222").expect("bind"))
        .join()
        .unwrap();
    support::nats::pki(dir.path(), "127.0.0.1");
    let cfg = h1_config(dir.path(), &dir.path().join("ca.pem"));
    let mut cmd = ns.command(support::bin());
    cmd.args(["agent", "--interval", "0", "--config"])
        .arg(&cfg)
        .env("HOME", "/nonexistent-spx-test-home");
    let mut agent = Logged::spawn(cmd);
    agent.wait_for("starting for node h1", 1, Duration::from_secs(5), "agent");
    // Inside the first attempt: the connection is open and unanswered.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        agent.child.try_wait().unwrap().is_none(),
        "{}",
        agent.text()
    );
    assert!(
        !agent.text().contains("cannot connect"),
        "still in its first attempt: {}",
        agent.text()
    );
    let t0 = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = loop {
        if let Some(s) = agent.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_millis(2500),
            "the agent still runs {:?} after SIGTERM, inside a 5 s connect attempt: {}",
            t0.elapsed(),
            agent.text()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{}", agent.text());
    agent.wait_for("stopping", 1, Duration::from_secs(1), "agent");
    assert!(
        !agent.text().contains("cannot connect"),
        "stopped inside the attempt, not after it: {}",
        agent.text()
    );
    drop(listener);
}
