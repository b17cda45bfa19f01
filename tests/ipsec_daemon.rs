//! ipsec.daemon against real daemons with real pid files: Debian's
//! ovs-monitor-ipsec (openvswitch-ipsec) connected to a real test
//! ovsdb-server, and strongSwan's starter running a real charon
//! (strongswan-starter, strongswan-charon), each in a mount namespace of
//! its own where a temp dir stands for /run, and all of a node's processes
//! in the node's network namespace (their IKE sockets and policies stay
//! off the machine). The doctor runs as the node: in its network namespace,
//! in a mount namespace with the same temp dir over /run. It reads
//! /var/run/charon.pid and the others at their real paths, and /proc is the
//! machine's (tests/support/private.rs says why this is the way), so it
//! sees every node's daemons and must count only its own. `ps` and `ip
//! netns identify` are the independent oracles of what runs where.
//!
//! ovs-monitor-ipsec runs with `--root-prefix` (its ipsec.conf and
//! ipsec.secrets go to a temp dir) and `--no-restart-ike-daemon` (it
//! restarts no strongSwan); the Open_vSwitch row names no certificate, so
//! it never runs the `ipsec` command either. Everything else is as
//! `ovs-ctl start-ovs-ipsec` runs it: the script through its `#!` line,
//! `--pidfile`, the database socket.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use spx_test_harness::root_test;

use crate::support::ovsdb_server::OvsdbServer;
use crate::support::private::isolate_in;
use crate::support::{self, check, run_json, spx, write_config, Netns};

const MONITOR: &str = "/usr/share/openvswitch/scripts/ovs-monitor-ipsec";
const STARTER: &str = "/usr/lib/ipsec/starter";
const CHARON: &str = "/usr/lib/ipsec/charon";

/// Only one test at a time runs charon: a test that expects none running
/// must not see another's.
pub static CHARON_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A child killed (and reaped) on Drop.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A node: its network namespace, a private /run and the daemons started
/// in them.
struct Node {
    run: tempfile::TempDir,
    prefix: tempfile::TempDir,
    dir: tempfile::TempDir,
    ovs: OvsdbServer,
    daemons: Vec<Daemon>,
    /// Last: removed once its processes are gone.
    net: Netns,
}

impl Drop for Node {
    /// The daemons this node's pid files name go too (charon outlives a
    /// killed starter), each only if it is what its pid file says.
    fn drop(&mut self) {
        for (file, comm) in [
            ("starter.charon.pid", "starter"),
            ("charon.pid", "charon"),
            ("openvswitch/ovs-monitor-ipsec.pid", "ovs-monitor-ips"),
        ] {
            if let Some(pid) = self.pid_in(file) {
                let named = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim() == comm);
                if named {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
    }
}

fn wait_for(what: &str, until: Duration, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + until;
    while !done() {
        assert!(Instant::now() < end, "{what} not within {until:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Node {
    fn new() -> Node {
        let run = tempfile::Builder::new()
            .prefix("spx-run-")
            .tempdir()
            .unwrap();
        std::fs::create_dir(run.path().join("openvswitch")).unwrap();
        let prefix = tempfile::Builder::new()
            .prefix("spx-root-")
            .tempdir()
            .unwrap();
        std::fs::create_dir(prefix.path().join("etc")).unwrap();
        Node {
            net: Netns::new(),
            run,
            prefix,
            dir: tempfile::tempdir().unwrap(),
            ovs: OvsdbServer::ovs(),
            daemons: Vec::new(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.run.path().join(name)
    }

    fn pid_in(&self, name: &str) -> Option<i32> {
        std::fs::read_to_string(self.path(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Start `cmd` as one of this node's processes.
    fn spawn(&mut self, cmd: &mut Command) -> u32 {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        isolate_in(cmd, &[(self.run.path(), "/run")], &self.net);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        let pid = child.id();
        self.daemons.push(Daemon(child));
        pid
    }

    /// ovs-monitor-ipsec as ovs-ctl runs it; its pid once its pid file
    /// names it.
    fn start_monitor(&mut self) -> i32 {
        let mut cmd = Command::new(MONITOR);
        cmd.arg("--pidfile")
            .arg("--root-prefix")
            .arg(self.prefix.path())
            .args(["--no-restart-ike-daemon", "--ike-daemon=strongswan"])
            .arg(self.ovs.unix());
        let pid = self.spawn(&mut cmd) as i32;
        wait_for(
            "ovs-monitor-ipsec's pid file",
            Duration::from_secs(20),
            || self.pid_in("openvswitch/ovs-monitor-ipsec.pid") == Some(pid),
        );
        pid
    }

    /// A node running ovs-monitor-ipsec and strongSwan: (the node,
    /// ovs-monitor-ipsec, the starter, charon).
    fn running() -> (Node, i32, i32, i32) {
        let mut node = Node::new();
        let monitor = node.start_monitor();
        let (starter, charon) = node.start_strongswan();
        (node, monitor, starter, charon)
    }

    /// strongSwan's starter, which runs charon: (starter, charon).
    fn start_strongswan(&mut self) -> (i32, i32) {
        let mut cmd = Command::new(STARTER);
        cmd.args(["--daemon", "charon", "--nofork"]);
        let starter = self.spawn(&mut cmd) as i32;
        wait_for("charon's pid file", Duration::from_secs(20), || {
            self.pid_in("charon.pid").is_some() && self.pid_in("starter.charon.pid").is_some()
        });
        (starter, self.pid_in("charon.pid").unwrap())
    }

    fn config(&self, ipsec: bool) -> PathBuf {
        write_config(
            self.dir.path(),
            &format!(
                "node = \"spx1\"\n[network]\nipsec_enabled = {ipsec}\n[nodes.spx1]\nhost = \"198.18.0.1\"\n[nodes.spx2]\nhost = \"198.18.0.2\"\n"
            ),
        )
    }

    /// The doctor's ipsec.daemon as this node: in its network namespace,
    /// in a mount namespace with its /run (and `binds` over that).
    fn run(&self, ipsec: bool, extra: &[&str], binds: &[(&Path, &str)]) -> (i32, Value) {
        let mut cmd = spx();
        cmd.args(["--check", "ipsec.daemon", "--config"])
            .arg(self.config(ipsec))
            .args(extra);
        let mut all = vec![(self.run.path(), "/run")];
        all.extend_from_slice(binds);
        isolate_in(&mut cmd, &all, &self.net);
        run_json(&mut cmd)
    }
}

/// The process is gone, or a zombie (it runs nothing).
fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// Kill `pid` and wait until it runs nothing.
fn kill(pid: i32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for("the kill", Duration::from_secs(10), || gone(pid));
}

/// `ip netns identify PID`: the oracle of which test namespace a pid is in.
fn netns_of(pid: i32) -> String {
    support::netns::sh(&["ip", "netns", "identify", &pid.to_string()])
        .trim()
        .to_owned()
}

/// `ps -o comm= -p PID`: the oracle of what a pid runs.
fn ps_comm(pid: i32) -> String {
    let out = Command::new("ps")
        .args(["-o", "comm=", "-p", &pid.to_string()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A daemon's row in a report's ipsec.daemon evidence.
pub fn daemon<'a>(doc: &'a Value, name: &str) -> &'a Value {
    check(doc, "ipsec.daemon")["evidence"]["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["daemon"] == name)
        .unwrap()
}

fn codes(doc: &Value) -> Vec<String> {
    check(doc, "ipsec.daemon")["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

fn available(test: &str) -> bool {
    support::tool_or_skip(
        test,
        "openvswitch-ipsec, strongswan-starter and strongswan-charon",
        [MONITOR, STARTER, CHARON]
            .iter()
            .all(|p| Path::new(p).exists()),
    )
}

#[root_test]
fn real_daemons_pass_and_each_one_killed_is_named_with_its_pid_file() {
    if !available("real_daemons_pass_and_each_one_killed_is_named_with_its_pid_file") {
        return;
    }
    let _only = CHARON_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let (node, monitor, starter, charon) = Node::running();
    // The oracle: ps names what runs. ovs-monitor-ipsec, a python3
    // script run through its #! line, is `ovs-monitor-ips`.
    assert_eq!(ps_comm(monitor), "ovs-monitor-ips");
    assert_eq!(ps_comm(starter), "starter");
    assert_eq!(ps_comm(charon), "charon");
    for pid in [monitor, starter, charon] {
        assert_eq!(netns_of(pid), node.net.name);
    }

    let (code, doc) = node.run(true, &[], &[]);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(
        (code, c["code"].as_str()),
        (0, Some("ipsec.daemon/ok")),
        "{c:#}"
    );
    assert_eq!(
        daemon(&doc, "ovs-monitor-ipsec")["running_pids"],
        serde_json::json!([monitor])
    );
    assert_eq!(
        daemon(&doc, "ovs-monitor-ipsec")["pid_file_state"],
        "running"
    );
    assert_eq!(
        daemon(&doc, "starter")["running_pids"],
        serde_json::json!([starter])
    );
    assert_eq!(
        daemon(&doc, "charon")["running_pids"],
        serde_json::json!([charon])
    );
    // The namespace it judged in is the node's (`readlink` in it).
    assert_eq!(
        c["evidence"]["net_ns"].as_str().unwrap(),
        node.net.exec(&["readlink", "/proc/self/ns/net"]).trim()
    );

    // IPsec not wanted: charon must not run.
    let (code, doc) = node.run(false, &[], &[]);
    assert_eq!(code, 1);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(c["code"], "ipsec.daemon/ike-daemon-running", "{c:#}");
    assert!(codes(&doc).contains(&"ipsec.daemon/monitor-running".to_owned()));
    let s = c["summary"].as_str().unwrap();
    assert!(
        s.contains(&format!("/usr/lib/ipsec/charon (pid {charon})")),
        "{s}"
    );

    // The starter killed without cleaning up: its pid file names a pid
    // that is gone, while charon runs on.
    kill(starter);
    let (code, doc) = node.run(true, &[], &[]);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(
        (code, c["code"].as_str()),
        (0, Some("ipsec.daemon/stale-pid-file")),
        "{c:#}"
    );
    assert!(
        c["summary"].as_str().unwrap().contains(&format!(
            "/var/run/starter.charon.pid names pid {starter}, which is gone"
        )),
        "{c:#}"
    );

    // charon killed: IPsec is wanted and no IKE daemon runs.
    kill(charon);
    let (code, doc) = node.run(true, &[], &[]);
    assert_eq!(code, 1);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(c["code"], "ipsec.daemon/not-running", "{c:#}");
    let s = c["summary"].as_str().unwrap();
    assert!(s.contains("charon is not running"), "{s}");
    assert!(
        s.contains(&format!(
            "/var/run/charon.pid names pid {charon}, which is gone"
        )),
        "{s}"
    );
    let fixes = support::strings(&c["remediation"]);
    assert!(
        fixes
            .iter()
            .any(|f| f.starts_with("systemctl restart openvswitch-ipsec")),
        "{fixes:#?}"
    );
    assert!(fixes.iter().any(|f| f == "rm /var/run/charon.pid   # it names no charon (its unit would read or signal a wrong pid)"), "{fixes:#?}");
}

/// Issue 36: charon running without ovs-monitor-ipsec still negotiates
/// the tunnels it was last configured for; only what the monitor does is
/// missing. The check names that daemon alone and what follows, never
/// "nothing negotiates it".
#[root_test]
fn charon_without_ovs_monitor_ipsec_is_named_alone_with_what_follows() {
    if !available("charon_without_ovs_monitor_ipsec_is_named_alone_with_what_follows") {
        return;
    }
    let _only = CHARON_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let mut node = Node::new();
    let (starter, charon) = node.start_strongswan();
    assert_eq!(ps_comm(charon), "charon");
    assert_eq!(netns_of(charon), node.net.name);
    let (code, doc) = node.run(true, &[], &[]);
    assert_eq!(code, 1, "{doc:#}");
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(c["code"], "ipsec.daemon/not-running", "{c:#}");
    assert_eq!(
        c["summary"],
        format!(
            "IPsec is wanted and charon runs (pid {charon}), but ovs-monitor-ipsec does not: charon still negotiates the tunnels it was last configured for, and no tunnel gets configured for a chassis added since: ovs-monitor-ipsec is not running (no /var/run/openvswitch/ovs-monitor-ipsec.pid)"
        )
    );
    let subjects: Vec<&str> = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["ovs-monitor-ipsec"], "{c:#}");
    // The other way: the monitor without charon (its starter first, which
    // would start it again); nothing negotiates IKE.
    kill(starter);
    kill(charon);
    node.start_monitor();
    let (_, doc) = node.run(true, &[], &[]);
    let s = check(&doc, "ipsec.daemon")["summary"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        s.starts_with(
            "IPsec is wanted and ovs-monitor-ipsec runs, but no charon negotiates IKE here"
        ),
        "{s}"
    );
    assert!(!s.contains("ovs-monitor-ipsec is not running"), "{s}");
}

#[root_test]
fn a_pid_file_naming_another_program_is_named() {
    let _only = CHARON_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let mut node = Node::new();
    // A python3 process that is not ovs-monitor-ipsec, and a sleep, hold
    // the pids the daemons' pid files name (pids reused after a crash).
    let python =
        node.spawn(Command::new("/usr/bin/python3").args(["-c", "import time; time.sleep(60)"]));
    let sleep = node.spawn(Command::new("sleep").arg("60"));
    std::fs::write(
        node.path("openvswitch/ovs-monitor-ipsec.pid"),
        format!("{python}\n"),
    )
    .unwrap();
    std::fs::write(node.path("charon.pid"), format!("{sleep}\n")).unwrap();
    wait_for("the stand-ins to exec", Duration::from_secs(5), || {
        ps_comm(python as i32) == "python3" && ps_comm(sleep as i32) == "sleep"
    });
    let (code, doc) = node.run(true, &[], &[]);
    assert_eq!(code, 1);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(c["code"], "ipsec.daemon/not-running", "{c:#}");
    let s = c["summary"].as_str().unwrap();
    assert!(s.starts_with("IPsec is wanted, but nothing negotiates it here (geneve goes out in clear or is dropped): ovs-monitor-ipsec is not running; charon is not running; "), "{s}");
    assert!(s.contains(&format!("/var/run/openvswitch/ovs-monitor-ipsec.pid names pid {python}, which is /usr/bin/python3, not ovs-monitor-ipsec")), "{s}");
    assert!(
        s.contains(&format!(
            "/var/run/charon.pid names pid {sleep}, which is sleep, not charon"
        )),
        "{s}"
    );
    assert_eq!(daemon(&doc, "charon")["pid_file_state"], "other-program");
    assert!(codes(&doc).contains(&"ipsec.daemon/pid-file-other-program".to_owned()));
    // Not wanted, nothing runs: the reused pids are still named, as warnings.
    let (code, doc) = node.run(false, &[], &[]);
    assert_eq!(code, 0);
    assert_eq!(
        check(&doc, "ipsec.daemon")["code"],
        "ipsec.daemon/pid-file-other-program"
    );
}

#[root_test]
fn another_nodes_daemons_in_another_network_namespace_are_not_this_nodes() {
    if !available("another_nodes_daemons_in_another_network_namespace_are_not_this_nodes") {
        return;
    }
    let _only = CHARON_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    // Two nodes on one machine (the kernel lab's namespace nodes, or
    // containers): one /proc, a network namespace each. n1 runs IPsec's
    // daemons; n2 runs none.
    let (n1, monitor, starter, charon) = Node::running();
    let n2 = Node::new();
    // The oracle: they run, in n1's namespace, not n2's.
    for pid in [monitor, starter, charon] {
        assert_eq!(netns_of(pid), n1.net.name, "pid {pid}");
    }
    assert_eq!(ps_comm(charon), "charon");

    // n2's doctor: nothing runs here, and n1's daemons are named as
    // another node's.
    let (code, doc) = n2.run(true, &[], &[]);
    assert_eq!(code, 1);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(c["code"], "ipsec.daemon/not-running", "{c:#}");
    let s = c["summary"].as_str().unwrap();
    assert!(
        s.contains(&format!(
            "ovs-monitor-ipsec is not running (no /var/run/openvswitch/ovs-monitor-ipsec.pid; pid {monitor} runs in another network namespace, another node's)"
        )),
        "{s}"
    );
    assert!(
        s.contains(&format!(
            "charon is not running (no /var/run/charon.pid; pid {charon} runs in another network namespace, another node's)"
        )),
        "{s}"
    );
    for (name, pid) in [("ovs-monitor-ipsec", monitor), ("charon", charon)] {
        assert_eq!(daemon(&doc, name)["running_pids"], serde_json::json!([]));
        assert_eq!(
            daemon(&doc, name)["other_net_ns_pids"],
            serde_json::json!([pid]),
            "{name}"
        );
    }
    // IPsec off on n2: n1's charon is not n2's to stop.
    let (code, doc) = n2.run(false, &[], &[]);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(
        (code, c["code"].as_str()),
        (0, Some("ipsec.daemon/ok")),
        "{c:#}"
    );

    // n2's doctor reading n1's pid files (a /run shared between nodes):
    // they name live daemons, but another node's. Not this node's daemons
    // either, and not stale: each is what its file says.
    let (code, doc) = n2.run(true, &[], &[(n1.run.path(), "/run")]);
    assert_eq!(code, 1);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(c["code"], "ipsec.daemon/not-running", "{c:#}");
    for (name, pid) in [
        ("ovs-monitor-ipsec", monitor),
        ("starter", starter),
        ("charon", charon),
    ] {
        let d = daemon(&doc, name);
        assert_eq!(d["pid_file_state"], "other-net-ns", "{name}: {d:#}");
        assert_eq!(d["pid_file_pid"], pid);
        assert_eq!(d["running_pids"], serde_json::json!([]), "{name}");
    }
    assert_eq!(
        codes(&doc),
        ["ipsec.daemon/not-running", "ipsec.daemon/not-running"]
    );
    // The same files read as n1: its own daemons, a pass.
    let (code, doc) = n1.run(true, &[], &[]);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(
        (code, c["code"].as_str()),
        (0, Some("ipsec.daemon/ok")),
        "{c:#}"
    );
    assert_eq!(
        daemon(&doc, "charon")["other_net_ns_pids"],
        serde_json::json!([])
    );
}

#[root_test]
fn before_enabling_ipsec_the_programs_must_be_installed() {
    if !available("before_enabling_ipsec_the_programs_must_be_installed") {
        return;
    }
    let _only = CHARON_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let node = Node::new();
    // (ipsec.cert runs too, as the preflight requires: it fails here,
    // with no credentials, which is not this test's matter.)
    let (_, doc) = node.run(false, &["--for", "enable-ipsec"], &[]);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(c["code"], "ipsec.daemon/ok", "{c:#}");
    assert_eq!(c["evidence"]["installed"]["charon"], CHARON);
    assert_eq!(c["evidence"]["installed"]["ipsec"], "/usr/sbin/ipsec");
    // strongSwan's programs hidden (an empty directory over
    // /usr/lib/ipsec, for the doctor alone): not installed.
    let empty = tempfile::tempdir().unwrap();
    let (code, doc) = node.run(
        false,
        &["--for", "enable-ipsec"],
        &[(empty.path(), "/usr/lib/ipsec")],
    );
    assert_eq!(code, 1);
    let c = check(&doc, "ipsec.daemon");
    assert_eq!(c["code"], "ipsec.daemon/not-installed", "{c:#}");
    let s = c["summary"].as_str().unwrap();
    assert!(s.starts_with("before enabling IPsec: "), "{s}");
    assert!(s.contains("charon is not installed (looked at /usr/lib/ipsec/charon, /usr/libexec/ipsec/charon, /usr/libexec/strongswan/charon)"), "{s}");
    assert!(!s.contains("ovs-monitor-ipsec is not installed"), "{s}");
    let fixes = support::strings(&c["remediation"]);
    assert!(fixes[0].starts_with("apt-get install --no-install-recommends openvswitch-ipsec strongswan-starter strongswan-charon"), "{fixes:#?}");
}
