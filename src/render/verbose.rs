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
    for (k, v) in &c.evidence {
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
