//! Prometheus text exposition for node_exporter's textfile collector:
//! the status and code of every check, how long each took, when the run
//! was, its exit code, and the metrics the checks declare
//! ([`spx_checks::metrics`]), computed from the typed evidence in the
//! report. A cluster run writes every node's series with a `node` label,
//! read back from the node's JSON report through the same typed evidence,
//! and the cluster's own (`spx_doctor_cluster_*`). Nothing here reads a
//! measurement by key.

use std::collections::BTreeMap;
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
    node_families(&[(None, &doc)], Peers::Each)
}

/// A node report as JSON v1 (an agent's, read back): its families.
pub fn families_of_doc(doc: &Value) -> Vec<Family> {
    node_families(&[(None, doc)], Peers::Each)
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
    let mut out = node_families(&docs, Peers::InTheMatrix);
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
    // The matrix: one series per failing pair and a count per verdict,
    // never one per cell (N² at N nodes: a million series at 1,024).
    let mut mtu = Family::new(
        "spx_doctor_cluster_path_mtu_bytes",
        "The largest packet the underlay carries from one node to another, measured by the from node, for each pair whose path does not carry the target (spx_doctor_cluster_paths counts the others).",
    );
    let mut verdicts: BTreeMap<&str, usize> = BTreeMap::new();
    for c in report.path_matrix.iter() {
        *verdicts.entry(c.verdict.as_str()).or_default() += 1;
        if let (true, Some(m)) = (c.verdict.fails(), c.path_mtu) {
            mtu.push(None, &[("from", &c.from), ("to", &c.to)], f64::from(m));
        }
    }
    if !mtu.samples.is_empty() {
        out.push(mtu);
    }
    if !verdicts.is_empty() {
        let mut paths = Family::new(
            "spx_doctor_cluster_paths",
            "How many ordered pairs of nodes the path-MTU matrix holds with this verdict (ok, blackhole, too-big, local-mtu, unreachable, neighbour-table-full, not-probed, not-measured).",
        );
        for (verdict, n) in verdicts {
            paths.push(None, &[("verdict", verdict)], n as f64);
        }
        out.push(paths);
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

/// A declared metric labelled by `peer` (mtu.path's path MTU toward each
/// peer) has one series per peer: N−1 for one node, and N(N−1) for a
/// cluster's N nodes together.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Peers {
    /// A node's own run: a series per peer.
    Each,
    /// A cluster run: none per node; the pairs are the matrix's, whose
    /// failing ones `spx_doctor_cluster_path_mtu_bytes` carries.
    InTheMatrix,
}

/// The families of node reports, each family's samples together (as the
/// text format wants them).
fn node_families(docs: &[Doc], peers: Peers) -> Vec<Family> {
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
                if peers == Peers::InTheMatrix && def.labels.contains(&"peer") {
                    continue;
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn series(families: &[Family], name: &str) -> usize {
        families
            .iter()
            .filter(|f| f.name == name)
            .map(|f| f.samples.len())
            .sum()
    }

    fn value(families: &[Family], name: &str, label: (&str, &str)) -> Option<f64> {
        let f = families.iter().find(|f| f.name == name)?;
        let s = f.samples.iter().find(|s| {
            s.labels
                .iter()
                .any(|(k, v)| (k.as_str(), v.as_str()) == label)
        })?;
        Some(s.value)
    }

    /// A cluster of `n` nodes, the last behind a port at 1500 (2·(n−1)
    /// failing pairs), each node's mtu.path naming its n−1 peers, checked
    /// and counted: (all its series, a node's own without its peers',
    /// the failing pairs).
    fn counted(n: usize) -> (usize, usize, usize) {
        let mut r = crate::render::cluster::tests::cluster("n", n, n, None);
        let addr = |i: usize| format!("198.18.{}.{}", i / 250, i % 250 + 1);
        for (i, node) in r.nodes.iter_mut().enumerate() {
            let mut report = node.doc().cloned().expect("every node answered");
            let checks = report["checks"].as_array_mut().unwrap();
            let mtu = checks.iter_mut().find(|c| c["id"] == "mtu.path").unwrap();
            let peers: Vec<Value> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    let bad = i + 1 == n || j + 1 == n;
                    serde_json::json!({
                        "address": addr(j), "source": "config", "interface": "eth0",
                        "verdict": if bad { "blackhole" } else { "ok" },
                        "path_mtu": if bad { 1500 } else { 9000 }, "rtt_ms": 0.2, "rounds": 1,
                    })
                })
                .collect();
            mtu["evidence"] = serde_json::json!({"target_mtu": 9000, "peers": peers});
            let answer =
                spx_checks::cluster::NodeAnswer::new(node.name.clone(), None, Ok(report.into()));
            *node = crate::report::cluster::NodeEntry::of(&answer, "ssh");
        }
        let failing = 2 * (n - 1);
        assert_eq!(
            r.path_matrix.iter().filter(|c| c.verdict.fails()).count(),
            failing
        );

        // A node's own run: a series per peer (N−1: linear in N).
        let one = families_of_doc(r.nodes[0].doc().unwrap());
        assert_eq!(series(&one, "spx_doctor_path_mtu_bytes"), n - 1);
        let per_node = series_total(&one) - (n - 1);

        let all = cluster_families(&r);
        assert_eq!(series(&all, "spx_doctor_cluster_path_mtu_bytes"), failing);
        assert_eq!(series(&all, "spx_doctor_path_mtu_bytes"), 0);
        assert!(all
            .iter()
            .flat_map(|f| &f.samples)
            .all(|s| !s.labels.iter().any(|(k, _)| k == "peer")));
        let cells = |v| value(&all, "spx_doctor_cluster_paths", ("verdict", v));
        assert_eq!(cells("ok"), Some((n * (n - 1) - failing) as f64));
        assert_eq!(cells("blackhole"), Some(failing as f64));
        let last = format!("n{n}");
        assert_eq!(
            value(&all, "spx_doctor_cluster_path_mtu_bytes", ("to", &last)),
            Some(1500.0)
        );
        let total = series_total(&all);
        // OTLP carries the same families, so as many points.
        use opentelemetry_proto::tonic::metrics::v1::metric::Data;
        let req = crate::otlp::request(&all, Vec::new(), 0);
        let points: usize = req.resource_metrics[0].scope_metrics[0]
            .metrics
            .iter()
            .map(|m| match &m.data {
                Some(Data::Gauge(g)) => g.data_points.len(),
                Some(Data::Sum(s)) => s.data_points.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(points, total);
        (total, per_node, failing)
    }

    /// At 128 and 256 nodes (16,256 and 65,280 cells): the cluster's
    /// series (Prometheus and OTLP alike) are each node's own (but its
    /// per-peer ones), a node_up per node, one per failing pair and a few
    /// of the cluster's, the same few at both sizes: linear in the nodes
    /// and the failing pairs, never one per cell or per node and peer.
    #[test]
    fn a_clusters_series_grow_with_its_failing_pairs_never_with_its_cells() {
        let (small, per_node, small_failing) = counted(128);
        let (large, per_node_large, large_failing) = counted(256);
        assert_eq!(per_node, per_node_large, "a node's own series do not grow");
        let rest = |total: usize, n: usize, failing: usize| total - n * (per_node + 1) - failing;
        let few = rest(small, 128, small_failing);
        assert_eq!(few, rest(large, 256, large_failing), "{small} and {large}");
        assert!(few < 16, "{few} series of the cluster's own");
        assert!(large < 256 * 255, "{large} series: fewer than the cells");
    }

    fn series_total(families: &[Family]) -> usize {
        families.iter().map(|f| f.samples.len()).sum()
    }
}
