//! Real QEMU guests for tests: Debian's `qemu-system-x86_64`, paused before
//! the first instruction (`-S`), TCG (no KVM needed), no default devices,
//! null-co disks (no image files), taps in a namespace the test created,
//! and a QMP socket in a temp dir. Killed and reaped on Drop.
//!
//! QEMU runs under `ip netns exec`, which execs it in place: the child's pid
//! is QEMU's pid, the one the check reports.
//!
//! [`Qmp`] is a deliberately separate, minimal QMP client: the test's own
//! oracle, used to wait for readiness and to hot-attach volumes.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Netns;

pub const QEMU: &str = "/usr/bin/qemu-system-x86_64";

/// Every test guest starts with these: paused before its first
/// instruction, TCG, no default devices, no display, 64 MiB.
pub const PAUSED: [&str; 8] = [
    "-S",
    "-accel",
    "tcg",
    "-nodefaults",
    "-display",
    "none",
    "-m",
    "64",
];

pub struct QemuGuest {
    child: Child,
    pub pid: u32,
    pub qmp: PathBuf,
    dir: tempfile::TempDir,
}

/// True when this machine can give a guest vhost-net.
pub fn vhost_net_available() -> bool {
    Path::new("/dev/vhost-net").exists()
}

impl QemuGuest {
    /// Start `qemu-system-x86_64 -S -accel tcg -nodefaults -display none
    /// -m 64 -qmp unix:DIR/qmp.sock,server=on,wait=off ARGS…` inside `ns`
    /// and wait until its monitor answers (all devices realized).
    pub fn start(ns: &Netns, args: &[&str]) -> QemuGuest {
        assert!(
            Path::new(QEMU).exists(),
            "{QEMU} missing: install qemu-system-x86 (--no-install-recommends)"
        );
        let dir = tempfile::Builder::new()
            .prefix("spx-qemu-")
            .tempdir()
            .expect("tempdir");
        let qmp = dir.path().join("qmp.sock");
        let log = std::fs::File::create(dir.path().join("qemu.log")).expect("log file");
        let mut cmd = ns.command(QEMU);
        cmd.args(PAUSED)
            .arg("-qmp")
            .arg(format!("unix:{},server=on,wait=off", qmp.display()))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let child = cmd.spawn().expect("spawn qemu");
        let mut guest = QemuGuest {
            pid: child.id(),
            child,
            qmp,
            dir,
        };
        guest.wait_ready();
        guest
    }

    fn wait_ready(&mut self) {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!(
                    "qemu exited ({status}) before its monitor answered: {}",
                    self.log()
                );
            }
            if self.qmp.exists() {
                if let Ok(mut q) = Qmp::connect(&self.qmp) {
                    let status = q.execute("query-status", json!({}));
                    assert_eq!(status["status"], "prelaunch", "{status}");
                    return;
                }
            }
            assert!(
                Instant::now() < until,
                "qemu not ready in 30s: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("qemu.log")).unwrap_or_default()
    }

    /// A fresh QMP session (QEMU serves one client at a time: drop it
    /// before running the check, unless the test wants the monitor busy).
    pub fn monitor(&self) -> Qmp {
        Qmp::connect(&self.qmp).expect("connect qmp")
    }
}

impl Drop for QemuGuest {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    /// Connect, read the greeting, negotiate capabilities.
    pub fn connect(path: &Path) -> std::io::Result<Qmp> {
        let stream = UnixStream::connect(path)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut q = Qmp {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        };
        let greeting = q.read()?;
        assert!(greeting.get("QMP").is_some(), "{greeting}");
        q.execute("qmp_capabilities", json!({}));
        Ok(q)
    }

    fn read(&mut self) -> std::io::Result<Value> {
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let v: Value = serde_json::from_str(&line).expect("QMP JSON");
            if v.get("event").is_none() {
                return Ok(v);
            }
        }
    }

    /// Run a command; panics on a QMP error.
    pub fn execute(&mut self, command: &str, arguments: Value) -> Value {
        let msg = json!({ "execute": command, "arguments": arguments });
        writeln!(self.writer, "{msg}").expect("write qmp");
        let reply = self.read().expect("qmp reply");
        assert!(reply.get("error").is_none(), "{command}: {reply}");
        reply["return"].clone()
    }
}
