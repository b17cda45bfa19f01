//! `spx-doctor list [--codes]` and `spx-doctor explain ID|CODE`, all from
//! `CHECKS` and the catalog of codes built from it.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};
use spx_checks::check::category;
use spx_checks::codes::{self, Code, Level};
use spx_checks::kind::{Origin, COMMON};
use spx_checks::spinifex::{as_invoked, doctor_command};
use spx_checks::Check;

fn table(width: Option<u16>) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_content_arrangement(ContentArrangement::Dynamic);
    table.force_no_tty();
    if let Some(w) = width {
        table.set_width(w);
    }
    table
}

pub fn list(checks: &[&'static dyn Check], width: Option<u16>) -> String {
    let mut table = table(width);
    table.set_header(vec!["id", "category", "title"]);
    for c in checks {
        table.add_row(vec![c.id(), category(c.id()), c.title()]);
    }
    let mut s = table.to_string();
    s.push('\n');
    s
}

pub fn explain(check: &dyn Check) -> String {
    spx_checks::spinifex::as_invoked(&format!(
        "{} — {}\n{}\n\n{}\n",
        check.id(),
        check.title(),
        if check.scope() == spx_checks::Scope::Cluster {
            "(judged by `spx doctor --cluster` from every node's report)"
        } else if check.samples() {
            "(samples counters over the shared --sample window)"
        } else {
            "(a single reading)"
        },
        check.explain()
    ))
}

/// Every check's own codes, then the ones every check shares.
pub fn list_codes(width: Option<u16>) -> String {
    let mut table = table(width);
    table.set_header(vec!["code", "status", "meaning"]);
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
    let mut s = table.to_string();
    s.push('\n');
    s
}

pub fn explain_code(code: &Code) -> String {
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
        "{} — {}\n{}\n\nReported by {} — {} (`{} explain {}`).\n",
        code.code(),
        kind.status,
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
    s
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
