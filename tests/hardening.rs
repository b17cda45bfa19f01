//! Issue 8: the doctor runs as root every minute on every node, so it must
//! be the most boring program on the host. Each "must hold" property is a
//! test of the real binary here:
//!
//! - never writes: a full run (and both preflight profiles) inside a lab
//!   node changes nothing: links, MTUs, features, channels, rings, sysctls,
//!   xfrm, OVSDB contents, the config file;
//! - no shell, no injection: hostile config values and flags are refused
//!   with exit 2 naming the key, a canary file never appears, and a full
//!   run under strace executes nothing but spx (and journalctl, by argv);
//! - unprivileged: as uid 65534 a full report, no panic, a privilege
//!   problem is a `skip` naming what is needed, never an `error`;
//! - never hangs: every outside party misbehaving at once still ends
//!   within `--timeout` + 500 ms, each reported as `error` with its reason;
//! - clear refusals: `docs/bad-input.md` is generated from the table below
//!   and every row is run.
//!
//! (A panicking check becoming an `error` while the others still report is
//! proven in `src/runner.rs`'s unit tests.)

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::ovsdb_server::OvsdbServer;
use crate::support::qemu::QemuGuest;
use crate::support::{self, run, run_json, spx, Netns};

const NOBODY: &str = "65534";

/// Every node check (the cluster checks belong to `--cluster`).
fn all_ids() -> Vec<&'static str> {
    spx_checks::CHECKS
        .iter()
        .filter(|c| c.scope() == spx_checks::Scope::Node)
        .map(|c| c.id())
        .collect()
}

/// Every node check of `CHECKS` is in the report, once.
fn assert_complete(doc: &Value) {
    let mut got: Vec<&str> = doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    got.sort_unstable();
    let mut want = all_ids();
    want.sort_unstable();
    assert_eq!(got, want, "a full report has every check once: {doc:#}");
}

fn status<'a>(doc: &'a Value, id: &str) -> &'a str {
    support::check(doc, id)["status"].as_str().unwrap_or("?")
}

fn summary<'a>(doc: &'a Value, id: &str) -> &'a str {
    support::check(doc, id)["summary"].as_str().unwrap_or("")
}

/// A temp dir that uid 65534 can enter and read.
fn world_readable_tempdir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("spx-hardening-")
        .tempdir()
        .expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn write_file(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Quote a value as a TOML basic string, escaping what TOML requires.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------
// The lab node: a namespace with a bridge, veths, a tap, sysctls set, xfrm
// policies (and states where the kernel has ESP), and real NB, SB and
// Open_vSwitch databases with rows.

struct Lab {
    node: Netns,
    _peer: Netns,
    nb: OvsdbServer,
    sb: OvsdbServer,
    ovs: OvsdbServer,
    dir: tempfile::TempDir,
    config: PathBuf,
    /// `ip xfrm state add` worked (the kernel has ESP).
    has_esp: bool,
}

impl Lab {
    fn new() -> Lab {
        let node = Netns::new();
        let peer = Netns::new();
        // No duplicate address detection: addresses are final at once
        // instead of turning from tentative during the test.
        for ns in [&node, &peer] {
            ns.sysctl("net.ipv6.conf.all.accept_dad=0");
            ns.sysctl("net.ipv6.conf.default.accept_dad=0");
        }
        node.ip(&[
            "link",
            "add",
            "br-wan",
            "type",
            "bridge",
            "stp_state",
            "0",
            "forward_delay",
            "0",
        ]);
        node.veth("eth1", &peer, "eth1p");
        node.ip(&["link", "set", "eth1", "master", "br-wan"]);
        node.ip(&["link", "set", "br-wan", "up"]);
        node.ip(&["addr", "add", "198.18.10.1/24", "dev", "br-wan"]);
        peer.ip(&["addr", "add", "198.18.10.2/24", "dev", "eth1p"]);
        // A second, unbridged underlay-looking link with jumbo MTU.
        node.veth("eth2", &peer, "eth2p");
        node.ip(&["link", "set", "eth2", "mtu", "9000"]);
        node.ip(&["tuntap", "add", "dev", "tapeni-lab0", "mode", "tap"]);
        node.ip(&["link", "set", "tapeni-lab0", "mtu", "1408"]);
        for kv in [
            "net.core.somaxconn=1024",
            "net.ipv4.tcp_reordering=5",
            "net.ipv4.ip_forward=1",
            "net.ipv4.conf.all.rp_filter=2",
        ] {
            node.sysctl(kv);
        }
        let has_esp = node.try_exec(&[
            "ip",
            "xfrm",
            "state",
            "add",
            "src",
            "198.18.10.1",
            "dst",
            "198.18.10.2",
            "proto",
            "esp",
            "spi",
            "0x1001",
            "reqid",
            "1",
            "mode",
            "transport",
            "aead",
            "rfc4106(gcm(aes))",
            "0x0102030405060708090a0b0c0d0e0f1011121314",
            "128",
        ]);
        for (dir, src, dst) in [
            ("out", "198.18.10.1", "198.18.10.2"),
            ("in", "198.18.10.2", "198.18.10.1"),
        ] {
            node.exec(&[
                "ip",
                "xfrm",
                "policy",
                "add",
                "src",
                src,
                "dst",
                dst,
                "dir",
                dir,
                "tmpl",
                "src",
                src,
                "dst",
                dst,
                "proto",
                "esp",
                "reqid",
                "1",
                "mode",
                "transport",
            ]);
        }

        let nb = OvsdbServer::nb();
        nb.nbctl(&["set", "NB_Global", ".", "ipsec=true"]);
        nb.nbctl(&["ls-add", "vpc-lab"]);
        let dhcp = nb.nbctl(&["dhcp-options-create", "198.18.64.0/24"]);
        let dhcp = if dhcp.trim().is_empty() {
            nb.nbctl(&["--bare", "--columns=_uuid", "list", "DHCP_Options"])
        } else {
            dhcp
        };
        nb.nbctl(&[
            "dhcp-options-set-options",
            dhcp.trim(),
            "mtu=1408",
            "lease_time=3600",
            "router=198.18.64.1",
            "server_id=198.18.64.1",
            "server_mac=02:00:00:00:00:01",
        ]);
        let sb = OvsdbServer::sb();
        sb.sbctl(&["chassis-add", "spx1", "geneve", "198.18.10.1"]);
        sb.sbctl(&["chassis-add", "spx2", "geneve", "198.18.10.2"]);
        let ovs = OvsdbServer::ovs();
        ovs.vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            "external_ids:ovn-encap-ip=198.18.10.1",
            "external_ids:system-id=spx1",
            "other_config:ipsec_encapsulation=true",
        ]);

        let dir = world_readable_tempdir();
        let config = dir.path().join("spinifex.toml");
        write_file(
            &config,
            &format!(
                "node = \"spx1\"\n[network]\nipsec_enabled = true\nunderlay_mtu = 1500\n\
                 [nodes.spx1]\nhost = \"198.18.10.1\"\n\
                 [nodes.spx1.vpcd]\novn_nb_addr = \"{}\"\novn_sb_addr = \"{}\"\n\
                 external_interface = \"br-wan\"\n\
                 [nodes.spx2]\nhost = \"198.18.10.2\"\n",
                nb.unix(),
                sb.unix()
            ),
            0o644,
        );
        Lab {
            node,
            _peer: peer,
            nb,
            sb,
            ovs,
            dir,
            config,
            has_esp,
        }
    }

    fn doctor_args(&self) -> Vec<String> {
        vec![
            "--config".into(),
            self.config.display().to_string(),
            "--ovs-db".into(),
            self.ovs.unix(),
            "--sample".into(),
            "300ms".into(),
            "--probe-timeout".into(),
            "500ms".into(),
            "--timeout".into(),
            "8s".into(),
        ]
    }

    /// Everything a run could conceivably change, as text per aspect.
    fn snapshot(&self) -> BTreeMap<String, String> {
        let mut snap = BTreeMap::new();
        let mut links_json = self.json(&["ip", "-d", "-j", "link", "show"]);
        strip_timers(&mut links_json);
        let names: Vec<String> = links_json
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["ifname"].as_str().map(str::to_owned))
            .collect();
        snap.insert("links".into(), format!("{links_json:#}"));
        for (key, argv) in [
            ("addresses", &["ip", "-j", "addr", "show"][..]),
            ("routes", &["ip", "-j", "route", "show", "table", "all"]),
            (
                "routes6",
                &["ip", "-6", "-j", "route", "show", "table", "all"],
            ),
            ("rules", &["ip", "-j", "rule", "show"]),
            ("bridge ports", &["bridge", "-j", "link", "show"]),
        ] {
            snap.insert(key.into(), format!("{:#}", self.json(argv)));
        }
        for (key, argv) in [
            ("qdiscs", &["tc", "qdisc", "show"][..]),
            ("xfrm states", &["ip", "xfrm", "state", "list"]),
            ("xfrm policies", &["ip", "xfrm", "policy", "list"]),
        ] {
            snap.insert(key.into(), self.output(argv));
        }
        for name in &names {
            for flag in ["-k", "-l", "-g", "-c"] {
                snap.insert(
                    format!("ethtool {flag} {name}"),
                    self.output(&["ethtool", flag, name]),
                );
            }
        }
        let sysctls: String = self
            .output(&["sysctl", "-a"])
            .lines()
            .filter(|l| l.starts_with("net."))
            .filter(|l| !l.contains("nf_conntrack_count"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(sysctls.lines().count() > 100, "sysctl -a: {sysctls}");
        snap.insert("sysctls".into(), sysctls);
        for (db, server) in [
            ("OVN_Northbound", &self.nb),
            ("OVN_Southbound", &self.sb),
            ("Open_vSwitch", &self.ovs),
        ] {
            let out = Command::new("ovsdb-client")
                .args(["dump", &server.unix(), db])
                .output()
                .expect("ovsdb-client dump");
            assert!(out.status.success(), "ovsdb-client dump {db}");
            snap.insert(
                format!("ovsdb {db}"),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            );
        }
        snap.insert(
            "config file".into(),
            std::fs::read_to_string(&self.config).unwrap(),
        );
        let mut files: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        snap.insert("config dir".into(), files.join("\n"));
        snap
    }

    /// Snapshots until two in a row agree (links settle after `up`).
    fn settled_snapshot(&self) -> BTreeMap<String, String> {
        let mut last = self.snapshot();
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(250));
            let now = self.snapshot();
            if now == last {
                return now;
            }
            last = now;
        }
        panic!("the lab never settled: {}", diff(&last, &self.snapshot()));
    }

    /// The JSON a tool prints inside the node (`ip -j …`).
    fn json(&self, argv: &[&str]) -> Value {
        let out = self.node.exec(argv);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{argv:?}: {e}: {out}"))
    }

    /// stdout, stderr and exit status of argv inside the node: a failing
    /// tool (`ethtool -g` on a veth) is part of the state too.
    fn output(&self, argv: &[&str]) -> String {
        let out = self
            .node
            .command(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        format!(
            "{}{}[{}]",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            out.status
        )
    }
}

/// Bridge timers count down on their own; they are not state a run could
/// set.
fn strip_timers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !k.contains("timer"));
            map.values_mut().for_each(strip_timers);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_timers),
        _ => {}
    }
}

fn diff(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for key in before.keys().chain(after.keys()) {
        let (b, a) = (before.get(key), after.get(key));
        if b == a || out.contains(&format!("== {key}\n")) {
            continue;
        }
        out.push_str(&format!("== {key}\n"));
        let (b, a) = (b.map_or("", String::as_str), a.map_or("", String::as_str));
        for (lb, la) in b.lines().zip(a.lines()).filter(|(x, y)| x != y).take(5) {
            out.push_str(&format!("- {lb}\n+ {la}\n"));
        }
        if b.lines().count() != a.lines().count() {
            out.push_str(&format!(
                "({} lines before, {} after)\n",
                b.lines().count(),
                a.lines().count()
            ));
        }
    }
    out
}

#[test]
#[allow(clippy::disallowed_macros)] // says what part of xfrm this kernel can hold
fn a_full_run_in_a_lab_node_changes_nothing() {
    if !support::root_or_skip("a_full_run_in_a_lab_node_changes_nothing") {
        return;
    }
    let lab = Lab::new();
    if !lab.has_esp {
        println!(
            "note: this kernel cannot hold ESP states (CONFIG_INET_ESP); xfrm is compared through policies and the (empty) state list"
        );
    }
    let before = lab.settled_snapshot();
    let mut runs = Vec::new();
    for extra in [
        &[][..],
        &["--for", "enable-jumbo"],
        &["--for", "disable-ipsec"],
    ] {
        let mut cmd = lab.node.spx();
        cmd.args(lab.doctor_args()).args(extra);
        let (code, doc) = run_json(&mut cmd);
        if extra.is_empty() {
            assert_complete(&doc);
            // The run really read the lab: the databases answered.
            assert_ne!(status(&doc, "ipsec.flags"), "error", "{doc:#}");
        }
        runs.push((extra, code));
    }
    let after = lab.snapshot();
    assert!(
        before == after,
        "a doctor run changed the node ({runs:?}):\n{}",
        diff(&before, &after)
    );
}

// ---------------------------------------------------------------------------
// No shell, no injection.

/// Values that a shell would act on, plus the other hostile shapes.
fn hostile_values(canary: &Path) -> Vec<(&'static str, String)> {
    let c = canary.display();
    vec![
        ("semicolon", format!("x; touch {c}")),
        ("command substitution", format!("$(touch {c})")),
        ("backticks", format!("`touch {c}`")),
        ("pipe", format!("x | touch {c}")),
        ("and-list", format!("x && touch {c}")),
        ("newline", format!("x\ntouch {c}")),
        ("NUL byte", format!("x\0touch {c}")),
        ("10 KB string", "a".repeat(10 * 1024)),
    ]
}

/// The config keys that carry outside strings, as a TOML document with
/// the value in place.
fn configs_with(value: &str) -> Vec<(&'static str, String)> {
    let v = toml_str(value);
    vec![
        ("node", format!("node = {v}\n")),
        ("nodes", format!("[nodes.{v}]\nhost = \"198.18.0.1\"\n")),
        ("nodes.a.host", format!("[nodes.a]\nhost = {v}\n")),
        ("nodes.a.advertise", format!("[nodes.a]\nadvertise = {v}\n")),
        (
            "nodes.a.vpcd.ovn_nb_addr",
            format!("[nodes.a.vpcd]\novn_nb_addr = {v}\n"),
        ),
        (
            "nodes.a.vpcd.ovn_sb_addr",
            format!(
                "[nodes.a.vpcd]\novn_sb_addr = {}\n",
                toml_str(&format!("tcp:{value}:6642"))
            ),
        ),
        (
            "nodes.a.vpcd.external_interface",
            format!("[nodes.a.vpcd]\nexternal_interface = {v}\n"),
        ),
    ]
}

#[test]
fn hostile_config_values_are_refused_naming_the_key_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let canary = dir.path().join("CANARY");
    let mut cases = 0;
    for (shape, value) in hostile_values(&canary) {
        for (key, text) in configs_with(&value) {
            let cfg = support::write_config(dir.path(), &text);
            let (code, out, err) = run(spx().current_dir(dir.path()).args(["--config"]).arg(&cfg));
            assert_eq!(code, 2, "{shape} in {key}: exit {code}: {err}");
            assert!(out.is_empty(), "{shape} in {key}: {out}");
            assert_eq!(err.lines().count(), 1, "{shape} in {key}: one line: {err}");
            assert!(
                err.contains("spinifex.toml:"),
                "{shape} in {key}: names the file and position: {err}"
            );
            assert!(
                err.contains(&format!("`{key}`")),
                "{shape} in {key}: names the key: {err}"
            );
            assert!(!canary.exists(), "{shape} in {key}: something ran it");
            cases += 1;
        }
    }
    assert_eq!(cases, 8 * 7);

    // A NUL byte written raw (not escaped) is not TOML: refused with the
    // position.
    let cfg = dir.path().join("spinifex.toml");
    std::fs::write(&cfg, b"node = \"spx1\"\n[nodes.a]\nhost = \"x\0y\"\n").unwrap();
    let (code, _, err) = run(spx().args(["--config"]).arg(&cfg));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("spinifex.toml:3:"), "{err}");
    assert!(!canary.exists());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["spinifex.toml"], "nothing else appeared");
}

#[test]
fn hostile_flags_are_refused_or_inert() {
    let dir = tempfile::tempdir().unwrap();
    let canary = dir.path().join("CANARY");
    let c = canary.display().to_string();
    // (flag, value, what the refusal must say)
    for (flag, value, says) in [
        ("--peer", format!("$(touch {c})"), "--peer"),
        ("--peer", format!("198.18.0.1;touch {c}"), "--peer"),
        ("--peer", format!("`touch {c}`"), "--peer"),
        ("--interface", format!("x;touch {c}"), "--interface"),
        ("--interface", "a\nb".to_owned(), "--interface"),
        ("--nb-db", format!("tcp:$(touch {c}):6641"), "--nb-db"),
        ("--sb-db", format!("unix:/tmp/x\ntouch {c}"), "--sb-db"),
        (
            "--ovs-db",
            format!("tcp:127.0.0.1:6640;touch {c}"),
            "--ovs-db",
        ),
        (
            "--config",
            format!("{c}/$(touch {c})"),
            "cannot read config",
        ),
        ("--check", format!("udp;touch {c}"), "unknown check"),
        ("--timeout", format!("1s;touch {c}"), "--timeout"),
    ] {
        let (code, out, err) = run(spx().current_dir(dir.path()).args([flag, &value]));
        assert_eq!(code, 2, "{flag} {value:?}: {err}");
        assert!(out.is_empty());
        assert!(err.contains(says), "{flag} {value:?}: says {says:?}: {err}");
        assert!(!canary.exists(), "{flag} {value:?}: something ran it");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// The strongest form of "no shell": run a full doctor under strace and
/// look at every program it executed. Values that pass validation but
/// would mean something to a shell (an interface name with a backtick, a
/// socket path with `$(…)`) are used as the names they are.
#[test]
fn a_full_run_executes_no_shell() {
    if !support::root_or_skip("a_full_run_executes_no_shell") {
        return;
    }
    assert!(
        Path::new("/usr/bin/strace").exists(),
        "/usr/bin/strace missing: install strace"
    );
    let dir = tempfile::tempdir().unwrap();
    let canary = dir.path().join("CANARY");
    let trace = dir.path().join("trace");
    let ns = Netns::new();
    let cfg = support::write_config(
        dir.path(),
        "node = \"spx1\"\n[network]\nipsec_enabled = true\n[nodes.spx1]\nhost = \"198.18.0.1\"\n\
         [nodes.spx1.vpcd]\novn_nb_addr = \"tcp:127.0.0.1:1\"\n",
    );
    let mut cmd = ns.command("/usr/bin/strace");
    cmd.current_dir(dir.path())
        .args(["-f", "-qq", "-e", "trace=execve,execveat", "-o"])
        .arg(&trace)
        .arg(support::bin())
        .args(["--config"])
        .arg(&cfg)
        .args(["--interface", "e`id`", "--interface", "$(id)"])
        .arg("--ovs-db")
        .arg(format!(
            "unix:{}/$(touch {})",
            dir.path().display(),
            canary.display()
        ))
        .args([
            "--peer",
            "198.18.0.2",
            "--timeout",
            "3s",
            "--sample",
            "200ms",
        ])
        .args(["--probe-timeout", "300ms", "--format", "json"])
        .env("HOME", "/nonexistent-spx-test-home");
    let (_bundles, bundle) = support::record(&mut cmd);
    let (code, out, err) = run(&mut cmd);
    assert!((0..=2).contains(&code), "exit {code}: {err}");
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    support::assert_valid(&doc);
    assert_complete(&doc);
    support::assert_replays(&bundle, &doc, None);
    assert!(!canary.exists(), "the socket path was run as a command");
    let trace = std::fs::read_to_string(&trace).unwrap();
    let programs: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("execve") && !l.contains("ENOENT"))
        .filter_map(|l| l.split('"').nth(1))
        .collect();
    assert_eq!(
        programs.first(),
        Some(&support::bin()),
        "strace saw spx start: {trace}"
    );
    for p in &programs[1..] {
        assert!(
            ["/usr/bin/journalctl", "/bin/journalctl"].contains(p),
            "spx executed {p}; only journalctl (by argv) is allowed:\n{trace}"
        );
    }
}

// ---------------------------------------------------------------------------
// Unprivileged.

/// The binary where uid 65534 can execute it (the build tree may not be).
fn nobody_binary(dir: &Path) -> PathBuf {
    let path = dir.join("spx-doctor");
    std::fs::copy(support::bin(), &path).expect("copy spx-doctor");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Run a command that execs a [`nobody_binary`] copy. Another test thread
/// that forks while the copy is open for writing holds that descriptor
/// until its child execs, and exec of the copy then fails with ETXTBSY
/// (exit 126): that is the harness racing itself, so it is retried.
fn run_copied(cmd: &mut Command) -> (i32, String, String) {
    let mut tries = 0;
    loop {
        let (code, out, err) = run(cmd);
        tries += 1;
        if code == 126 && err.contains("Text file busy") && tries < 20 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        }
        return (code, out, err);
    }
}

/// Words that mean a privilege problem, which must be a skip, not an error.
const PERMISSION_WORDS: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "eperm",
    "eacces",
];

#[test]
fn unprivileged_run_is_complete_and_skips_naming_the_privilege() {
    if !support::root_or_skip("unprivileged_run_is_complete_and_skips_naming_the_privilege") {
        return;
    }
    let lab = Lab::new();
    let bin = nobody_binary(lab.dir.path());
    // A guest whose QMP socket only root can reach, as on a real node.
    let _guest = QemuGuest::start(&lab.node, &["-name", "guest=spx-unprivileged-test"]);

    let (_, as_root) = run_json(lab.node.spx().args(lab.doctor_args()));

    let mut cmd = lab.node.command("setpriv");
    cmd.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
        "--inh-caps=-all",
    ])
    .arg(&bin)
    .args(lab.doctor_args())
    .args(["--format", "json"])
    .env("HOME", "/nonexistent-spx-test-home");
    let (_bundles, bundle) = support::record(&mut cmd);
    let (code, out, err) = run_copied(&mut cmd);
    // Host-wide facts (QEMU guests of other tests) may change meanwhile:
    // a check counts as privilege-sensitive only when root concludes
    // before and after the unprivileged run.
    let (_, as_root_after) = run_json(lab.node.spx().args(lab.doctor_args()));
    assert!(!err.contains("panicked"), "{err}");
    assert!((0..=2).contains(&code), "exit {code}: {err}");
    let doc: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("not JSON ({e}); exit {code}; {out}{err}"));
    support::assert_valid(&doc);
    assert_complete(&doc);
    assert_eq!(doc["exit_code"], code);
    // The unprivileged run's bundle replays to its report, skips and all.
    support::assert_replays(&bundle, &doc, None);

    // Exit by the usual rules.
    let statuses: Vec<&str> = all_ids().iter().map(|id| status(&doc, id)).collect();
    let expected = if statuses.contains(&"fail") {
        1
    } else if statuses.contains(&"error") {
        2
    } else {
        0
    };
    assert_eq!(code, expected, "{statuses:?}");

    let mut problems = Vec::new();
    for id in all_ids() {
        let (s, text) = (status(&doc, id), summary(&doc, id));
        let lower = text.to_lowercase();
        if s == "error" && PERMISSION_WORDS.iter().any(|w| lower.contains(w)) {
            problems.push(format!(
                "{id}: error on a privilege problem (should be a skip naming what it needs): {text}"
            ));
        }
        if s == "skip" && status(&as_root, id) != "skip" && status(&as_root_after, id) != "skip" {
            let names_it = text.starts_with("needs ")
                && (text.contains("CAP_") || text.contains("root") || text.contains("group"));
            if !names_it {
                problems.push(format!(
                    "{id}: skips unprivileged (root: {}) without naming the privilege: {text}",
                    status(&as_root, id)
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n\nunprivileged report: {doc:#}",
        problems.join("\n")
    );
    // The two capabilities the issue names, where this lab needs them.
    assert_eq!(status(&doc, "ipsec.xfrm"), "skip", "{doc:#}");
    assert!(
        summary(&doc, "ipsec.xfrm").contains("CAP_NET_ADMIN"),
        "{}",
        summary(&doc, "ipsec.xfrm")
    );
    assert_eq!(status(&doc, "mtu.path"), "skip", "{doc:#}");
    assert!(
        summary(&doc, "mtu.path").contains("CAP_NET_RAW"),
        "{}",
        summary(&doc, "mtu.path")
    );
}

// ---------------------------------------------------------------------------
// Never hangs.

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

#[test]
fn every_outside_party_misbehaving_at_once_ends_within_the_deadline() {
    if !support::root_or_skip("every_outside_party_misbehaving_at_once_ends_within_the_deadline") {
        return;
    }
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
    assert!(
        took <= timeout + Duration::from_millis(500),
        "took {took:?} with --timeout 3s; stderr: {stderr}"
    );
    let doc: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}{stderr}"));
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

// ---------------------------------------------------------------------------
// Clear refusals: the bad-input table of the README, docs/bad-input.md.

/// One row: what the operator typed (with a config file's contents, if
/// any), and how the file is made unreadable.
struct BadInput {
    what: &'static str,
    args: &'static [&'static str],
    /// Written to `spinifex.toml` in the working directory.
    config: Option<&'static str>,
    /// Run as uid 65534 with the config file mode 0600 root.
    unreadable: bool,
    /// A bundle `node.spxb` in the working directory, recorded by this
    /// binary, then damaged so.
    bundle: Option<Damage>,
}

/// What is done to the bundle a bad-input row replays.
#[derive(Clone, Copy)]
enum Damage {
    None,
    /// Its second half missing, as a copy interrupted.
    CutShort,
    /// Its gzip checksum (CRC-32, before the length at the end)
    /// overwritten: gzip's own integrity check must catch it.
    Overwritten,
    /// A well-formed bundle whose header says format 2.
    FormatTwo,
}

/// Record `node.spxb` in `dir` and damage it.
fn damaged_bundle(dir: &Path, damage: Damage) {
    let path = dir.join("node.spxb");
    let (code, _, err) = run(spx().current_dir(dir).args([
        "--check",
        "sysctl.udp-buffers",
        "--record",
        "node.spxb",
    ]));
    assert!(code < 2, "{err}");
    let mut bytes = std::fs::read(&path).unwrap();
    match damage {
        Damage::None => {}
        Damage::CutShort => bytes.truncate(bytes.len() / 2),
        Damage::Overwritten => {
            let crc = bytes.len() - 8;
            for b in &mut bytes[crc..crc + 4] {
                *b = !*b;
            }
        }
        Damage::FormatTwo => {
            use std::io::Write;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(
                b"{\"bundle\":\"spx-doctor bundle\",\"format\":2,\"doctor_version\":\"2.0.0\"}\n",
            )
            .unwrap();
            bytes = gz.finish().unwrap();
        }
    }
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
}

const BAD_INPUT: &[BadInput] = &[
    BadInput {
        what: "malformed config (TOML syntax)",
        args: &["--config", "spinifex.toml"],
        config: Some("node = \"spx1\"\n[network\nipsec_enabled = true\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "mistyped config value",
        args: &["--config", "spinifex.toml"],
        config: Some("node = \"spx1\"\n[network]\nunderlay_mtu = \"9000\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "config value out of range",
        args: &["--config", "spinifex.toml"],
        config: Some("[network]\nunderlay_mtu = 70000\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "shell syntax in a config value",
        args: &["--config", "spinifex.toml"],
        config: Some("[nodes.spx1]\nhost = \"$(touch /tmp/pwned)\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "control character in a config value",
        args: &["--config", "spinifex.toml"],
        config: Some("node = \"spx1\\nspx2\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "bad interface name in the config",
        args: &["--config", "spinifex.toml"],
        config: Some("[nodes.spx1.vpcd]\nexternal_interface = \"br wan\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "endpoint without a port in the config",
        args: &["--config", "spinifex.toml"],
        config: Some("[nodes.spx1.vpcd]\novn_nb_addr = \"tcp:198.18.3.181\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "missing config file",
        args: &["--config", "nonexistent.toml"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unreadable config file",
        args: &["--config", "spinifex.toml"],
        config: Some("node = \"spx1\"\n"),
        unreadable: true,
        bundle: None,
    },
    BadInput {
        what: "unknown check",
        args: &["--check", "udp.rcvbuf-eror"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown check to skip",
        args: &["--skip", "nope"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "explain a category",
        args: &["explain", "udp"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "--mtu below range",
        args: &["--mtu", "100"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "--mtu above range",
        args: &["--mtu", "70000"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "bad duration",
        args: &["--timeout", "soon"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "zero timeout",
        args: &["--timeout", "0s"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "sample window not shorter than the timeout",
        args: &["--sample", "20s"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "negative probe timeout",
        args: &["--probe-timeout", "-1s"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "interface name with '/'",
        args: &["--interface", "bad/name"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "interface name too long",
        args: &["--interface", "waytoolonginterfacename"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "peer that is shell syntax",
        args: &["--peer", "$(id)"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unresolvable peer name",
        args: &["--peer", "no-such-host.invalid"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "link-local peer without its interface",
        args: &["--peer", "fe80::2"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "link-local peer on an interface this host lacks",
        args: &["--peer", "fe80::2%nosuchif0"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "scope id on an address that is not link-local",
        args: &["--peer", "198.18.0.2%eth0"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "endpoint without a port",
        args: &["--nb-db", "tcp:127.0.0.1"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "ssl: endpoint",
        args: &["--sb-db", "ssl:127.0.0.1:6642"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "relative unix: socket path",
        args: &["--ovs-db", "unix:relative"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown endpoint kind",
        args: &["--nb-db", "http://198.18.3.181:6641"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown output format",
        args: &["--format", "xml"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown preflight",
        args: &["--for", "enable-everything"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "skipping a check a preflight requires",
        args: &["--for", "enable-jumbo", "--skip", "mtu.path"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a cluster flag without --cluster",
        args: &["--nodes", "spx1"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a cluster run on a config without nodes",
        args: &["--cluster", "--config", "spinifex.toml"],
        config: Some("node = \"spx1\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "an unknown node",
        args: &["--cluster", "--config", "spinifex.toml", "--nodes", "spx9"],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "shell syntax in a node name",
        args: &[
            "--cluster",
            "--config",
            "spinifex.toml",
            "--nodes",
            "spx1;id",
        ],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "shell syntax in the ssh user",
        args: &[
            "--cluster",
            "--config",
            "spinifex.toml",
            "--ssh-user",
            "root;id",
        ],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "shell syntax in the remote binary",
        args: &[
            "--cluster",
            "--config",
            "spinifex.toml",
            "--remote-bin",
            "spx-doctor;id",
        ],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a missing ssh config",
        args: &[
            "--cluster",
            "--config",
            "spinifex.toml",
            "--ssh-config",
            "nonexistent",
        ],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a cluster timeout that leaves the nodes no sample window",
        args: &[
            "--cluster",
            "--config",
            "spinifex.toml",
            "--timeout",
            "1200ms",
        ],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown code to allow",
        args: &["--allow", "nic.rings/shalow-ring"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "allowing a pass",
        args: &["--allow", "nic.rings/ok"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "denying a failure",
        args: &["--deny", "qemu.tuning/no-vhost"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "allowing what a preflight requires",
        args: &[
            "--for",
            "disable-ipsec",
            "--allow",
            "ipsec.flags/stale-nb-ipsec",
        ],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown code in the config",
        args: &["--config", "spinifex.toml"],
        config: Some("[doctor]\nallow = [\"nic.rings/shalow-ring\"]\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "explain an unknown code",
        args: &["explain", "nic.rings/shalow"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a bundle that is not there",
        args: &["--replay", "nonexistent.spxb"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a file that is not a bundle",
        args: &["--replay", "spinifex.toml"],
        config: Some("node = \"spx1\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a bundle cut short (its second half missing)",
        args: &["--replay", "node.spxb"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::CutShort),
    },
    BadInput {
        what: "a damaged bundle (its gzip checksum overwritten)",
        args: &["--replay", "node.spxb"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::Overwritten),
    },
    BadInput {
        what: "a bundle of an unknown format",
        args: &["--replay", "node.spxb"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::FormatTwo),
    },
    BadInput {
        what: "--replay with --record",
        args: &["--replay", "node.spxb", "--record", "again.spxb"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::None),
    },
    BadInput {
        what: "--replay with --cluster",
        args: &["--replay", "node.spxb", "--cluster"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::None),
    },
    BadInput {
        what: "--record with --cluster",
        args: &["--cluster", "--record", "cluster.spxb"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "--replay with a flag the bundle sets",
        args: &["--replay", "node.spxb", "--peer", "198.18.0.2"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::None),
    },
    BadInput {
        what: "--record into a directory that is not there",
        args: &["--check", "sysctl", "--record", "nonexistent/node.spxb"],
        config: None,
        unreadable: false,
        bundle: None,
    },
];

/// Two nodes, for the cluster rows (refused before any ssh runs).
const CLUSTER_CONFIG: &str =
    "[nodes.spx1]\nhost = \"198.18.3.181\"\n[nodes.spx2]\nhost = \"198.18.3.182\"\n";

/// Run one row in a fresh working directory: (exit code, stdout, stderr).
fn run_bad_input(row: &BadInput) -> (i32, String, String) {
    let dir = world_readable_tempdir();
    if let Some(damage) = row.bundle {
        damaged_bundle(dir.path(), damage);
    }
    if let Some(text) = row.config {
        write_file(
            &dir.path().join("spinifex.toml"),
            text,
            if row.unreadable { 0o600 } else { 0o644 },
        );
    }
    let mut cmd = if row.unreadable {
        let bin = nobody_binary(dir.path());
        let mut c = Command::new("setpriv");
        c.args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ])
        .arg(bin);
        c
    } else {
        spx()
    };
    cmd.current_dir(dir.path())
        .env("HOME", "/nonexistent-spx-test-home")
        .env("COLUMNS", "200")
        .args(row.args);
    run_copied(&mut cmd)
}

fn markdown_code(s: &str) -> String {
    // Inline code with a backtick inside needs a longer fence.
    let fence = if s.contains('`') { "`` " } else { "`" };
    let close = if s.contains('`') { " ``" } else { "`" };
    format!("{fence}{}{close}", s.replace('|', "\\|"))
}

fn render_table(rows: &[(String, String, i32)]) -> String {
    let mut doc = String::from(
        "# Bad input: what spx-doctor says\n\n\
         Every refusal goes to stderr, nothing to stdout, and exits 2 (usage or\n\
         config error). The message column is stderr up to clap's \"For more\n\
         information\" hint. Generated by the test\n\
         `hardening::bad_input_table_is_what_spx_says` in `tests/hardening.rs`,\n\
         which runs every row against the real binary; after changing a\n\
         message, regenerate with\n\
         `SPX_BLESS=1 cargo test --test tests hardening::bad_input_table_is_what_spx_says`.\n\
         A config file's contents are shown with `⏎` for line ends; the unreadable\n\
         file is mode 0600 root and spx-doctor runs as uid 65534.\n\n\
         | Input | What spx-doctor says | Exit |\n\
         | --- | --- | --- |\n",
    );
    for (input, message, code) in rows {
        doc.push_str(&format!(
            "| {input} | {} | {code} |\n",
            markdown_code(message)
        ));
    }
    doc
}

#[test]
fn bad_input_table_is_what_spx_says() {
    if !support::root_or_skip("bad_input_table_is_what_spx_says") {
        return;
    }
    let mut rows = Vec::new();
    for row in BAD_INPUT {
        let (code, out, err) = run_bad_input(row);
        assert_eq!(code, 2, "{}: {err}", row.what);
        assert!(out.is_empty(), "{}: {out}", row.what);
        // The message: stderr up to clap's "For more information" hint,
        // on one line.
        let first = err
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            first.starts_with("spx-doctor: error: ") || first.starts_with("error: "),
            "{}: {err}",
            row.what
        );
        if first.starts_with("spx-doctor: error: ") {
            assert_eq!(err.lines().count(), 1, "{}: one line: {err}", row.what);
        }
        assert!(!err.contains("panicked"), "{}: {err}", row.what);
        // The list of every check changes as checks land; the table shows
        // its place, not its contents.
        let first = match first.split_once("; valid ids and categories: ") {
            Some((head, list)) => {
                for id in all_ids() {
                    assert!(list.contains(id), "{}: the list lacks {id}", row.what);
                }
                format!("{head}; valid ids and categories: …every check id and category…")
            }
            None => first,
        };
        let mut input = format!(
            "{}: {}",
            row.what,
            markdown_code(&format!("spx-doctor {}", row.args.join(" ")))
        );
        if let Some(text) = row.config {
            input.push_str(&format!(
                " with {}",
                markdown_code(&text.trim_end().replace('\n', "⏎"))
            ));
        }
        rows.push((input, first, code));
    }
    let generated = render_table(&rows);
    let path = support::repo_root().join("docs/bad-input.md");
    if std::env::var_os("SPX_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/bad-input.md is stale: regenerate with \
         `SPX_BLESS=1 cargo test --test tests hardening::bad_input_table_is_what_spx_says`\n\
         generated:\n{generated}"
    );
}
