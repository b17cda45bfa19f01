//! No shell, no injection: hostile config values and flags are refused
//! naming the key, and a full run under strace executes nothing but spx.

use super::*;
use spx_test_harness::root_test;

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
#[root_test]
fn a_full_run_executes_no_shell() {
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
