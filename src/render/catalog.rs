//! `spx-doctor list` and `spx-doctor explain ID`, both from `CHECKS`.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};
use spx_checks::check::category;
use spx_checks::Check;

pub fn list(checks: &[&'static dyn Check], width: Option<u16>) -> String {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_content_arrangement(ContentArrangement::Dynamic);
    table.force_no_tty();
    if let Some(w) = width {
        table.set_width(w);
    }
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
