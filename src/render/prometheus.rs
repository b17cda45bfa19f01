//! Prometheus text exposition for node_exporter's textfile collector.

use std::fmt::Write;

use spx_checks::Status;

use crate::report::Report;

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# HELP spx_doctor_info The spx doctor build that wrote this file.");
    let _ = writeln!(out, "# TYPE spx_doctor_info gauge");
    let _ = writeln!(out, "spx_doctor_info{{version=\"{}\"}} 1", escape(report.tool.version));
    let _ = writeln!(out, "# HELP spx_doctor_check_status 1 for the check's current status, 0 for the others.");
    let _ = writeln!(out, "# TYPE spx_doctor_check_status gauge");
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
    let _ = writeln!(out, "# HELP spx_doctor_check_duration_seconds How long the check took.");
    let _ = writeln!(out, "# TYPE spx_doctor_check_duration_seconds gauge");
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
    let _ = writeln!(out, "# HELP spx_doctor_last_run_timestamp_seconds When this run started (Unix time).");
    let _ = writeln!(out, "# TYPE spx_doctor_last_run_timestamp_seconds gauge");
    let _ = writeln!(out, "spx_doctor_last_run_timestamp_seconds {started:.3}");
    let _ = writeln!(out, "# HELP spx_doctor_run_exit_code The run's exit code: 0 ok, 1 failed, 2 inconclusive.");
    let _ = writeln!(out, "# TYPE spx_doctor_run_exit_code gauge");
    let _ = writeln!(out, "spx_doctor_run_exit_code {}", report.exit_code);
    out
}
