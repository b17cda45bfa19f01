//! JSON v1: one document on stdout. The schemas are committed at
//! schema/report-v1.schema.json and schema/cluster-report-v1.schema.json,
//! and every test validates against them.

use serde::Serialize;

use crate::report::cluster::ClusterReport;
use crate::report::Report;

pub fn render(report: &Report) -> String {
    pretty(report)
}

/// A cluster run's report.
pub fn render_cluster(report: &ClusterReport) -> String {
    pretty(report)
}

/// A cluster run's report, written to `out` as it is made: the same bytes
/// as [`render_cluster`], never the whole document in memory (at hundreds
/// of nodes it is hundreds of MiB).
pub fn write_cluster(report: &ClusterReport, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    out.write_all(b"\n")
}

fn pretty(report: &impl Serialize) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report always serializes");
    s.push('\n');
    s
}
