//! The agent's `path` request kind against a real nats-server: anything
//! outside its vocabulary is a typed refusal; a guest the node does not
//! run is `not-here`; a peer outside its own peer list is
//! `peer-not-listed` and is never probed; a good request is the node's
//! side of the path. Then `spx-doctor path --via nats` from another node:
//! the remote end's side comes from that node's agent.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;

use crate::support::nats::{nats_tables, Logged, NatsServer, TOKEN};
use crate::support::ovsdb_server::OvsdbServer;
use crate::support::{self, run_path_json, Netns};
use spx_test_harness::root_test;

const ENI: &str = "eni-0aa1f3c9d2b7e4051";
/// An ENI bound to h0, the coordinator's node.
const ENI_H0: &str = "eni-0bb2e4d0c3a8f5162";

/// h0's underlay address (and the bus's), and h1's.
const H0: &str = "198.18.0.2";
const H1: &str = "198.18.0.3";

async fn client(ca: &Path) -> async_nats::Client {
    async_nats::ConnectOptions::new()
        .add_root_certificates(ca.to_owned())
        .require_tls(true)
        .token(TOKEN.to_owned())
        .connect(format!("nats://{H0}:4222"))
        .await
        .expect("the test's client connects")
}

/// The final answer to one path request: (kind header, node header, body).
async fn ask(c: &async_nats::Client, payload: Vec<u8>) -> (String, String, Value) {
    let inbox = c.new_inbox();
    let mut sub = c.subscribe(inbox.clone()).await.unwrap();
    c.publish_with_reply("spinifex.doctor.h1.path", inbox, Bytes::from(payload))
        .await
        .unwrap();
    c.flush().await.unwrap();
    loop {
        let m = tokio::time::timeout(Duration::from_secs(15), sub.next())
            .await
            .expect("an answer within 15 s")
            .expect("a message");
        let header = |name: &str| {
            m.headers
                .as_ref()
                .and_then(|h| h.get(name))
                .map(|v| v.as_str().to_owned())
                .unwrap_or_default()
        };
        let kind = header("Spx-Doctor-Reply");
        if kind == "accepted" {
            continue;
        }
        let body = serde_json::from_slice(&m.payload).unwrap_or(Value::Null);
        return (kind, header("Spx-Doctor-Node"), body);
    }
}

/// Node `me`'s config of nodes h0 and h1 (each with its geneve endpoint in
/// SB), both on this bus, reading `nb` and `sb`.
fn config(
    dir: &Path,
    me: &str,
    ca: &Path,
    nb: &OvsdbServer,
    sb: &OvsdbServer,
) -> std::path::PathBuf {
    let d = dir.join(me);
    std::fs::create_dir_all(&d).unwrap();
    let cfg = d.join("spinifex.toml");
    std::fs::write(
        &cfg,
        format!(
            "node = \"{me}\"\n[network]\nipsec_enabled = false\nunderlay_mtu = 1500\n\
             [nodes.h0]\nhost = \"{H0}\"\n[nodes.h0.vpcd]\novn_nb_addr = \"{}\"\novn_sb_addr = \"{}\"\n\
             [nodes.h1]\nhost = \"{H1}\"\n{}",
            nb.unix(),
            sb.unix(),
            nats_tables(
                &["h0".to_owned(), "h1".to_owned()],
                &format!("{H0}:4222"),
                &ca.display().to_string(),
                TOKEN
            )
        ),
    )
    .unwrap();
    cfg
}

#[root_test]
fn path_requests_are_refused_by_kind_or_answered_with_the_nodes_side() {
    if !super::nats_or_skip("path_requests_are_refused_by_kind_or_answered_with_the_nodes_side") {
        return;
    }
    // Two nodes, each a namespace of the test's own, joined by a veth: h0
    // (the bus, and the coordinator) and h1 (the agent).
    let ns = Netns::new();
    let ns1 = Netns::new();
    ns.veth("eth0", &ns1, "eth0");
    ns.ip(&["addr", "add", &format!("{H0}/24"), "dev", "eth0"]);
    ns1.ip(&["addr", "add", &format!("{H1}/24"), "dev", "eth0"]);
    let dir = tempfile::tempdir().unwrap();
    let server = NatsServer::start(&ns, dir.path(), H0, "1MB");
    // OVN: h0 and h1 with their encaps, and one ENI bound to h1.
    let nb = OvsdbServer::nb();
    let sb = OvsdbServer::sb();
    nb.nbctl(&["ls-add", "subnet-subnet-0a11c0ffee0000001"]);
    sb.sbctl(&["chassis-add", "h0", "geneve", H0]);
    sb.sbctl(&["chassis-add", "h1", "geneve", H1]);
    for (i, (eni, ip, chassis)) in [(ENI, "198.18.1.10", "h1"), (ENI_H0, "198.18.1.11", "h0")]
        .into_iter()
        .enumerate()
    {
        let lsp = format!("port-{eni}");
        nb.nbctl(&[
            "lsp-add",
            "subnet-subnet-0a11c0ffee0000001",
            &lsp,
            "--",
            "lsp-set-addresses",
            &lsp,
            &format!("02:00:0a:00:01:0{i} {ip}"),
            "--",
            "set",
            "Logical_Switch_Port",
            &lsp,
            &format!("external_ids:spinifex\\:eni_id={eni}"),
        ]);
        let dp = sb
            .sbctl(&[
                "create",
                "Datapath_Binding",
                &format!("tunnel_key={}", i + 1),
            ])
            .trim()
            .to_owned();
        let c = sb
            .sbctl(&[
                "--bare",
                "--columns=_uuid",
                "find",
                "Chassis",
                &format!("name={chassis}"),
            ])
            .trim()
            .to_owned();
        sb.sbctl(&[
            "create",
            "Port_Binding",
            &format!("logical_port={lsp}"),
            &format!("datapath={dp}"),
            "tunnel_key=1",
            &format!("chassis={c}"),
        ]);
    }
    let cfg_h1 = config(dir.path(), "h1", &server.ca, &nb, &sb);
    let cfg_h0 = config(dir.path(), "h0", &server.ca, &nb, &sb);
    let mut cmd = ns1.command(support::bin());
    cmd.args(["agent", "--interval", "0", "--config"])
        .arg(&cfg_h1)
        .env("HOME", "/nonexistent-spx-test-home");
    let agent = Logged::spawn(cmd);
    agent.wait_for("connected to NATS at", 1, Duration::from_secs(15), "agent");
    assert!(
        agent.text().contains("spinifex.doctor.h1.path"),
        "{}",
        agent.text()
    );

    let ca = server.ca.clone();
    let answers = ns
        .in_thread(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    let c = client(&ca).await;
                    let mut out = Vec::new();
                    for body in [
                        br#"{"id":"p1","size":1500,"timeout_ms":3000,"command":"touch /tmp/spx-path-pwned"}"#.to_vec(),
                        br#"{"id":"p2","size":1500,"timeout_ms":3000,"file":"/etc/shadow"}"#.to_vec(),
                        br#"{"id":"p3","size":1500,"timeout_ms":3000,"instance":"/etc/passwd"}"#.to_vec(),
                        br#"{"id":"p4","size":1500,"timeout_ms":3000,"peer":"example.com"}"#.to_vec(),
                        br#"{"id":"p5","size":70000,"timeout_ms":3000}"#.to_vec(),
                        br#"{"id":"p6","size":1500,"timeout_ms":86400000}"#.to_vec(),
                        b"\x1b[2J\x00 not json".to_vec(),
                        br#"{"id":"p7","eni":"eni-0999","size":1500,"timeout_ms":5000}"#.to_vec(),
                        br#"{"id":"p8","peer":"198.18.0.9","size":1500,"timeout_ms":5000}"#.to_vec(),
                        format!(r#"{{"id":"p9","size":1500,"size_kind":"underlay","peer":"{H0}","timeout_ms":8000}}"#).into_bytes(),
                    ] {
                        out.push(ask(&c, body).await);
                    }
                    out
                })
        })
        .join()
        .unwrap();
    let kinds: Vec<String> = answers
        .iter()
        .map(|(kind, node, body)| {
            assert_eq!(node, "h1", "{body:#}");
            if kind == "error" {
                assert_eq!(body["error"]["node"], "h1");
                assert!(!body["error"]["message"].as_str().unwrap().contains('\n'));
                body["error"]["kind"].as_str().unwrap().to_owned()
            } else {
                kind.clone()
            }
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "unknown-field",
            "unknown-field",
            "bad-value",
            "bad-value",
            "bad-value",
            "timeout-too-long",
            "not-json",
            "not-here",
            "peer-not-listed",
            "path"
        ]
    );
    assert!(
        answers[7].2["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tap0999"),
        "{:#}",
        answers[7].2
    );
    assert!(answers[8].2["error"]["message"]
        .as_str()
        .unwrap()
        .contains("198.18.0.9 is not in this node's peer list"));
    assert!(!Path::new("/tmp/spx-path-pwned").exists());
    // The node's side: h1's own, with its probe toward h0's endpoint.
    let side = &answers[9].2;
    assert_eq!(side["node"], "h1", "{side:#}");
    let toward = &side["toward"];
    assert_eq!(toward["peer"], H0);
    assert_eq!(toward["outer"], 1500);
    assert_eq!(toward["probe"]["Ok"]["largest_answered"], 1500, "{side:#}");

    // The coordinator on h0: h1's side over NATS.
    let mut cmd = ns.spx();
    cmd.env_remove("SPINIFEX_CONFIG_PATH")
        .args([
            "path",
            "h1",
            "h0",
            "--timeout",
            "15s",
            "--ovs-db",
            "unix:/nonexistent/ovs.sock",
            "--config",
        ])
        .arg(&cfg_h0);
    let (_, doc) = run_path_json(&mut cmd);
    let from = &doc["ends"][0];
    assert_eq!(from["via"], "nats", "{doc:#}");
    assert_eq!(from["facts"]["Ok"]["node"], "h1", "{doc:#}");
    assert_eq!(doc["ends"][1]["via"], "in-process");
    let fwd = &doc["directions"][0];
    let path_hop = fwd["hops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["kind"] == "underlay-path")
        .unwrap();
    assert_eq!(path_hop["limit"]["kind"], "at-least", "{doc:#}");
    // An ENI bound to h1 that h1 does not run (no QEMU has its tap): its
    // agent says so, typed, and the verdict names it, concluding nothing.
    let mut cmd = ns.spx();
    cmd.env_remove("SPINIFEX_CONFIG_PATH")
        .args([
            "path",
            ENI,
            ENI_H0,
            "--timeout",
            "15s",
            "--ovs-db",
            "unix:/nonexistent/ovs.sock",
            "--config",
        ])
        .arg(&cfg_h0);
    let (code, doc) = run_path_json(&mut cmd);
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(doc["code"], "path/unresolved");
    assert_eq!(doc["ends"][0]["via"], "nats", "{doc:#}");
    let why = doc["ends"][0]["facts"]["Err"].as_str().unwrap();
    assert!(
        why.starts_with(&format!("not-here: {ENI} is not on this node")),
        "{why}"
    );
    drop(agent);
}
