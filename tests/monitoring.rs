//! Monitoring and gating: Prometheus text read by a real parser (promtool),
//! atomic --output, the systemd unit's command line, and the setup.sh stage.

use std::process::Command;

use crate::support::{self, run, spx, Netns};

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

#[test]
fn setup_stage_goes_on_a_clean_namespace() {
    if !support::root_or_skip("setup_stage_goes_on_a_clean_namespace") {
        return;
    }
    let ns = Netns::new();
    let (code, out, err) = stage(
        Some(&ns),
        &[],
        &["--check", "udp.rcvbuf-errors", "--sample", "100ms"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("spx doctor: go"), "{out}");
}
