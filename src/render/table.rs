//! The table an operator reads: one row per check, remediation under the
//! rows that need it, what `--allow`/`--deny` changed, code, findings and
//! evidence with -v, then a line of counts and the run's notes.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Attribute, Color, ContentArrangement, Table};
use spx_checks::Status;

use super::inert::{cell, cell_lines, Screen};
use super::Style;
use crate::report::Report;

pub(super) fn mark(s: Status) -> &'static str {
    match s {
        Status::Pass => "✔",
        Status::Warn => "!",
        Status::Fail => "✘",
        Status::Skip => "-",
        Status::Error => "?",
    }
}

pub(super) fn color(s: Status) -> Color {
    match s {
        Status::Pass => Color::Green,
        Status::Warn => Color::Yellow,
        Status::Fail => Color::Red,
        Status::Skip => Color::DarkGrey,
        Status::Error => Color::Magenta,
    }
}

/// A table in the house style: condensed UTF-8 borders, wrapped to the
/// terminal, coloured only when asked.
pub(super) fn new_table(style: &Style) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_content_arrangement(ContentArrangement::Dynamic);
    if style.color {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    if let Some(w) = style.width {
        table.set_width(w);
    }
    table
}

pub fn render(report: &Report, style: &Style) -> String {
    let mut table = new_table(style);
    table.set_header(vec![
        cell(""),
        cell("check"),
        cell("status"),
        cell("summary"),
    ]);
    for c in &report.checks {
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
        if matches!(c.status, Status::Fail | Status::Warn | Status::Error) || style.verbose {
            for step in &c.remediation {
                detail.push(format!("  fix: {step}"));
            }
        }
        if style.verbose {
            detail.push(format!("  code: {}", c.code));
            for f in &c.findings {
                detail.push(format!(
                    "  {} {} {}: {}",
                    f.status, f.code, f.subject, f.summary
                ));
            }
        }
        if style.verbose && !c.evidence.is_empty() {
            for (k, v) in &c.evidence {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                detail.push(format!("  {k}: {v}"));
            }
        }
        let allowed = c.status == Status::Pass && c.status_was.is_some();
        let status = cell(if allowed {
            "allowed"
        } else {
            c.status.as_str()
        });
        let status = if style.color {
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
            cell(mark(c.status)),
            cell(c.id),
            status,
            cell_lines(&detail),
        ]);
    }
    let s = &report.summary;
    let mut out = Screen::new();
    out.table(&table);
    out.line(format!(
        "{} checks: {} pass{}, {} warn, {} fail, {} skip, {} error; exit {}{}",
        report.checks.len(),
        s.pass,
        if s.allowed > 0 {
            format!(" ({} allowed)", s.allowed)
        } else {
            String::new()
        },
        s.warn,
        s.fail,
        s.skip,
        s.error,
        report.exit_code,
        match report.profile.0 {
            None => String::new(),
            Some(p) => format!(" (preflight {})", p.name()),
        }
    ));
    for note in &report.notes {
        out.line(format!("note: {note}"));
    }
    if let Some(from) = &report.replayed_from {
        out.line(format!(
            "replayed from {}: recorded on {} at {} by spx-doctor {}",
            from.bundle, report.host, report.started_at, from.recorded_by
        ));
        for note in &from.notes {
            out.line(format!("replay: {note}"));
        }
    }
    if let Some(runbook) = &report.runbook {
        out.line("");
        out.line("Runbook:");
        for (i, step) in runbook.iter().enumerate() {
            out.line(format!("{:>3}. {step}", i + 1));
        }
    }
    out.into_string()
}
