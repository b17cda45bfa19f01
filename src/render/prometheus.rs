//! Prometheus text exposition for node_exporter's textfile collector:
//! the status and code of every check, how long each took, when the run
//! was, its exit code, and the metrics the checks declare
//! ([`spx_checks::metrics`]), computed from the typed evidence in the
//! report. A cluster run writes every node's series with a `node` label,
//! read back from the node's JSON report through the same typed evidence,
//! and the cluster's own (`spx_doctor_cluster_*`). Nothing here reads a
//! measurement by key.

use std::fmt::Write;

use serde_json::Value;
use spx_checks::metrics::{self, MetricDef, Series};
use spx_checks::Status;

use crate::cluster::report::ClusterReport;
use crate::report::Report;

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// `{node="…",k="v",…}`, or nothing when there is no label.
fn labels(node: Option<&str>, rest: &[(&str, &str)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(n) = node {
        parts.push(format!("node=\"{}\"", escape(n)));
    }
    for (k, v) in rest {
        parts.push(format!("{k}=\"{}\"", escape(v)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

/// One declared metric and its samples, each with the node it is from.
type Family<'a> = (&'static MetricDef, Vec<(Option<&'a str>, Series)>);

/// A report as JSON v1, with the node it is from in a cluster run.
type Doc<'a> = (Option<&'a str>, &'a Value);

fn checks_of(doc: &Value) -> impl Iterator<Item = &Value> {
    doc.get("checks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// An RFC 3339 time as Unix seconds (0 when unreadable).
fn unix_seconds(rfc3339: &str) -> f64 {
    humantime::parse_rfc3339(rfc3339)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

pub fn render(report: &Report) -> String {
    let doc = serde_json::to_value(report).expect("a report always serializes");
    let mut out = String::new();
    node_series(&mut out, &[(None, &doc)]);
    out
}

/// A cluster run: every node's series with a `node` label, then the
/// cluster's own: which nodes answered, the cluster checks, the path-MTU
/// matrix and the run's exit code.
pub fn render_cluster(report: &ClusterReport) -> String {
    let docs: Vec<Doc> = report
        .nodes
        .iter()
        .filter_map(|n| Some((Some(n.name.as_str()), n.report.as_ref()?)))
        .collect();
    let mut out = String::new();
    node_series(&mut out, &docs);
    header(
        &mut out,
        "spx_doctor_cluster_node_up",
        "gauge",
        "1 when the node answered the cluster run with a valid report, 0 when it did not.",
    );
    for n in &report.nodes {
        let _ = writeln!(
            out,
            "spx_doctor_cluster_node_up{} {}",
            labels(Some(&n.name), &[]),
            u8::from(n.report.is_some())
        );
    }
    header(
        &mut out,
        "spx_doctor_cluster_check_status",
        "gauge",
        "1 for the cluster check's current status, 0 for the others.",
    );
    for c in &report.checks {
        for s in Status::ALL {
            let _ = writeln!(
                out,
                "spx_doctor_cluster_check_status{} {}",
                labels(None, &[("check", c.id), ("status", s.as_str())]),
                u8::from(c.status == s)
            );
        }
    }
    let measured: Vec<_> = report
        .path_matrix
        .iter()
        .filter_map(|c| Some((c, c.path_mtu?)))
        .collect();
    if !measured.is_empty() {
        header(
            &mut out,
            "spx_doctor_cluster_path_mtu_bytes",
            "gauge",
            "The largest packet the underlay carries from one node to another, measured by the from node.",
        );
        for (c, mtu) in measured {
            let _ = writeln!(
                out,
                "spx_doctor_cluster_path_mtu_bytes{} {mtu}",
                labels(None, &[("from", &c.from), ("to", &c.to)])
            );
        }
    }
    let at = unix_seconds(&report.started_at);
    header(
        &mut out,
        "spx_doctor_cluster_last_run_timestamp_seconds",
        "gauge",
        "When this cluster run started (Unix time).",
    );
    let _ = writeln!(out, "spx_doctor_cluster_last_run_timestamp_seconds {at:.3}");
    header(
        &mut out,
        "spx_doctor_cluster_run_exit_code",
        "gauge",
        "The cluster run's exit code: 0 ok, 1 failed, 2 inconclusive.",
    );
    let _ = writeln!(out, "spx_doctor_cluster_run_exit_code {}", report.exit_code);
    out
}

/// The series of node reports, one family after the other (the text
/// format wants each family's samples together).
fn node_series(out: &mut String, docs: &[Doc]) {
    header(
        out,
        "spx_doctor_info",
        "gauge",
        "The spx doctor build that wrote this file.",
    );
    for (node, doc) in docs {
        let version = doc.get("tool").map_or("", |t| text(t, "version"));
        let _ = writeln!(
            out,
            "spx_doctor_info{} 1",
            labels(*node, &[("version", version)])
        );
    }

    header(
        out,
        "spx_doctor_check_status",
        "gauge",
        "1 for the check's current status, 0 for the others.",
    );
    for (node, doc) in docs {
        for c in checks_of(doc) {
            for s in Status::ALL {
                let _ = writeln!(
                    out,
                    "spx_doctor_check_status{} {}",
                    labels(*node, &[("check", text(c, "id")), ("status", s.as_str())]),
                    u8::from(text(c, "status") == s.as_str())
                );
            }
        }
    }

    header(
        out,
        "spx_doctor_check_code",
        "gauge",
        "1 for the code of the check's result (CHECK-ID/KIND; `spx-doctor explain CODE`).",
    );
    for (node, doc) in docs {
        for c in checks_of(doc) {
            let _ = writeln!(
                out,
                "spx_doctor_check_code{} 1",
                labels(
                    *node,
                    &[("check", text(c, "id")), ("code", text(c, "code"))]
                )
            );
        }
    }

    header(
        out,
        "spx_doctor_check_duration_seconds",
        "gauge",
        "How long the check took.",
    );
    for (node, doc) in docs {
        for c in checks_of(doc) {
            let ms = c.get("duration_ms").and_then(Value::as_u64).unwrap_or(0);
            let _ = writeln!(
                out,
                "spx_doctor_check_duration_seconds{} {}",
                labels(*node, &[("check", text(c, "id"))]),
                ms as f64 / 1000.0
            );
        }
    }

    header(
        out,
        "spx_doctor_last_run_timestamp_seconds",
        "gauge",
        "When this run started (Unix time).",
    );
    for (node, doc) in docs {
        let _ = writeln!(
            out,
            "spx_doctor_last_run_timestamp_seconds{} {:.3}",
            labels(*node, &[]),
            unix_seconds(text(doc, "started_at"))
        );
    }
    header(
        out,
        "spx_doctor_run_exit_code",
        "gauge",
        "The run's exit code: 0 ok, 1 failed, 2 inconclusive.",
    );
    for (node, doc) in docs {
        let code = doc.get("exit_code").and_then(Value::as_i64).unwrap_or(2);
        let _ = writeln!(out, "spx_doctor_run_exit_code{} {code}", labels(*node, &[]));
    }

    header(
        out,
        "spx_doctor_notes",
        "gauge",
        "Notes the run made about its levels (an allow that matched nothing, one a preflight set aside); the JSON report lists them.",
    );
    for (node, doc) in docs {
        let notes = doc
            .get("notes")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let _ = writeln!(out, "spx_doctor_notes{} {notes}", labels(*node, &[]));
    }

    // The metrics the checks declare, one family at a time, in report
    // order, each computed from the check's typed evidence.
    let mut families: Vec<Family> = Vec::new();
    for (node, doc) in docs {
        for c in checks_of(doc) {
            let Some(evidence) = c.get("evidence").and_then(Value::as_object) else {
                continue;
            };
            for s in metrics::series(text(c, "id"), evidence) {
                match families.iter_mut().find(|(m, _)| m.name == s.metric.name) {
                    Some((_, list)) => list.push((*node, s)),
                    None => families.push((s.metric, vec![(*node, s)])),
                }
            }
        }
    }
    for (metric, series) in families {
        header(out, metric.name, metric.kind.as_str(), metric.help);
        for (node, s) in series {
            let pairs: Vec<(&str, &str)> = metric
                .labels
                .iter()
                .copied()
                .zip(s.labels.iter().map(String::as_str))
                .collect();
            let _ = writeln!(out, "{}{} {}", metric.name, labels(node, &pairs), s.value);
        }
    }
}
