//! Prometheus text exposition for node_exporter's textfile collector:
//! the status of every check, how long each took, when the run was, its
//! exit code, and the key measured values as gauges, in base units.

use std::fmt::Write;

use serde_json::Value;
use spx_checks::Status;

use crate::report::{CheckReport, Report};

/// A measured value worth graphing: `(check, evidence key, metric, type, help)`.
const MEASUREMENTS: &[(&str, &str, &str, &str, &str)] = &[
    (
        "sysctl.udp-buffers",
        "rmem_max",
        "spx_doctor_udp_rmem_max_bytes",
        "gauge",
        "net.core.rmem_max.",
    ),
    (
        "sysctl.udp-buffers",
        "wmem_max",
        "spx_doctor_udp_wmem_max_bytes",
        "gauge",
        "net.core.wmem_max.",
    ),
    (
        "udp.rcvbuf-errors",
        "rcvbuf_errors_total",
        "spx_doctor_udp_rcvbuf_errors_total",
        "counter",
        "UDP datagrams dropped for want of receive buffer since boot (Udp and Udp6).",
    ),
    (
        "udp.rcvbuf-errors",
        "rcvbuf_errors_delta",
        "spx_doctor_udp_rcvbuf_errors_in_window",
        "gauge",
        "UDP receive-buffer drops during this run's sample window.",
    ),
    (
        "ipsec.xfrm",
        "sa_count",
        "spx_doctor_esp_sa_count",
        "gauge",
        "ESP security associations this node holds.",
    ),
    (
        "cpu.softirq",
        "busiest_softirq_share",
        "spx_doctor_busiest_cpu_softirq_ratio",
        "gauge",
        "Share of the busiest CPU's time spent in softirq during the window (0-1).",
    ),
    (
        "mtu.path",
        "target_mtu",
        "spx_doctor_path_mtu_target_bytes",
        "gauge",
        "The underlay MTU mtu.path probed for.",
    ),
];

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn number(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn find<'a>(report: &'a Report, id: &str) -> Option<&'a CheckReport> {
    report.checks.iter().find(|c| c.id == id)
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    header(
        &mut out,
        "spx_doctor_info",
        "gauge",
        "The spx doctor build that wrote this file.",
    );
    let _ = writeln!(
        out,
        "spx_doctor_info{{version=\"{}\"}} 1",
        escape(report.tool.version)
    );

    header(
        &mut out,
        "spx_doctor_check_status",
        "gauge",
        "1 for the check's current status, 0 for the others.",
    );
    for c in &report.checks {
        for s in Status::ALL {
            let _ = writeln!(
                out,
                "spx_doctor_check_status{{check=\"{}\",status=\"{}\"}} {}",
                escape(c.id),
                s.as_str(),
                u8::from(c.status == s)
            );
        }
    }

    header(
        &mut out,
        "spx_doctor_check_duration_seconds",
        "gauge",
        "How long the check took.",
    );
    for c in &report.checks {
        let _ = writeln!(
            out,
            "spx_doctor_check_duration_seconds{{check=\"{}\"}} {}",
            escape(c.id),
            c.duration_ms as f64 / 1000.0
        );
    }

    let started = humantime::parse_rfc3339(&report.started_at)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64());
    header(
        &mut out,
        "spx_doctor_last_run_timestamp_seconds",
        "gauge",
        "When this run started (Unix time).",
    );
    let _ = writeln!(out, "spx_doctor_last_run_timestamp_seconds {started:.3}");
    header(
        &mut out,
        "spx_doctor_run_exit_code",
        "gauge",
        "The run's exit code: 0 ok, 1 failed, 2 inconclusive.",
    );
    let _ = writeln!(out, "spx_doctor_run_exit_code {}", report.exit_code);

    for (id, key, metric, kind, help) in MEASUREMENTS {
        if let Some(v) = find(report, id)
            .and_then(|c| c.evidence.get(*key))
            .and_then(number)
        {
            header(&mut out, metric, kind, help);
            let _ = writeln!(out, "{metric} {v}");
        }
    }

    // Path MTU per peer, where mtu.path measured one.
    let peers: Vec<(String, f64)> = find(report, "mtu.path")
        .and_then(|c| c.evidence.get("peers"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|p| {
                    Some((
                        p.get("address")?.as_str()?.to_owned(),
                        p.get("path_mtu")?.as_f64()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    if !peers.is_empty() {
        header(
            &mut out,
            "spx_doctor_path_mtu_bytes",
            "gauge",
            "The largest packet the underlay carries to the peer, measured.",
        );
        for (peer, mtu) in peers {
            let _ = writeln!(
                out,
                "spx_doctor_path_mtu_bytes{{peer=\"{}\"}} {mtu}",
                escape(&peer)
            );
        }
    }
    out
}
