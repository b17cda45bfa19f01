//! Network namespaces that tests create and always remove. Packets in tests
//! go only to loopback or to addresses inside these namespaces.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A network namespace named `spxt-<pid>-<n>`, deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn new() -> Netns {
        let name = format!(
            "spxt{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        sh(&["ip", "netns", "add", &name]);
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    /// Run `ip netns exec NAME argv…`, panicking with its stderr on failure.
    pub fn exec(&self, argv: &[&str]) -> String {
        let mut full = vec!["ip", "netns", "exec", &self.name];
        full.extend_from_slice(argv);
        sh(&full)
    }

    /// Like `exec` but returns success instead of panicking.
    pub fn try_exec(&self, argv: &[&str]) -> bool {
        Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(argv)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }

    /// `ip -n NAME args…`.
    pub fn ip(&self, args: &[&str]) -> String {
        let mut full = vec!["ip", "-n", &self.name];
        full.extend_from_slice(args);
        sh(&full)
    }

    pub fn sysctl(&self, key_value: &str) {
        self.exec(&["sysctl", "-qw", key_value]);
    }

    /// A command that runs inside this namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name, program]);
        cmd
    }

    /// The real `spx` binary inside this namespace, with the same clean
    /// environment as [`super::spx`].
    pub fn spx(&self) -> Command {
        let mut cmd = self.command(super::bin());
        cmd.env("HOME", "/nonexistent-spx-test-home");
        cmd
    }

    /// Connect this namespace to `other` with a veth pair, `here` in this
    /// namespace and `there` in the other, both up.
    pub fn veth(&self, here: &str, other: &Netns, there: &str) {
        self.ip(&[
            "link",
            "add",
            here,
            "type",
            "veth",
            "peer",
            "name",
            there,
            "netns",
            &other.name,
        ]);
        self.ip(&["link", "set", here, "up"]);
        other.ip(&["link", "set", there, "up"]);
    }

    /// Like [`Netns::veth`], with `queues` receive and transmit queues on
    /// each end.
    pub fn veth_queues(&self, here: &str, other: &Netns, there: &str, queues: u32) {
        let q = queues.to_string();
        self.ip(&[
            "link",
            "add",
            here,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            there,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "netns",
            &other.name,
        ]);
        self.ip(&["link", "set", here, "up"]);
        other.ip(&["link", "set", there, "up"]);
    }
}

impl Default for Netns {
    fn default() -> Self {
        Netns::new()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Processes started inside are the test's to stop; the namespace
        // goes away with its links once they are gone.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Run argv (no shell), panicking with its stderr when it fails.
pub fn sh(argv: &[&str]) -> String {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    assert!(
        out.status.success(),
        "{argv:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Netns {
    /// Run `f` on a new thread that has joined this namespace (setns on a
    /// thread moves only that thread), e.g. to open sockets inside it.
    pub fn in_thread<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let fd = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            nix::sched::setns(fd, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
            f()
        })
    }
}
