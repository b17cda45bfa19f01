//! JSON v1: one document on stdout. The schema is committed at
//! schema/report-v1.schema.json and every test validates against it.

use crate::report::Report;

pub fn render(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report always serializes");
    s.push('\n');
    s
}
