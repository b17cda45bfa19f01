//! The checks this machine's kernel cannot exercise, proven on a real one:
//! Debian's stock kernel booted under QEMU by `support::vm` (one boot per
//! test group, several assertions per boot). Inside, namespaces stand for
//! nodes, and every packet stays inside the guest.

use std::io::Read;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::support::vm::{self, Vm};
use spx_test_harness::root_test;

mod cluster;
mod ipsec;
mod neigh;
mod nic;
mod partial_enable;
mod path;
mod path_bench;
mod qemu;
mod strongswan;
mod tcp;
mod udp;

/// The harness itself: what a guest command prints and returns comes back
/// unchanged, a command past its bound fails the test, and the QEMU behind
/// a panicking test is gone once the panic has unwound.
#[root_test]
fn the_lab_returns_output_and_never_leaves_qemu_behind() {
    let Some(image) = vm::lab_or_skip("the_lab_returns_output_and_never_leaves_qemu_behind") else {
        return;
    };
    let vm = Vm::boot(image, vm::VmOptions::default());
    let out = vm.sh("echo out; echo err >&2; uname -r; exit 7");
    assert_eq!(out.code, 7);
    assert_eq!(out.stdout, format!("out\n{}\n", image.kernel_release));
    assert_eq!(out.stderr, "err\n");
    // The guest's root is the host's, under an overlay: what it writes
    // stays in the guest.
    let marker = format!("/tmp/spx-vmlab-overlay-{}", std::process::id());
    vm.ok(&format!("touch {marker} && test -e {marker}"));
    assert!(!std::path::Path::new(&marker).exists());

    let pid = vm.pid();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let vm = vm;
        vm.sh_within("sleep 30", Duration::from_secs(2))
    }));
    let message = panicked.expect_err("a command past its bound fails the test");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("did not finish in 2s"), "{message}");
    // Killed and reaped while the panic unwound: the pid is free.
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "QEMU {pid} outlived its test"
    );
}

/// Traffic for the lab, run inside the guest by [`crate::support::vm::helper`]
/// (this very test binary, re-executed with `SPX_VMLAB_HELPER` set). Its one
/// result line starts with `SPX-VMLAB ` and is JSON.
#[test]
#[ignore = "runs inside the kernel lab guest, started by the kernel_lab tests"]
#[allow(clippy::disallowed_macros)] // the result line is the helper's output
fn guest_helper() {
    let Ok(spec) = std::env::var("SPX_VMLAB_HELPER") else {
        println!("guest_helper: only the kernel lab tests run this (SPX_VMLAB_HELPER unset)");
        return;
    };
    let words: Vec<&str> = spec.split_whitespace().collect();
    let result = match words.as_slice() {
        ["udp-bursts", burst, dir] => udp_bursts(burst.parse().unwrap(), dir),
        ["tcp-serve", bind, dir] => tcp_serve(bind, dir),
        ["tcp-send", to, dir] => tcp_send(to, dir),
        ["qmp-prelaunch", socket] => qmp_prelaunch(socket),
        ["ovn-lab-daemon", dir] => crate::support::ovn_lab_daemon::serve(dir),
        _ => panic!("unknown helper {spec:?}"),
    };
    println!("SPX-VMLAB {result}");
}

/// Helpers that make traffic until the test is done with it: they write
/// `DIR/started` once traffic flows and stop when `DIR/stop` appears (or
/// after a minute, so that nothing outlives a failed test).
struct Until {
    dir: std::path::PathBuf,
    end: Instant,
    started: bool,
}

impl Until {
    fn new(dir: &str) -> Until {
        Until {
            dir: dir.into(),
            end: Instant::now() + Duration::from_secs(60),
            started: false,
        }
    }

    /// Call after each round of traffic: false once the test says stop.
    fn more(&mut self) -> bool {
        if !self.started {
            std::fs::write(self.dir.join("started"), "started\n").unwrap();
            self.started = true;
        }
        Instant::now() < self.end && !self.dir.join("stop").exists()
    }
}

/// Start a helper in the background in the guest (inside `netns` when
/// given), its output going to `DIR/result`; returns once it says it is
/// listening or its traffic flows (`DIR/started`).
pub fn start_helper(vm: &Vm, netns: Option<&str>, args: &[&str], dir: &str) {
    vm.ok(&format!(
        "mkdir -p {dir} && rm -f {dir}/started {dir}/stop {dir}/result && ({} >{dir}/result 2>&1 &)",
        vm::helper(netns, args)
    ));
    assert!(
        vm.wait_until(&format!("[ -e {dir}/started ]"), Duration::from_secs(60)),
        "helper {args:?} never started: {}",
        vm.sh(&format!("cat {dir}/result")).stdout
    );
}

/// Tell the helper writing to `dir` to stop; its result once it has.
pub fn stop_helper(vm: &Vm, dir: &str) -> serde_json::Value {
    vm.ok(&format!("touch {dir}/stop"));
    let finished = vm.wait_until(
        &format!("grep -q '^test result' {dir}/result"),
        Duration::from_secs(60),
    );
    let out = vm.sh(&format!("cat {dir}/result")).stdout;
    assert!(finished, "helper in {dir} did not finish: {out}");
    helper_result(&out)
}

/// The result line of a helper's output.
pub fn helper_result(stdout: &str) -> serde_json::Value {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("SPX-VMLAB "))
        .unwrap_or_else(|| panic!("no helper result in {stdout:?}"));
    serde_json::from_str(line).unwrap()
}

/// The seed's QUIC receiver under load: a socket that asks for quic-go's
/// 7 MiB receive buffer, then bursts of `burst` 1200-byte datagrams that
/// arrive while it is busy elsewhere, each drained before the next. What
/// the kernel cannot queue it drops and counts in `RcvbufErrors`.
fn udp_bursts(burst: u64, dir: &str) -> serde_json::Value {
    use socket2::{Domain, Socket, Type};
    let rx = Socket::new(Domain::IPV4, Type::DGRAM, None).unwrap();
    rx.set_recv_buffer_size(7 * 1024 * 1024).unwrap();
    let granted = rx.recv_buffer_size().unwrap();
    rx.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    let rx: UdpSocket = rx.into();
    rx.set_nonblocking(true).unwrap();
    let to = rx.local_addr().unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let payload = [0x5a_u8; 1200];
    let mut buf = [0_u8; 2048];
    let (mut sent, mut received, mut bursts) = (0_u64, 0_u64, 0_u64);
    let mut until = Until::new(dir);
    loop {
        for _ in 0..burst {
            if tx.send_to(&payload, to).is_ok() {
                sent += 1;
            }
        }
        while rx.recv(&mut buf).is_ok() {
            received += 1;
        }
        bursts += 1;
        if !until.more() {
            break;
        }
    }
    serde_json::json!({"rcvbuf": granted, "sent": sent, "received": received, "bursts": bursts})
}

/// Wait until the QEMU behind `socket` answers QMP with every device
/// realized (`query-status` says prelaunch: started with -S).
fn qmp_prelaunch(socket: &str) -> serde_json::Value {
    let end = Instant::now() + Duration::from_secs(90);
    loop {
        if let Ok(mut q) = crate::support::qemu::Qmp::connect(std::path::Path::new(socket)) {
            return q.execute("query-status", serde_json::json!({}));
        }
        assert!(Instant::now() < end, "no QMP at {socket} in 90s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tcp_serve(bind: &str, dir: &str) -> serde_json::Value {
    let listener = TcpListener::bind(bind).unwrap();
    Until::new(dir).more();
    let (mut conn, _) = listener.accept().unwrap();
    let mut buf = vec![0_u8; 1 << 16];
    let mut total = 0_u64;
    loop {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n as u64,
            Err(e) => panic!("read: {e}"),
        }
    }
    serde_json::json!({"received": total})
}

fn tcp_send(to: &str, dir: &str) -> serde_json::Value {
    use std::io::Write;
    let mut conn = TcpStream::connect(to).unwrap();
    let chunk = vec![0xa5_u8; 1 << 16];
    let started = Instant::now();
    let mut total = 0_u64;
    let mut until = Until::new(dir);
    loop {
        conn.write_all(&chunk).unwrap();
        total += chunk.len() as u64;
        if !until.more() {
            break;
        }
    }
    conn.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    let _ = conn.read_to_end(&mut rest);
    serde_json::json!({"sent": total, "seconds": started.elapsed().as_secs_f64()})
}
