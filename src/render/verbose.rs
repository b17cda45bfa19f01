//! `-v`: every check of a node's run in catalogue order, one row each,
//! with its summary, what the levels did, every fix line, its notes, its
//! code, every finding and the evidence: everything the report holds,
//! fitted to the width.

use comfy_table::{Attribute, Cell, Color};
use spx_checks::Status;

use super::inert::{cell, cell_lines, Screen};
use super::Style;
use crate::report::{CheckReport, Report};

/// comfy-table's colour of a status.
pub fn color(s: Status) -> Color {
    match s {
        Status::Pass => Color::Green,
        Status::Warn => Color::Yellow,
        Status::Fail => Color::Red,
        Status::Skip => Color::DarkGrey,
        Status::Error => Color::Magenta,
    }
}

pub fn checks(out: &mut Screen, style: &Style, report: &Report) {
    let term = &style.term;
    let mut table = term.table();
    table.set_header(vec![
        cell(""),
        cell("check"),
        cell("status"),
        cell("summary"),
    ]);
    for c in &report.checks {
        let allowed = c.status == Status::Pass && c.status_was.is_some();
        let status = cell(if allowed {
            "allowed"
        } else {
            c.status.as_str()
        });
        let status = if term.color {
            let fg = if allowed {
                Color::Cyan
            } else {
                color(c.status)
            };
            status.fg(fg).add_attribute(Attribute::Bold)
        } else {
            status
        };
        table.add_row(vec![
            cell(term.mark(c.status)),
            cell(c.id),
            status,
            cell_lines(&detail(c)),
        ]);
    }
    out.table(&table);
}

/// A check's cell: everything the report says of it.
fn detail(c: &CheckReport) -> Vec<String> {
    let mut detail = vec![c.summary.clone()];
    if !c.allowed.is_empty() {
        detail.push(format!("  allowed: {}", c.allowed.join(", ")));
    }
    if !c.denied.is_empty() {
        detail.push(format!(
            "  denied: {} (warnings of this kind fail)",
            c.denied.join(", ")
        ));
    }
    if let Some(was) = c.status_was {
        detail.push(format!("  was {was}; now {} ({})", c.status, c.code));
    }
    for step in &c.remediation {
        detail.push(format!("  fix: {step}"));
    }
    for n in &c.notes {
        detail.push(format!("  note: {} ({})", n.text, n.kind.code()));
    }
    detail.push(format!("  code: {}", c.code));
    for f in &c.findings {
        detail.push(format!(
            "  {} {} {}: {}",
            f.status, f.code, f.subject, f.summary
        ));
    }
    for (k, v) in &c.evidence.map {
        let v = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        detail.push(format!("  {k}: {v}"));
    }
    detail
}

/// A mark cell in its status's colour (when the screen takes colour).
pub fn marked(style: &Style, s: Status) -> Cell {
    let c = cell(style.term.mark(s));
    if style.term.color {
        c.fg(color(s)).add_attribute(Attribute::Bold)
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use spx_checks::Status;

    use super::super::inert::inert;
    use super::super::term::Term;
    use super::super::{table, Style};
    use crate::report::{FindingReport, Report, Summary, Tool};

    /// A text as it survives wrapping and table borders: no white space,
    /// no column rules.
    fn unwrapped(text: &str) -> String {
        text.chars()
            .filter(|c| !c.is_whitespace() && !"│┆|".contains(*c))
            .collect()
    }

    fn text(v: &Value) -> String {
        v.as_str().unwrap_or_default().to_owned()
    }

    fn leak(v: &Value) -> &'static str {
        Box::leak(text(v).into_boxed_str())
    }

    /// Every check result the library's snapshots hold (checks/snapshots,
    /// the checks judged on recorded facts), as a node report holds it.
    fn snapshot_checks() -> Vec<crate::report::CheckReport> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("checks/snapshots");
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .expect("checks/snapshots")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "snap"))
            .collect();
        names.sort();
        let mut out = Vec::new();
        for path in names {
            let snap = std::fs::read_to_string(&path).expect("a snapshot");
            // insta's header, between two `---` lines, then the value.
            let body = snap.splitn(3, "---\n").nth(2).expect("insta's header");
            let v: Value = serde_json::from_str(body).expect("a JSON snapshot");
            if v.get("id").is_none() {
                continue; // a path verdict, not a check's result
            }
            out.push(crate::report::CheckReport {
                id: leak(&v["id"]),
                title: leak(&v["title"]),
                status: serde_json::from_value(v["status"].clone()).expect("a status"),
                code: text(&v["code"]),
                summary: text(&v["summary"]),
                skip_reason: None,
                needs: v["needs"].as_str().map(str::to_owned),
                notes: Vec::new(),
                evidence: v["evidence"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
                    .into(),
                remediation: v["remediation"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(text)
                    .collect(),
                findings: v["findings"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|f| FindingReport {
                        code: text(&f["code"]).into(),
                        status: serde_json::from_value(f["status"].clone()).expect("a status"),
                        subject: text(&f["subject"]).into(),
                        summary: text(&f["summary"]).into(),
                        needs: None,
                        status_was: None,
                    })
                    .collect(),
                allowed: Vec::new(),
                denied: Vec::new(),
                status_was: None,
                duration_ms: 1,
            });
        }
        out
    }

    /// Nothing lost under `-v`: every id, status, code, summary, fix and
    /// finding of every check result in checks/snapshots is in the table,
    /// at 80 columns and at 200.
    #[test]
    fn every_result_in_the_check_snapshots_is_in_the_v_table() {
        let checks = snapshot_checks();
        assert!(checks.len() > 150, "{} snapshots", checks.len());
        let mut summary = Summary::default();
        for c in &checks {
            match c.status {
                Status::Pass => summary.pass += 1,
                Status::Warn => summary.warn += 1,
                Status::Fail => summary.fail += 1,
                Status::Skip => summary.skip += 1,
                Status::Error => summary.error += 1,
            }
        }
        let mut wanted: Vec<String> = Vec::new();
        for c in &checks {
            wanted.extend([c.id.to_owned(), c.status.to_string(), c.code.clone()]);
            wanted.push(c.summary.clone());
            wanted.extend(c.remediation.iter().cloned());
            for f in &c.findings {
                wanted.extend([&f.code, &f.subject, &f.summary].map(|s| s.to_string()));
            }
        }
        let report = Report {
            schema_version: 1,
            tool: Tool {
                name: "spx-doctor",
                version: "test",
            },
            host: "snapshots".into(),
            node: None,
            profile: spx_checks::profile::RunProfile(None),
            started_at: "2026-12-04T00:00:00Z".into(),
            duration_ms: 1,
            exit_code: 1,
            summary,
            checks,
            runbook: None,
            config: None,
            addresses: Vec::new(),
            allow: Vec::new(),
            deny: Vec::new(),
            notes: Vec::new(),
            replayed_from: None,
            recorded: Vec::new(),
        };
        for width in [80, 200] {
            let style = Style {
                verbose: true,
                strict: false,
                term: Term::plain(width),
            };
            let shown = table::render(&report, &style);
            assert!(
                shown.lines().all(|l| super::super::term::width(l) <= width),
                "a line wider than {width}"
            );
            let shown = unwrapped(&shown);
            for w in &wanted {
                let w = unwrapped(&inert(w));
                assert!(shown.contains(&w), "at {width} columns, lost: {w}");
            }
        }
    }
}
