//! One check's result as the first screens say it, the same for this
//! node's report and for the node reports a cluster run gathered: a
//! problem's lines (its code and summary, what the levels did, its fixes
//! with a fix repeated per subject said once, its notes), and the one-line
//! groups of passes and skips.

use serde_json::Value;
use spx_checks::Status;

use super::fixes::{self, Fix};
use super::inert::{Lead, Screen};
use super::term::{width, Paint, Term};
use crate::report::CheckReport;

/// Columns a problem's own lines start in.
const INDENT: usize = 2;

/// A check's result, read from this run's report or from a node's JSON.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    pub id: &'a str,
    pub status: Status,
    pub code: &'a str,
    pub summary: &'a str,
    pub remediation: Vec<&'a str>,
    /// Its findings' subjects, in order.
    pub subjects: Vec<&'a str>,
    /// Its notes: (code, text).
    pub notes: Vec<(&'a str, &'a str)>,
    pub allowed: Vec<&'a str>,
    pub denied: Vec<&'a str>,
    pub status_was: Option<Status>,
}

impl<'a> Row<'a> {
    pub fn of_check(c: &'a CheckReport) -> Row<'a> {
        Row {
            id: c.id,
            status: c.status,
            code: &c.code,
            summary: &c.summary,
            remediation: c.remediation.iter().map(String::as_str).collect(),
            subjects: c.findings.iter().map(|f| f.subject.as_str()).collect(),
            notes: c
                .notes
                .iter()
                .map(|n| (n.kind.code(), n.text.as_str()))
                .collect(),
            allowed: c.allowed.iter().map(String::as_str).collect(),
            denied: c.denied.iter().map(String::as_str).collect(),
            status_was: c.status_was,
        }
    }

    /// A check of a node's JSON v1 report (a field it lacks is empty; a
    /// status it does not read as one is an error).
    pub fn of_json(v: &'a Value) -> Row<'a> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
        let strings = |k: &str| -> Vec<&'a str> {
            v.get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect()
        };
        let status = |k: &str| {
            v.get(k)
                .map(|s| serde::Deserialize::deserialize(s).unwrap_or(Status::Error))
        };
        let list = |k: &str| v.get(k).and_then(Value::as_array).into_iter().flatten();
        Row {
            id: s("id"),
            status: status("status").unwrap_or(Status::Error),
            code: s("code"),
            summary: s("summary"),
            remediation: strings("remediation"),
            // A finding, or its subject alone (as a cluster report's
            // node entry holds it).
            subjects: list("findings")
                .filter_map(|f| f.as_str().or_else(|| f.get("subject")?.as_str()))
                .collect(),
            notes: list("notes")
                .filter_map(|n| Some((n.get("code")?.as_str()?, n.get("text")?.as_str()?)))
                .collect(),
            allowed: strings("allowed"),
            denied: strings("denied"),
            status_was: status("status_was"),
        }
    }

    /// A problem an `--allow` made a pass.
    pub fn is_allowed(&self) -> bool {
        self.status == Status::Pass && self.status_was.is_some()
    }

    /// The code, or the id when a report gave none.
    pub fn code(&self) -> &'a str {
        if self.code.is_empty() {
            self.id
        } else {
            self.code
        }
    }

    /// What the problem lines compare to tell two nodes' problems apart.
    pub fn same_problem(&self, other: &Row) -> bool {
        self.status == other.status
            && self.code == other.code
            && self.summary == other.summary
            && self.remediation == other.remediation
            && self.notes == other.notes
            && self.denied == other.denied
            && self.status_was == other.status_was
    }
}

/// The mark of `status`, painted, and a space: how every line of a
/// result starts.
pub fn marked(term: &Term, status: Status) -> Lead {
    Lead::default()
        .push(term, term.mark(status), Some(Paint::Status(status)))
        .push(term, " ", None)
}

/// A note said once for several checks: its text and the checks.
pub struct SharedNote<'a> {
    pub code: &'a str,
    pub text: &'a str,
    pub ids: Vec<&'a str>,
    /// Said already, under one of its checks.
    pub said: bool,
}

/// Every note of `rows`, once, with the checks that gave it, in order.
pub fn notes<'a>(rows: &[Row<'a>]) -> Vec<SharedNote<'a>> {
    let mut out: Vec<SharedNote> = Vec::new();
    for r in rows {
        for &(code, text) in &r.notes {
            match out.iter_mut().find(|n| n.code == code && n.text == text) {
                Some(n) if !n.ids.contains(&r.id) => n.ids.push(r.id),
                Some(_) => {}
                None => out.push(SharedNote {
                    code,
                    text,
                    ids: vec![r.id],
                    said: false,
                }),
            }
        }
    }
    out
}

/// What to say about `row` besides its head line: under a cluster view,
/// the command that lists every subject runs on one of the nodes.
pub struct Problem<'a, 'n> {
    pub row: &'a Row<'a>,
    /// Who has it (a cluster's nodes), said before the code.
    pub who: Option<String>,
    /// The notes not yet said; the ones of this row are said here.
    pub notes: &'n mut [SharedNote<'a>],
}

impl Problem<'_, '_> {
    /// The problem's lines: mark, who, code and summary; what the levels
    /// did; the fixes; the notes not said yet.
    pub fn write(self, out: &mut Screen, term: &Term) {
        let row = self.row;
        let head = marked(term, row.status);
        let hang = head.width();
        let who = self.who.map(|w| format!("{w}: ")).unwrap_or_default();
        out.wrap(
            term,
            &head,
            &format!("{who}{}: {}", row.code(), row.summary),
            hang,
        );
        levels(out, term, row);
        for fix in fixes::grouped(&row.remediation, &row.subjects) {
            write_fix(out, term, row.id, &fix);
        }
        for n in self.notes.iter_mut().filter(|n| !n.said) {
            if !row.notes.contains(&(n.code, n.text)) {
                continue;
            }
            // Said once, here: under -v every check it concerns repeats it.
            n.said = true;
            let lead = Lead::indent(INDENT).push(term, "note: ", Some(Paint::Dim));
            out.wrap(term, &lead, n.text, INDENT + 6);
        }
    }
}

/// What `--deny` and `--allow` did to `row`.
fn levels(out: &mut Screen, term: &Term, row: &Row) {
    let lead = Lead::indent(INDENT);
    if !row.denied.is_empty() {
        out.wrap(
            term,
            &lead,
            &format!(
                "denied: {} (warnings of this kind fail)",
                row.denied.join(", ")
            ),
            INDENT + 2,
        );
    }
    if let Some(was) = row.status_was {
        out.wrap(
            term,
            &lead,
            &format!("was {was}; now {} ({})", row.status, row.code()),
            INDENT + 2,
        );
    }
}

/// One fix: a line said once, or the first subject's line and the others
/// named, cut after [`fixes::NAMED`] with the count and the command that
/// lists them all.
fn write_fix(out: &mut Screen, term: &Term, id: &str, fix: &Fix) {
    let lead = Lead::indent(INDENT).push(term, "fix: ", None);
    let hang = INDENT + 5;
    match fix {
        Fix::One(line) => {
            out.wrap(term, &lead, line, hang);
        }
        Fix::PerSubject { first, others } => {
            out.wrap(term, &lead, first, hang);
            let shown = others.len().min(fixes::NAMED - 1);
            let mut text = format!("the same for {}", others[..shown].join(", "));
            if others.len() > shown {
                text.push_str(&format!(
                    " {} and {} more: `{} --check {id} -v`",
                    term.sym(super::term::Sym::More),
                    others.len() - shown,
                    spx_checks::spinifex::doctor_command()
                ));
            }
            out.wrap(term, &Lead::indent(hang), &text, hang);
        }
    }
}

/// One line: `mark N what: ids`, cut to the width with `…`.
pub fn group_line(out: &mut Screen, term: &Term, status: Status, what: &str, ids: &[&str]) {
    let lead = marked(term, status);
    let hang = lead.width();
    out.wrap_at_most(term, &lead, &format!("{what}: {}", ids.join(", ")), hang, 1);
}

/// The skips, grouped by identical reason: `- N skip: REASON: ids` for a
/// reason several share, `- id: REASON` for one of its own; each one
/// line, a long reason cut in its middle (its start says what, its end
/// most often what to pass: `(pass --config PATH)`), the ids cut with `…`.
/// Every reason in full is under `-v`.
pub fn skip_lines(out: &mut Screen, term: &Term, rows: &[&Row]) {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in rows {
        match groups.iter_mut().find(|(why, _)| *why == r.summary) {
            Some((_, ids)) => ids.push(r.id),
            None => groups.push((r.summary, vec![r.id])),
        }
    }
    for (why, ids) in groups {
        let lead = marked(term, Status::Skip);
        let room = term.width.saturating_sub(lead.width());
        let text = match ids.as_slice() {
            [one] => {
                let head = format!("{one}: ");
                let why = squeezed(term, why, room.saturating_sub(width(&head)));
                format!("{head}{why}")
            }
            _ => {
                let head = format!("{} skip: ", ids.len());
                let why = squeezed(term, why, room * 3 / 5);
                format!("{head}{why}: {}", ids.join(", "))
            }
        };
        out.wrap_at_most(term, &lead, &text, lead.width(), 1);
    }
}

/// `text` (inert) in at most `room` columns: its first words and its
/// last, the middle said as `…`.
pub fn squeezed(term: &Term, text: &str, room: usize) -> String {
    let text = super::inert::inert(text);
    if width(&text) <= room {
        return text.into_owned();
    }
    let more = term.sym(super::term::Sym::More);
    let words: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
    let mut tail: Vec<&str> = Vec::new();
    let mut used = 0;
    for w in words.iter().rev() {
        if used + width(w) + 1 > room / 3 {
            break;
        }
        used += width(w) + 1;
        tail.insert(0, w);
    }
    let mut head: Vec<&str> = Vec::new();
    let budget = room.saturating_sub(used + width(more) + 1);
    let mut taken = 0;
    for w in &words[..words.len() - tail.len()] {
        if taken + width(w) + 1 > budget {
            break;
        }
        taken += width(w) + 1;
        head.push(w);
    }
    let mut out = head.join(" ");
    out.push(' ');
    out.push_str(more);
    if !tail.is_empty() {
        out.push(' ');
        out.push_str(&tail.join(" "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_check_reads_as_the_report_wrote_it() {
        let v = serde_json::json!({
            "id": "nic.rings", "status": "warn", "code": "nic.rings/shallow-ring",
            "summary": "eth0 rx ring 256", "remediation": ["ethtool -G eth0 rx 1024"],
            "findings": [{"subject": "eth0", "code": "nic.rings/shallow-ring"}],
            "notes": [{"code": "underlay-nic-from-default-route", "text": "eth0 is…"}],
            "status_was": "fail"
        });
        let r = Row::of_json(&v);
        assert_eq!(r.status, Status::Warn);
        assert_eq!(r.subjects, ["eth0"]);
        assert_eq!(r.notes, [("underlay-nic-from-default-route", "eth0 is…")]);
        assert_eq!(r.status_was, Some(Status::Fail));
        let odd = serde_json::json!({"id": "x.y", "status": "grand"});
        assert_eq!(Row::of_json(&odd).status, Status::Error);
        assert_eq!(Row::of_json(&odd).code(), "x.y");
    }
}
