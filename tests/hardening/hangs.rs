//! Never hangs: every outside party misbehaving at once still ends within
//! `--timeout` + 500 ms, each reported as an error with its reason.

use super::*;
use spx_test_harness::root_test;

/// A TCP listener inside `ns` that accepts every connection and never
/// writes a byte, until dropped.
struct MuteServer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MuteServer {
    fn start(ns: &Netns) -> MuteServer {
        let listener: TcpListener = ns
            .in_thread(|| TcpListener::bind("127.0.0.1:0").expect("bind"))
            .join()
            .unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            while !flag.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((s, _)) => held.push(s),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
                // Read (and ignore) what clients send, never answer.
                for s in &mut held {
                    let _ = s.set_nonblocking(true);
                    let _ = s.read(&mut [0u8; 4096]);
                }
            }
        });
        MuteServer {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for MuteServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A 127.0.0.1 port inside `ns` where nothing listens.
fn dead_port(ns: &Netns) -> u16 {
    ns.in_thread(|| {
        TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .unwrap()
            .port()
    })
    .join()
    .unwrap()
}

#[root_test]
fn every_outside_party_misbehaving_at_once_ends_within_the_deadline() {
    let node = Netns::new();
    let peer = Netns::new();
    node.veth("eth1", &peer, "eth1p");
    node.ip(&["addr", "add", "198.18.20.1/24", "dev", "eth1"]);
    peer.ip(&["addr", "add", "198.18.20.2/24", "dev", "eth1p"]);
    // Black-holed: 198.18.20.2 is there (ARP answers) but drops every echo.
    peer.sysctl("net.ipv4.icmp_echo_ignore_all=1");
    peer.sysctl("net.ipv6.icmp.echo_ignore_all=1");
    // Dead: 198.18.20.3 is on the link's subnet and nobody owns it.

    let dir = tempfile::tempdir().unwrap();
    // NB: one raft member accepts and never answers, the other is a unix
    // socket whose listener never accepts.
    let mute = MuteServer::start(&node);
    let nb_unix = dir.path().join("nb-hung.sock");
    let _nb_unix = UnixListener::bind(&nb_unix).unwrap();
    // SB: dead (a refused port, a socket path with no listener).
    let sb_port = dead_port(&node);
    let sb_unix = dir.path().join("sb-dead.sock");
    // The local Open_vSwitch database: accepts (backlog), never answers.
    let ovs_unix = dir.path().join("ovs-hung.sock");
    let _ovs = UnixListener::bind(&ovs_unix).unwrap();
    // A guest whose QMP monitor is held by another client: QEMU serves one
    // at a time, so the doctor's connection gets no greeting.
    let guest = QemuGuest::start(&node, &["-name", "guest=spx-hang-test"]);
    let _held_monitor = guest.monitor();

    let cfg = support::write_config(
        dir.path(),
        &format!(
            "node = \"spx1\"\n[network]\nipsec_enabled = true\nunderlay_mtu = 1500\n\
             [nodes.spx1]\nhost = \"198.18.20.1\"\n\
             [nodes.spx1.vpcd]\n\
             ovn_nb_addr = \"tcp:127.0.0.1:{},unix:{}\"\n\
             ovn_sb_addr = \"tcp:127.0.0.1:{sb_port},unix:{}\"\n\
             [nodes.spx2]\nhost = \"198.18.20.2\"\n[nodes.spx3]\nhost = \"198.18.20.3\"\n",
            mute.port,
            nb_unix.display(),
            sb_unix.display()
        ),
    );
    let timeout = Duration::from_secs(3);
    let mut cmd = node.spx();
    cmd.args(["--config"])
        .arg(&cfg)
        .arg("--ovs-db")
        .arg(format!("unix:{}", ovs_unix.display()))
        .args(["--peer", "198.18.20.2", "--peer", "198.18.20.3"])
        .args([
            "--timeout",
            "3s",
            "--probe-timeout",
            "1s",
            "--sample",
            "500ms",
        ])
        .args(["--format", "json"])
        .stdin(Stdio::null());
    let (_bundles, bundle) = support::record(&mut cmd);
    let t0 = Instant::now();
    let out = cmd.output().expect("run spx");
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let doc: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}, after {took:?}): {stdout}{stderr}"));
    // The deadline on the doctor's own clock: from the checks' start to the
    // report, --timeout and the runner's wake-up.
    let ran = Duration::from_millis(doc["duration_ms"].as_u64().expect("duration_ms"));
    assert!(
        ran <= timeout + Duration::from_millis(500),
        "the checks ran {ran:?} with --timeout 3s; stderr: {stderr}"
    );
    // And as the operator's shell sees it. Every outside party here waits
    // forever, so a wait on one past the report would show as a hang; the
    // margin is for a debug build's start, its bundle and its exit on two
    // busy cores (it took 3.57 s once, at a load of 8).
    assert!(
        took <= timeout + Duration::from_millis(1500),
        "took {took:?} with --timeout 3s (the checks {ran:?}); stderr: {stderr}"
    );
    support::assert_valid(&doc);
    assert_complete(&doc);
    assert_eq!(
        out.status.code(),
        Some(doc["exit_code"].as_i64().unwrap() as i32)
    );
    // Its bundle replays to the same report: the time-outs, the members
    // that never answered and the peers cut short, as they were.
    support::assert_replays(&bundle, &doc, None);

    // Each misbehaving party is an error with its reason.
    let mut problems = Vec::new();
    let mut expect_error = |id: &str, reason: &[&str]| {
        let (s, text) = (status(&doc, id), summary(&doc, id));
        let lower = text.to_lowercase();
        if s != "error" || !reason.iter().any(|r| lower.contains(r)) {
            problems.push(format!(
                "{id}: {s}: {text} (wanted error naming {reason:?})"
            ));
        }
    };
    // The hung NB and Open_vSwitch members.
    expect_error(
        "ipsec.flags",
        &["did not answer", "no answer", "timed out", "timeout"],
    );
    // The black-holed and dead peers.
    expect_error("mtu.path", &["198.18.20.2"]);
    expect_error("mtu.path", &["198.18.20.3"]);
    // ipsec.xfrm counts the kernel's SAs; the peers it expects come from
    // OVN (the hung Open_vSwitch database, then the dead SB) or else the
    // config. Zero SAs with three configured nodes is a fail on its own;
    // what matters here is that it is not a pass and names the silence.
    let xfrm = support::check(&doc, "ipsec.xfrm");
    let xfrm_text = xfrm.to_string().to_lowercase();
    if xfrm["status"] == "pass"
        || !["no answer", "did not answer", "refused"]
            .iter()
            .any(|r| xfrm_text.contains(r))
    {
        problems.push(format!(
            "ipsec.xfrm: {}: {} (wanted a verdict naming the silent or dead database)",
            xfrm["status"], xfrm
        ));
    }
    // The monitor that never answers.
    let qemu = support::check(&doc, "qemu.tuning");
    let qemu_text = qemu.to_string().to_lowercase();
    if !(qemu["status"] == "error" && qemu_text.contains("no answer")) {
        problems.push(format!(
            "qemu.tuning: {}: {} (wanted error naming the silent QMP monitor)",
            qemu["status"], qemu["summary"]
        ));
    }
    assert!(
        problems.is_empty(),
        "{}\n\nreport ({took:?}): {doc:#}",
        problems.join("\n")
    );
    drop(guest);
}
