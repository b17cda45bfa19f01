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
use spx_checks::metrics::{self, MetricDef};
use spx_checks::Status;

use crate::report::cluster::ClusterReport;
use crate::report::Report;

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One metric family, as every monitoring output writes it: the
/// Prometheus text here, OTLP in [`crate::otlp`]. Both render the same
/// families, so their series and values are the same by construction.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    pub samples: Vec<Sample>,
    /// Written with this many decimals (timestamps), else as the shortest
    /// exact decimal.
    pub decimals: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        }
    }
}

/// One series: its labels (`node` first in a cluster run) and value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Family {
    fn new(name: &'static str, help: &'static str) -> Family {
        Family {
            name,
            kind: Kind::Gauge,
            help,
            samples: Vec::new(),
            decimals: None,
        }
    }

    fn push(&mut self, node: Option<&str>, rest: &[(&str, &str)], value: f64) {
        let mut labels: Vec<(String, String)> = Vec::with_capacity(rest.len() + 1);
        if let Some(n) = node {
            labels.push(("node".into(), n.to_owned()));
        }
        labels.extend(rest.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self.samples.push(Sample { labels, value });
    }
}

/// The families as Prometheus text.
fn text(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind.as_str());
        for s in &f.samples {
            let labels = if s.labels.is_empty() {
                String::new()
            } else {
                let parts: Vec<String> = s
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                    .collect();
                format!("{{{}}}", parts.join(","))
            };
            let _ = match f.decimals {
                Some(d) => writeln!(out, "{}{labels} {:.*}", f.name, d, s.value),
                None => writeln!(out, "{}{labels} {}", f.name, s.value),
            };
        }
    }
    out
}

/// A report as JSON v1, with the node it is from in a cluster run.
type Doc<'a> = (Option<&'a str>, &'a Value);

fn checks_of(doc: &Value) -> impl Iterator<Item = &Value> {
    doc.get("checks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn text_of<'a>(v: &'a Value, key: &str) -> &'a str {
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
    text(&families(report))
}

/// A node run's families.
pub fn families(report: &Report) -> Vec<Family> {
    let doc = serde_json::to_value(report).expect("a report always serializes");
    node_families(&[(None, &doc)])
}

/// A node report as JSON v1 (an agent's, read back): its families.
pub fn families_of_doc(doc: &Value) -> Vec<Family> {
    node_families(&[(None, doc)])
}

/// A cluster run: every node's series with a `node` label, then the
/// cluster's own: which nodes answered, the cluster checks, the path-MTU
/// matrix and the run's exit code.
pub fn render_cluster(report: &ClusterReport) -> String {
    text(&cluster_families(report))
}

pub fn cluster_families(report: &ClusterReport) -> Vec<Family> {
    let docs: Vec<Doc> = report
        .nodes
        .iter()
        .filter_map(|n| Some((Some(n.name.as_str()), n.doc()?)))
        .collect();
    let mut out = node_families(&docs);
    let mut up = Family::new(
        "spx_doctor_cluster_node_up",
        "1 when the node answered the cluster run with a valid report, 0 when it did not.",
    );
    for n in &report.nodes {
        up.push(Some(&n.name), &[], f64::from(u8::from(n.report.is_some())));
    }
    out.push(up);
    let mut status = Family::new(
        "spx_doctor_cluster_check_status",
        "1 for the cluster check's current status, 0 for the others.",
    );
    for c in &report.checks {
        for s in Status::ALL {
            status.push(
                None,
                &[("check", c.id), ("status", s.as_str())],
                f64::from(u8::from(c.status == s)),
            );
        }
    }
    out.push(status);
    let mut mtu = Family::new(
        "spx_doctor_cluster_path_mtu_bytes",
        "The largest packet the underlay carries from one node to another, measured by the from node.",
    );
    for c in report.path_matrix.iter() {
        if let Some(m) = c.path_mtu {
            mtu.push(None, &[("from", &c.from), ("to", &c.to)], f64::from(m));
        }
    }
    if !mtu.samples.is_empty() {
        out.push(mtu);
    }
    let mut at = Family::new(
        "spx_doctor_cluster_last_run_timestamp_seconds",
        "When this cluster run started (Unix time).",
    );
    at.decimals = Some(3);
    at.push(None, &[], unix_seconds(&report.started_at));
    out.push(at);
    let mut code = Family::new(
        "spx_doctor_cluster_run_exit_code",
        "The cluster run's exit code: 0 ok, 1 failed, 2 inconclusive.",
    );
    code.push(None, &[], f64::from(report.exit_code));
    out.push(code);
    out
}

/// The families of node reports, each family's samples together (as the
/// text format wants them).
fn node_families(docs: &[Doc]) -> Vec<Family> {
    let mut info = Family::new(
        "spx_doctor_info",
        "The spx doctor build that wrote this file.",
    );
    let mut status = Family::new(
        "spx_doctor_check_status",
        "1 for the check's current status, 0 for the others.",
    );
    let mut code = Family::new(
        "spx_doctor_check_code",
        "1 for the code of the check's result (CHECK-ID/KIND; `spx-doctor explain CODE`).",
    );
    let mut duration = Family::new(
        "spx_doctor_check_duration_seconds",
        "How long the check took.",
    );
    let mut at = Family::new(
        "spx_doctor_last_run_timestamp_seconds",
        "When this run started (Unix time).",
    );
    at.decimals = Some(3);
    let mut exit = Family::new(
        "spx_doctor_run_exit_code",
        "The run's exit code: 0 ok, 1 failed, 2 inconclusive.",
    );
    let mut notes = Family::new(
        "spx_doctor_notes",
        "Notes the run made about its levels (an allow that matched nothing, one a preflight set aside); the JSON report lists them.",
    );
    for (node, doc) in docs {
        let version = doc.get("tool").map_or("", |t| text_of(t, "version"));
        info.push(*node, &[("version", version)], 1.0);
        for c in checks_of(doc) {
            let id = text_of(c, "id");
            for s in Status::ALL {
                status.push(
                    *node,
                    &[("check", id), ("status", s.as_str())],
                    f64::from(u8::from(text_of(c, "status") == s.as_str())),
                );
            }
            code.push(*node, &[("check", id), ("code", text_of(c, "code"))], 1.0);
            let ms = c.get("duration_ms").and_then(Value::as_u64).unwrap_or(0);
            duration.push(*node, &[("check", id)], ms as f64 / 1000.0);
        }
        at.push(*node, &[], unix_seconds(text_of(doc, "started_at")));
        let rc = doc.get("exit_code").and_then(Value::as_i64).unwrap_or(2);
        exit.push(*node, &[], rc as f64);
        let n = doc
            .get("notes")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        notes.push(*node, &[], n as f64);
    }
    let mut out = vec![info, status, code, duration, at, exit, notes];

    // The metrics the checks declare, one family at a time, in report
    // order, each computed from the check's typed evidence.
    let mut declared: Vec<Family> = Vec::new();
    for (node, doc) in docs {
        for c in checks_of(doc) {
            let Some(evidence) = c.get("evidence").and_then(Value::as_object) else {
                continue;
            };
            for s in spx_checks::catalogue::series(text_of(c, "id"), evidence) {
                let def: &'static MetricDef = s.metric;
                let i = match declared.iter().position(|f| f.name == def.name) {
                    Some(i) => i,
                    None => {
                        let mut f = Family::new(def.name, def.help);
                        f.kind = match def.kind {
                            metrics::MetricType::Counter => Kind::Counter,
                            metrics::MetricType::Gauge => Kind::Gauge,
                        };
                        declared.push(f);
                        declared.len() - 1
                    }
                };
                let pairs: Vec<(&str, &str)> = def
                    .labels
                    .iter()
                    .copied()
                    .zip(s.labels.iter().map(String::as_str))
                    .collect();
                declared[i].push(*node, &pairs, s.value);
            }
        }
    }
    out.extend(declared);
    out
}
