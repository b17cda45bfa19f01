//! `spx-doctor path`'s table: a hop table per direction (what a packet of N
//! occupies at each hop, the hop's limit, carried or dropped, who tells the
//! sender), then the verdict, its code and the fix. Every cell and line is
//! made inert ([`super::inert`]); the table is the house table
//! ([`super::term::Term::table`]), so it takes the width and colour every
//! table takes.

use comfy_table::{Attribute, Cell, Color};
use spx_checks::path::judge::{Fate, Precision};
use spx_checks::path::report::{DirectionReport, PathVerdict};
use spx_checks::path::words;
use spx_checks::Status;

use super::inert::{cell, Lead, Screen};
use super::term::Paint;
use super::Style;

fn fate_cell(f: Fate, style: &Style) -> Cell {
    let c = cell(words::fate(f));
    if !style.term.color {
        return c;
    }
    match f {
        Fate::Dropped => c.fg(Color::Red).add_attribute(Attribute::Bold),
        Fate::Fragmented | Fate::Unread => c.fg(Color::Yellow),
        Fate::NotReached => c.fg(Color::DarkGrey),
        Fate::Carried => c.fg(Color::Green),
    }
}

fn direction(screen: &mut Screen, d: &DirectionReport, style: &Style) {
    let largest = match d.largest {
        Some(l) => match l.bound {
            Precision::Exact => format!("{}", l.bytes),
            Precision::AtLeast => format!("≥ {}", l.bytes),
            Precision::AtMost => format!("≤ {}", l.bytes),
        },
        None => "unknown".into(),
    };
    screen.line(format!(
        "{} → {}: a packet of {} bytes ({}; largest that crosses: {largest})",
        d.from, d.to, d.size, d.code
    ));
    let mut table = style.term.table();
    table.set_header(vec![
        cell("#"),
        cell("hop"),
        cell("node"),
        cell("where"),
        cell("bytes"),
        cell("limit"),
        cell("fate"),
        cell("sender learns"),
    ]);
    for (i, h) in d.hops.iter().enumerate() {
        table.add_row(vec![
            cell((i + 1).to_string()),
            cell(words::hop_kind(h.hop.kind)),
            cell(&h.hop.node),
            cell(&h.hop.name),
            cell(
                h.hop
                    .bytes
                    .map_or_else(|| "?".to_owned(), |b| b.to_string()),
            ),
            cell(&h.limit_text),
            fate_cell(h.hop.fate, style),
            cell(h.learns_text.as_deref().unwrap_or("")),
        ]);
    }
    screen.table(&table);
}

/// The whole answer.
pub fn table(v: &PathVerdict, style: &Style, replayed_from: Option<&str>) -> String {
    let mut screen = Screen::new();
    let term = &style.term;
    if let Some(b) = replayed_from {
        screen.line(format!("replayed from {b}"));
    }
    for d in &v.directions {
        direction(&mut screen, d, style);
    }
    let head = Lead::indent(0).push(
        term,
        &format!("{} {} {}", term.mark(v.status), v.code, v.status),
        Some(Paint::Status(v.status)),
    );
    screen.wrap(term, &head, "", 0);
    screen.wrap(term, &Lead::indent(2), &v.summary, 2);
    if v.status != Status::Pass || !v.remediation.is_empty() {
        for step in &v.remediation {
            screen.wrap(term, &Lead::indent(2).push(term, "fix: ", None), step, 7);
        }
    }
    for e in &v.ends {
        screen.line(format!(
            "  {}: on {} (chassis {}), facts {}",
            e.label,
            e.place.node(),
            e.place.bound().chassis,
            match &e.facts {
                Ok(_) => format!("via {}", e.via),
                Err(why) => format!("not read: {why}"),
            }
        ));
    }
    screen.into_string()
}
