//! Prometheus text exposition for node_exporter's textfile collector:
//! the status of every check, how long each took, when the run was, its
//! exit code, and the key measured values as gauges, in base units. A
//! cluster run writes every node's series with a `node` label, and the
//! cluster's own (`spx_doctor_cluster_*`).

use std::fmt::Write;

use serde_json::Value;
use spx_checks::Status;

use crate::cluster::report::ClusterReport;
use crate::report::Report;

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

fn find<'a>(doc: &'a Value, id: &str) -> Option<&'a Value> {
    checks_of(doc).find(|c| text(c, "id") == id)
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

    for (id, key, metric, kind, help) in MEASUREMENTS {
        let values: Vec<(Option<&str>, f64)> = docs
            .iter()
            .filter_map(|(node, doc)| {
                Some((*node, number(find(doc, id)?.get("evidence")?.get(*key)?)?))
            })
            .collect();
        if values.is_empty() {
            continue;
        }
        header(out, metric, kind, help);
        for (node, v) in values {
            let _ = writeln!(out, "{metric}{} {v}", labels(node, &[]));
        }
    }

    // Path MTU per peer, where mtu.path measured one.
    let mut peers: Vec<(Option<&str>, String, f64)> = Vec::new();
    for (node, doc) in docs {
        let list = find(doc, "mtu.path").and_then(|c| c.get("evidence")?.get("peers")?.as_array());
        for p in list.into_iter().flatten() {
            if let (Some(a), Some(m)) = (
                p.get("address").and_then(Value::as_str),
                p.get("path_mtu").and_then(Value::as_f64),
            ) {
                peers.push((*node, a.to_owned(), m));
            }
        }
    }
    if !peers.is_empty() {
        header(
            out,
            "spx_doctor_path_mtu_bytes",
            "gauge",
            "The largest packet the underlay carries to the peer, measured.",
        );
        for (node, peer, mtu) in peers {
            let _ = writeln!(
                out,
                "spx_doctor_path_mtu_bytes{} {mtu}",
                labels(node, &[("peer", &peer)])
            );
        }
    }
}
