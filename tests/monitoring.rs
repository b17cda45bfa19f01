//! Monitoring and gating: Prometheus text read by a real parser (promtool),
//! atomic --output, the systemd unit's command line, and the setup.sh stage.

use std::process::Command;

use crate::support::fabric::{Fabric, NodeSpec};
use crate::support::ovsdb_server::{OvsdbCluster, OvsdbServer};
use crate::support::{self, run, run_json, spx, Netns};
use spx_test_harness::root_test;

pub(crate) fn promtool_check(text: &str) {
    let out = support::run_with_stdin(Command::new("promtool").args(["check", "metrics"]), text);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}\n{text}"
    );
}

/// `name{labels} value` lines, parsed back for assertions.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn prometheus_output_passes_promtool_and_carries_the_series() {
    let (code, text, err) = run(spx().args([
        "--check",
        "sysctl,udp",
        "--sample",
        "100ms",
        "--format",
        "prometheus",
    ]));
    assert!(code < 2, "{err}");
    promtool_check(&text);
    let rmem: f64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(sample(&text, "spx_doctor_udp_rmem_max_bytes"), Some(rmem));
    assert_eq!(sample(&text, "spx_doctor_run_exit_code"), Some(code as f64));
    assert_eq!(
        sample(
            &text,
            "spx_doctor_check_status{check=\"udp.rcvbuf-errors\",status=\"error\"}"
        ),
        Some(0.0)
    );
    let statuses: f64 = ["pass", "warn", "fail", "skip", "error"]
        .iter()
        .filter_map(|s| {
            sample(
                &text,
                &format!("spx_doctor_check_status{{check=\"sysctl.udp-buffers\",status=\"{s}\"}}"),
            )
        })
        .sum();
    assert_eq!(statuses, 1.0, "exactly one status is 1");
    let ts = sample(&text, "spx_doctor_last_run_timestamp_seconds").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - ts).abs() < 600.0, "timestamp {ts} vs now {now}");
    assert!(text.contains("spx_doctor_info{version=\""));
    assert!(text.contains("# TYPE spx_doctor_udp_rcvbuf_errors_total counter"));
}

/// Every series a check declares appears in the textfile of a real run
/// that produces it: a node of a netns fabric with one peer, its config
/// naming that peer (mtu.path probes it; ipsec.xfrm counts this
/// namespace's SAs) and real three-member NB and SB rafts with a chassis
/// per node (ovn.cluster), the host's counters for the rest. Each value is the
/// one the JSON evidence of the same run carries, read through the typed
/// evidence, never by key.
#[root_test]
fn every_declared_series_appears_in_a_real_run() {
    let mut fabric = Fabric::new();
    let me = fabric.add_node(NodeSpec::jumbo());
    let peer = fabric.add_node(NodeSpec::jumbo());
    let (me, peer) = (fabric.node(me), fabric.node(peer));
    let nb = OvsdbCluster::nb(3);
    let sb = OvsdbCluster::sb_beside(&nb);
    sb.sbctl(&["chassis-add", "me", "geneve", &me.v4]);
    sb.sbctl(&["chassis-add", "peer", "geneve", &peer.v4]);
    let ovs = OvsdbServer::ovs();
    ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:system-id=me",
        &format!("external_ids:ovn-encap-ip={}", me.v4),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let config = support::write_config(
        dir.path(),
        &format!(
            "node = \"me\"\n[network]\nipsec_enabled = false\nunderlay_mtu = 9000\n\
             [nodes.me]\nhost = \"{}\"\n[nodes.me.vpcd]\novn_nb_addr = \"{}\"\n\
             ovn_sb_addr = \"{}\"\n[nodes.peer]\nhost = \"{}\"\n",
            me.v4,
            nb.unix_list(),
            sb.unix_list(),
            peer.v4
        ),
    );
    // ipsec.cert's series come from a node with IPsec credentials: a
    // second run, below.
    let checks: Vec<&str> = spx_checks::catalogue::metrics()
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| *id != "ipsec.cert")
        .collect();
    let doctor = || {
        let mut cmd = me.spx();
        cmd.args([
            "--check",
            &checks.join(","),
            "--sample",
            "200ms",
            "--ovs-db",
            &ovs.unix(),
            "--config",
        ])
        .arg(&config);
        cmd
    };
    let (code, text, err) = support::run_replayed(doctor().args(["--format", "prometheus"]));
    assert!(code < 2, "{err}\n{text}");
    promtool_check(&text);
    let lab = crate::ipsec_cert::Lab::spinifex();
    let (code, certs, err) = support::run_replayed(&mut lab.command(&["--format", "prometheus"]));
    assert_eq!(code, 0, "{err}\n{certs}");
    promtool_check(&certs);
    let days = |label: &str| {
        sample(
            &certs,
            &format!("spx_doctor_ipsec_certificate_expiry_seconds{{certificate=\"{label}\"}}"),
        )
        .map(|s| (s / 86_400.0).round())
    };
    assert_eq!((days("peer"), days("ca")), (Some(365.0), Some(3650.0)));
    let text = format!("{text}{certs}");
    for (id, metric) in spx_checks::catalogue::metrics() {
        assert!(
            text.contains(&format!(
                "# TYPE {} {}\n",
                metric.name,
                metric.kind.as_str()
            )),
            "{id}: no {} in\n{text}",
            metric.name
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with(metric.name)
                    && l[metric.name.len()..].starts_with([' ', '{'])),
            "{id}: no sample of {} in\n{text}",
            metric.name
        );
    }
    assert_eq!(
        sample(
            &text,
            &format!("spx_doctor_path_mtu_bytes{{peer=\"{}\"}}", peer.v4)
        ),
        Some(9000.0)
    );
    assert_eq!(
        sample(&text, "spx_doctor_path_mtu_target_bytes"),
        Some(9000.0)
    );
    assert_eq!(
        sample(&text, "spx_doctor_esp_security_associations"),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &text,
            "spx_doctor_check_code{check=\"ipsec.xfrm\",code=\"ipsec.xfrm/ok\"}"
        ),
        Some(1.0)
    );
    assert_eq!(sample(&text, "spx_doctor_notes"), Some(0.0));
    for raft in [&nb, &sb] {
        let db = raft.db_name;
        let leaders = format!("spx_doctor_ovn_raft_leaders{{db=\"{db}\"}}");
        assert_eq!(sample(&text, &leaders), Some(1.0), "{text}");
        for m in &raft.members {
            let up = format!(
                "spx_doctor_ovn_raft_member_up{{db=\"{db}\",member=\"{}\"}}",
                m.unix()
            );
            assert_eq!(sample(&text, &up), Some(1.0), "{up}\n{text}");
        }
    }
    assert_eq!(sample(&text, "spx_doctor_ovn_sb_chassis"), Some(2.0));
    // The same run as JSON: the series are its evidence, typed.
    let (_, doc) = run_json(&mut doctor());
    let udp = support::check(&doc, "udp.rcvbuf-errors");
    let ev: spx_checks::checks::udp_rcvbuf_errors::RcvbufErrorsEvidence =
        serde_json::from_value(udp["evidence"].clone()).expect("typed evidence reads back");
    assert_eq!(
        sample(&text, "spx_doctor_udp_rcvbuf_errors_total"),
        Some(ev.rcvbuf_errors_total as f64),
        "this namespace's counter does not move between the two runs"
    );
    let buffers = support::check(&doc, "sysctl.udp-buffers");
    let ev: spx_checks::checks::sysctl_udp_buffers::UdpBuffersEvidence =
        serde_json::from_value(buffers["evidence"].clone()).unwrap();
    assert_eq!(
        sample(&text, "spx_doctor_udp_wmem_max_bytes"),
        Some(ev.wmem_max as f64)
    );
}

#[test]
fn the_systemd_unit_command_line_is_valid_and_atomic() {
    let unit =
        std::fs::read_to_string(support::repo_root().join("contrib/systemd/spx-doctor.service"))
            .unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let mut argv: Vec<String> = exec.split_whitespace().map(str::to_owned).collect();
    assert_eq!(argv[0], "/usr/local/bin/spx-doctor");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("spx_doctor.prom");
    let i = argv.iter().position(|a| a == "--output").unwrap();
    argv[i + 1] = out.display().to_string();
    argv.extend(["--check".into(), "sysctl".into()]);
    let (code, stdout, err) = run(spx().args(&argv[1..]));
    assert!(code < 2, "{err}");
    assert!(stdout.is_empty());
    promtool_check(&std::fs::read_to_string(&out).unwrap());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("spx_doctor.prom")],
        "nothing else left"
    );
    assert!(unit.contains("SuccessExitStatus=1 2"));
    let timer =
        std::fs::read_to_string(support::repo_root().join("contrib/systemd/spx-doctor.timer"))
            .unwrap();
    assert!(timer.contains("OnUnitActiveSec=1min"));
}

fn stage(ns: Option<&Netns>, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let script = support::repo_root().join("contrib/setup-stage.sh");
    let mut cmd = match ns {
        Some(ns) => ns.command("bash"),
        None => Command::new("bash"),
    };
    cmd.arg(script)
        .args(args)
        .env("SPX_DOCTOR", support::bin())
        .env("HOME", "/nonexistent-spx-test-home");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(&mut cmd)
}

#[test]
fn setup_stage_maps_exit_codes_to_go_and_stop() {
    // 1 or 0, decided by the kernel's own sysctl value (the oracle).
    let rmem: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let (code, out, err) = stage(None, &[], &["--check", "sysctl.udp-buffers"]);
    if rmem < 16_777_216 {
        assert_eq!(code, 1, "{out}{err}");
        assert!(
            err.contains("FATAL: spx doctor: stop: a check failed"),
            "{err}"
        );
    } else {
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("spx doctor: go"));
    }
    // 2: a preflight with no peers to probe is inconclusive, never a go.
    let (code, _, err) = stage(None, &[("SPX_DOCTOR_FOR", "enable-jumbo")], &[]);
    assert_eq!(code, 1, "fatal() exits 1: {err}");
    assert!(err.contains("stop: inconclusive"), "{err}");
}

#[root_test]
fn setup_stage_goes_on_a_clean_namespace() {
    let ns = Netns::new();
    let (code, out, err) = stage(
        Some(&ns),
        &[],
        &["--check", "udp.rcvbuf-errors", "--sample", "100ms"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("spx doctor: go"), "{out}");
}
