//! The table an operator reads of one node's run: a headline (the node,
//! the checks, the wall time, the counts), then what is wrong first
//! ([`super::grouped`]), or with `-v` every check in catalogue order with
//! its evidence ([`super::verbose`]); then what the levels noted, where a
//! replay's facts came from, a preflight's runbook, and last the exit code
//! with the line that explains it.

use spx_checks::Status;

use super::inert::{Lead, Screen};
use super::term::{Paint, Sym, Term};
use super::Style;
use crate::report::Report;

pub fn render(report: &Report, style: &Style) -> String {
    let term = &style.term;
    let mut out = Screen::new();
    headline(&mut out, term, report);
    if style.verbose {
        super::verbose::checks(&mut out, style, report);
    } else {
        super::grouped::checks(&mut out, term, report);
    }
    footer(&mut out, term, report);
    exit_line(&mut out, term, report, style.strict);
    out.into_string()
}

/// `spx1 · 19 checks in 1.0 s · 2 fail, 1 warn, 0 error, 4 pass, 12 skip`.
fn headline(out: &mut Screen, term: &Term, report: &Report) {
    let who = report.node.as_deref().unwrap_or(&report.host);
    let preflight = match report.profile.0 {
        Some(p) => format!(" (preflight {})", p.name()),
        None => String::new(),
    };
    let dot = term.sym(Sym::Dot);
    let lead = Lead::default().push(term, who, Some(Paint::Bold)).push(
        term,
        &format!("{preflight} "),
        None,
    );
    let n = report.checks.len();
    let text = format!(
        "{dot} {n} {} in {} {dot} {}",
        if n == 1 { "check" } else { "checks" },
        seconds(report.duration_ms),
        counts(report)
    );
    out.wrap(term, &lead, &text, 2);
}

/// The wall time as the headline says it: `1.0 s`, `45 ms`.
pub fn seconds(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// `2 fail, 1 warn, 0 error, 4 pass (1 allowed), 12 skip`.
fn counts(report: &Report) -> String {
    let s = &report.summary;
    let allowed = if s.allowed > 0 {
        format!(" ({} allowed)", s.allowed)
    } else {
        String::new()
    };
    format!(
        "{} fail, {} warn, {} error, {} pass{allowed}, {} skip",
        s.fail, s.warn, s.error, s.pass, s.skip
    )
}

/// The levels' notes, a replay's source and a preflight's runbook.
fn footer(out: &mut Screen, term: &Term, report: &Report) {
    for note in &report.notes {
        out.wrap(term, &Lead::default(), &format!("note: {note}"), 2);
    }
    if let Some(from) = &report.replayed_from {
        let text = format!(
            "replayed from {}: recorded on {} at {} by spx-doctor {}",
            from.bundle, report.host, report.started_at, from.recorded_by
        );
        out.wrap(term, &Lead::default(), &text, 2);
        for note in &from.notes {
            out.wrap(term, &Lead::default(), &format!("replay: {note}"), 2);
        }
    }
    if let Some(runbook) = &report.runbook {
        runbook_lines(out, term, runbook);
    }
}

/// A preflight's runbook, its steps numbered, each wrapped under its text.
pub fn runbook_lines(out: &mut Screen, term: &Term, steps: &[String]) {
    out.line("");
    out.wrap(
        term,
        &Lead::default().push(term, "Runbook:", Some(Paint::Bold)),
        "",
        0,
    );
    for (i, step) in steps.iter().enumerate() {
        let lead = Lead::default().push(term, &format!("{:>3}. ", i + 1), None);
        out.wrap(term, &lead, step, 5);
    }
}

/// The exit code and why, always the last line.
fn exit_line(out: &mut Screen, term: &Term, report: &Report, strict: bool) {
    let ids = |status: Status| -> Vec<&str> {
        report
            .checks
            .iter()
            .filter(|c| c.status == status)
            .map(|c| c.id)
            .collect()
    };
    let why = match report.exit_code {
        0 => match ids(Status::Warn).len() {
            0 => "no check failed".to_owned(),
            n => format!("no check failed ({n} warned; --strict would fail the run on a warning)"),
        },
        1 if !ids(Status::Fail).is_empty() => format!("{} failed", listed(&ids(Status::Fail))),
        1 if strict => format!(
            "{} warned, and --strict fails the run on a warning",
            listed(&ids(Status::Warn))
        ),
        1 => "a check failed".to_owned(),
        _ => inconclusive(report),
    };
    let code = format!("exit {}", report.exit_code);
    let paint = match report.exit_code {
        0 => Paint::Status(Status::Pass),
        1 => Paint::Status(Status::Fail),
        _ => Paint::Status(Status::Error),
    };
    let lead = Lead::default().push(term, &code, Some(paint));
    out.wrap(term, &lead, &format!(": {why}"), 2);
}

/// Exit 2: the checks that errored, or the preflight's required checks
/// that did not conclude.
fn inconclusive(report: &Report) -> String {
    let errored: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.status == Status::Error)
        .map(|c| c.id)
        .collect();
    let missing: Vec<&str> = report.profile.0.map_or(Vec::new(), |p| {
        p.profile()
            .required
            .iter()
            .copied()
            .filter(|id| {
                report
                    .checks
                    .iter()
                    .find(|c| c.id == *id)
                    .is_none_or(|c| !c.status.is_conclusive())
            })
            .collect()
    });
    let mut parts = Vec::new();
    if !errored.is_empty() {
        parts.push(format!("{} could not conclude", listed(&errored)));
    }
    if let (false, Some(p)) = (missing.is_empty(), report.profile.0) {
        parts.push(format!(
            "{} did not conclude, and preflight {} needs {}",
            listed(&missing),
            p.name(),
            if missing.len() == 1 { "it" } else { "them" }
        ));
    }
    if parts.is_empty() {
        return "inconclusive".to_owned();
    }
    format!("inconclusive: {}, and nothing failed", parts.join("; "))
}

/// `a`, `a and b`, `a, b and c`, or `7 checks` past five.
fn listed(ids: &[&str]) -> String {
    match ids {
        [] => "no check".to_owned(),
        [one] => (*one).to_owned(),
        _ if ids.len() > 5 => format!("{} checks", ids.len()),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_english() {
        assert_eq!(listed(&["a.b"]), "a.b");
        assert_eq!(listed(&["a.b", "c.d"]), "a.b and c.d");
        assert_eq!(listed(&["a.b", "c.d", "e.f"]), "a.b, c.d and e.f");
        assert_eq!(listed(&["a"; 6]), "6 checks");
        assert_eq!(seconds(1004), "1.0 s");
        assert_eq!(seconds(45), "45 ms");
    }
}
