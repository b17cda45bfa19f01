//! What is wrong first: a node's checks as the default table shows them.
//! Every fail, then every warn, then every error, each with its summary
//! and fixes; then one line of passes and one per allowed problem; then
//! the skips grouped by identical reason; a note several checks share is
//! said once, under the first of them shown, or after the skips. `-v`
//! shows every check in catalogue order instead ([`super::verbose`]).

use spx_checks::Status;

use super::inert::{Lead, Screen};
use super::problem::{self, Problem, Row, SharedNote};
use super::term::{Paint, Term};
use crate::report::Report;

/// The order problems are said in: what fails the run first.
pub const PROBLEMS: [Status; 3] = [Status::Fail, Status::Warn, Status::Error];

pub fn checks(out: &mut Screen, term: &Term, report: &Report) {
    let rows: Vec<Row> = report.checks.iter().map(Row::of_check).collect();
    let mut notes = problem::notes(&rows);
    for status in PROBLEMS {
        for row in rows.iter().filter(|r| r.status == status) {
            Problem {
                row,
                who: None,
                notes: &mut notes,
            }
            .write(out, term);
        }
    }
    passes(out, term, &rows);
    let skipped: Vec<&Row> = rows.iter().filter(|r| r.status == Status::Skip).collect();
    problem::skip_lines(out, term, &skipped);
    rest_of_notes(out, term, &notes);
}

/// One line of passes, then one line per allowed problem.
fn passes(out: &mut Screen, term: &Term, rows: &[Row]) {
    let passed: Vec<&str> = rows
        .iter()
        .filter(|r| r.status == Status::Pass && !r.is_allowed())
        .map(|r| r.id)
        .collect();
    if !passed.is_empty() {
        problem::group_line(
            out,
            term,
            Status::Pass,
            &format!("{} pass", passed.len()),
            &passed,
        );
    }
    for r in rows.iter().filter(|r| r.is_allowed()) {
        let lead = Lead::default()
            .push(term, term.mark(Status::Pass), Some(Paint::Allowed))
            .push(term, " ", None);
        let was = r
            .status_was
            .map(|s| format!(" (was {s})"))
            .unwrap_or_default();
        let text = format!(
            "{} allowed: {}{was}: {}",
            r.id,
            r.allowed.join(", "),
            r.summary
        );
        out.wrap_at_most(term, &lead, &text, lead.width(), 2);
    }
}

/// The notes no problem said: after everything, naming their checks.
pub fn rest_of_notes(out: &mut Screen, term: &Term, notes: &[SharedNote]) {
    for n in notes.iter().filter(|n| !n.said) {
        let lead = Lead::default()
            .push(term, "note", Some(Paint::Dim))
            .push(term, " ", None);
        out.wrap(
            term,
            &lead,
            &format!("({}): {}", n.ids.join(", "), n.text),
            2,
        );
    }
}
