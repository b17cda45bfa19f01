//! What is refused before anything touches the bus, the default rule for
//! `--via`, and the packaging: the unit and the setup stage that
//! installs it.

use std::os::unix::fs::PermissionsExt;

use crate::support::{repo_root, run, run_cluster_json, spx, write_config};

/// Node n1 with a NATS table pointing at a closed loopback port: a run
/// that gets as far as connecting is refused there, and probes no one.
const WITH_NATS: &str = "node = \"n1\"\n[network]\nipsec_enabled = false\n[nodes.n1]\nhost = \"127.0.0.1\"\n[nodes.n1.nats]\nhost = \"127.0.0.1:1\"\n[nodes.n1.nats.acl]\ntoken = \"t\"\n[nodes.n2]\nhost = \"127.0.0.2\"\n";
const WITHOUT_NATS: &str =
    "node = \"n1\"\n[nodes.n1]\nhost = \"127.0.0.1\"\n[nodes.n2]\nhost = \"127.0.0.2\"\n";

#[test]
fn what_a_nats_request_cannot_carry_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), WITH_NATS);
    for (args, says) in [
        (
            &["--peer", "127.0.0.3"][..],
            "--peer: a request over NATS carries only",
        ),
        (
            &["--ssh-user", "spinifex"],
            "run with --via ssh to pass --ssh-user ([nodes.n1.nats] makes NATS the default)",
        ),
        (&["--strict"], "--strict"),
        (&["--allow", "nic.rings/shallow-ring"], "--allow"),
        (&["--mtu", "8000"], "--mtu"),
        (&["--probe-timeout", "500ms"], "--probe-timeout"),
        (
            &["--via", "nats", "--interface", "lo"],
            "--interface: a request over NATS",
        ),
        (
            &["--timeout", "2m"],
            "an agent runs at most 60 s per request",
        ),
    ] {
        let (code, out, err) = run(spx().arg("--cluster").arg("--config").arg(&cfg).args(args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // No [nodes.n1.nats]: --via nats is refused; the default is ssh.
    let plain = tempfile::tempdir().unwrap();
    let cfg = write_config(plain.path(), WITHOUT_NATS);
    let (code, _, err) = run(spx()
        .args(["--cluster", "--via", "nats", "--config"])
        .arg(&cfg));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("has no [nodes.n1.nats]") && err.contains("--via ssh"),
        "{err}"
    );
    let (code, _, err) = run(spx().args(["--via", "nats"]));
    assert_eq!(code, 2);
    assert!(err.contains("--cluster"), "{err}");
}

#[test]
fn a_nats_run_that_cannot_connect_is_a_report_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), WITH_NATS);
    // --mtu equal to the preflight's own target is no change: carried.
    let (code, doc) = run_cluster_json(spx().arg("--cluster").arg("--config").arg(&cfg).args([
        "--for",
        "enable-jumbo",
        "--mtu",
        "9000",
        "--timeout",
        "2s",
    ]));
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(doc["via"], "nats");
    for n in doc["nodes"].as_array().unwrap() {
        assert_eq!(n["reason"], "nats-connect", "{n:#}");
        assert_eq!(n["via"], "nats");
        assert!(
            n["error"].as_str().unwrap().contains("127.0.0.1:1"),
            "{n:#}"
        );
    }
    // --via ssh on the same config: ssh is asked (a stand-in that says
    // "refused"), never NATS.
    let (code, doc) = run_cluster_json(
        spx()
            .env("PATH", "/nonexistent-spx-path")
            .arg("--cluster")
            .arg("--config")
            .arg(&cfg)
            .args(["--via", "ssh", "--check", "sysctl", "--timeout", "10s"]),
    );
    assert!(code >= 1, "{doc:#}");
    assert_eq!(doc["via"], "ssh");
    let n2 = &doc["nodes"][1];
    assert_eq!(n2["reason"], "ssh-missing", "{n2:#}");
}

#[test]
fn the_agent_refuses_a_config_it_cannot_serve() {
    let dir = tempfile::tempdir().unwrap();
    for (text, says) in [
        ("[nodes.n1.nats]\nhost = \"127.0.0.1\"\n", "names no `node`"),
        (WITHOUT_NATS, "has no [nodes.n1.nats]"),
        (
            "node = \"n1\"\n[nodes.n1.nats]\nhost = \"a b\"\n",
            "nodes.n1.nats.host",
        ),
    ] {
        let cfg = write_config(dir.path(), text);
        let (code, out, err) = run(spx().arg("agent").arg("--config").arg(&cfg));
        assert_eq!(code, 2, "{text}: {err}");
        assert!(out.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{text}: {err}");
    }
    let (code, _, err) = run(spx().args(["agent", "--runs-per-minute", "0"]));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn the_unit_runs_the_agent_and_the_setup_stage_installs_it() {
    let root = repo_root();
    let unit =
        std::fs::read_to_string(root.join("contrib/systemd/spx-doctor-agent.service")).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let argv: Vec<&str> = exec.split_whitespace().collect();
    assert_eq!(argv[..2], ["/usr/local/bin/spx-doctor", "agent"]);
    // The flags it gives are the agent's own.
    let (code, help, err) = run(spx().args(&argv[1..]).arg("--help"));
    assert_eq!(code, 0, "{err}");
    assert!(help.contains("--runs-per-minute"), "{help}");
    for line in [
        "Restart=on-failure",
        "EnvironmentFile=-/etc/spinifex/telemetry.env",
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "WantedBy=multi-user.target",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line}:\n{unit}");
    }

    // The stage: the unit installed, systemd told, the agent started
    // (a stand-in systemctl records what it was asked).
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    let units = dir.path().join("units");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&units).unwrap();
    let log = dir.path().join("systemctl.log");
    let fake = bin.join("systemctl");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$*\" >> {}\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = root.join("contrib/setup-stage.sh");
    let (code, out, err) = run(std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -e; source {}; stage_doctor_agent",
            script.display()
        ))
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("SPX_DOCTOR_UNIT_DIR", &units));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("spx doctor agent: installed and started"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(units.join("spx-doctor-agent.service")).unwrap(),
        unit
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "daemon-reload\nenable --now spx-doctor-agent.service\n"
    );
}
