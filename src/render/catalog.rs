//! `spx-doctor list [--codes]` and `spx-doctor explain ID|CODE`, all from
//! `CHECKS` and the catalog of codes built from it.
//!
//! Both follow the screen's width and colour ([`super::term`]): the tables
//! fit the width, and explain's paragraphs are wrapped to it.

use comfy_table::{Attribute, Table};
use spx_checks::check::category;
use spx_checks::codes::{self, Code, Level};
use spx_checks::kind::{Origin, COMMON};
use spx_checks::spinifex::{as_invoked, doctor_command};
use spx_checks::Check;

use super::inert::{cell, Lead, Screen};
use super::term::{Paint, Term};

/// A table of `columns`, its header bold when the screen takes colour.
fn table(term: &Term, columns: [&str; 3]) -> Table {
    let mut table = term.table();
    table.set_header(columns.map(|c| {
        let c = cell(c);
        if term.color {
            c.add_attribute(Attribute::Bold)
        } else {
            c
        }
    }));
    table
}

fn drawn(table: &Table) -> String {
    let mut s = table.to_string();
    s.push('\n');
    s
}

pub fn list(checks: &[&'static dyn Check], term: &Term) -> String {
    let mut table = table(term, ["id", "category", "title"]);
    for c in checks {
        table.add_row(vec![c.id(), category(c.id()), c.title()]);
    }
    drawn(&table)
}

pub fn explain(check: &dyn Check, term: &Term) -> String {
    let scope = if check.scope() == spx_checks::Scope::Cluster {
        "(judged by `spx doctor --cluster` from every node's report)"
    } else if check.samples() {
        "(samples counters over the shared --sample window)"
    } else {
        "(a single reading)"
    };
    let mut out = Screen::new();
    heading(&mut out, term, check.id(), check.title());
    paragraphs(
        &mut out,
        term,
        &as_invoked(&format!("{scope}\n\n{}", check.explain())),
    );
    out.into_string()
}

/// `ID — TITLE`, the id bold.
fn heading(out: &mut Screen, term: &Term, id: &str, title: &str) {
    let dash = if term.unicode { "—" } else { "-" };
    let lead =
        Lead::default()
            .push(term, id, Some(Paint::Bold))
            .push(term, &format!(" {dash} "), None);
    out.wrap(term, &lead, title, 2);
}

/// `text`'s lines wrapped to the width, each keeping its own indent (a
/// `- ` item hanging under its text).
fn paragraphs(out: &mut Screen, term: &Term, text: &str) {
    for line in text.lines() {
        let body = line.trim_start();
        if body.is_empty() {
            out.line("");
            continue;
        }
        let indent = line.len() - body.len();
        let hang = if body.starts_with("- ") {
            indent + 2
        } else {
            indent
        };
        out.wrap(term, &Lead::indent(indent), body, hang);
    }
}

/// Every check's own codes, then the ones every check shares.
pub fn list_codes(term: &Term) -> String {
    let mut table = table(term, ["code", "status", "meaning"]);
    for c in codes::all().filter(|c| c.kind.origin != Origin::Common) {
        table.add_row(vec![c.code(), c.kind.status.to_string(), c.kind.text()]);
    }
    for k in spx_checks::path::codes() {
        table.add_row(vec![
            k.code(spx_checks::path::ID),
            k.status.to_string(),
            k.text(),
        ]);
    }
    for k in &COMMON {
        table.add_row(vec![
            format!("CHECK-ID/{}", k.name),
            k.status.to_string(),
            k.text(),
        ]);
    }
    drawn(&table)
}

pub fn explain_code(code: &Code, term: &Term) -> String {
    let c = code.check;
    let kind = code.kind;
    let mut levels = Vec::new();
    if Level::Allow.applies_to(kind) {
        levels.push(format!(
            "`{} --allow {}` (or `allow = [\"{}\"]` under [doctor] in the config) reports it as a pass, marked allowed.",
            doctor_command(),
            code.code(),
            code.code()
        ));
    }
    if Level::Deny.applies_to(kind) {
        levels.push(format!(
            "`{} --deny {}` makes it fail the run.",
            doctor_command(),
            code.code()
        ));
    }
    let mut s = format!(
        "{}\n\nReported by {} — {} (`{} explain {}`).\n",
        as_invoked(&kind.text()),
        c.id(),
        c.title(),
        doctor_command(),
        c.id()
    );
    if let Some(skip) = kind.skip {
        s.push_str(&format!(
            "In JSON: \"skip_reason\": \"{}\".\n",
            skip.as_str()
        ));
    }
    if !levels.is_empty() {
        s.push('\n');
        s.push_str(&levels.join("\n"));
        s.push('\n');
    }
    let mut out = Screen::new();
    heading(&mut out, term, &code.code(), &kind.status.to_string());
    paragraphs(&mut out, term, &s);
    out.into_string()
}

/// `explain path`: the question, what it reads and says, its codes.
pub fn explain_path() -> String {
    as_invoked(&format!(
        "{} — {}\n(a question of its own: `spx doctor path FROM TO`, not a check)\n\n{}\n",
        spx_checks::path::ID,
        spx_checks::path::TITLE,
        spx_checks::path::explain()
    ))
}

/// `explain path/KIND`.
pub fn explain_path_code(kind: &spx_checks::kind::KindDoc) -> String {
    as_invoked(&format!(
        "{} — {}\n{}\n\nReported by `spx doctor path FROM TO` — {} (`{} explain path`).\n",
        kind.code(spx_checks::path::ID),
        kind.status,
        kind.text(),
        spx_checks::path::TITLE,
        doctor_command()
    ))
}
