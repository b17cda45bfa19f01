//! `-v` of a cluster run: everything the cluster report holds. A check ×
//! node matrix (one mark per cell), the cluster checks with their
//! evidence, the whole path-MTU matrix (rows from, columns to), then
//! everything that needs attention, grouped by check with the node
//! names. Matrices wider than the screen are split into column blocks
//! that each repeat the row names. Nodes stand in the report's order.

use comfy_table::{Attribute, Cell, Color};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

use spx_checks::checks::cluster_path_matrix::{Cell as MatrixCell, CellVerdict};
use spx_checks::{Scope, Status};

use crate::render::inert::{cell, cell_lines, Lead, Screen};
use crate::render::term::{Sym, Term};
use crate::render::verbose::marked;
use crate::render::Style;
use crate::report::cluster::{ClusterReport, NodeEntry};

/// Split columns so that each block fits `width`: `first` is the row-name
/// column's width, `cells[i]` each column's.
fn blocks(first: usize, cells: &[usize], width: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut used = first + 4;
    for (i, w) in cells.iter().enumerate() {
        if i > start && used + w + 3 > width {
            out.push(start..i);
            start = i;
            used = first + 4;
        }
        used += w + 3;
    }
    if start < cells.len() || cells.is_empty() {
        out.push(start..cells.len());
    }
    out
}

/// Column headers for `names`: the names themselves when one block of
/// them fits `width`, else the names without their common prefix (up to
/// its last `-`, `_` or `.`: `spx-node-01`… become `01`…) when that fits
/// better, with a note saying so.
fn headers(
    names: &[&str],
    first: usize,
    cell: usize,
    width: usize,
) -> (Vec<String>, Option<String>) {
    let full: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let widths =
        |h: &[String]| -> Vec<usize> { h.iter().map(|n| n.chars().count().max(cell)).collect() };
    if blocks(first, &widths(&full), width).len() <= 1 || names.len() < 2 {
        return (full, None);
    }
    let mut prefix: &str = names[0];
    for n in &names[1..] {
        let common = prefix
            .char_indices()
            .zip(n.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8());
        prefix = &prefix[..common];
    }
    let cut = prefix.rfind(['-', '_', '.']).map_or(0, |i| i + 1);
    let prefix = &names[0][..cut];
    if prefix.is_empty() {
        return (full, None);
    }
    let short: Vec<String> = names.iter().map(|n| n[cut..].to_owned()).collect();
    if short.iter().any(String::is_empty) {
        return (full, None);
    }
    let note = format!("(columns: the node names without \"{prefix}\")");
    (short, Some(note))
}

/// A matrix with one column per node, drawn as one table per block of
/// columns that fits the width, each block repeating the row names.
struct Grid<'a> {
    corner: &'a str,
    heads: &'a [String],
    note: Option<String>,
    widths: &'a [usize],
    first: usize,
    width: usize,
}

impl Grid<'_> {
    fn draw(
        &self,
        out: &mut Screen,
        term: &Term,
        rows: impl Fn(std::ops::Range<usize>) -> Vec<Vec<Cell>>,
    ) {
        if let Some(note) = &self.note {
            out.line(note);
        }
        for block in blocks(self.first, self.widths, self.width) {
            let mut t = term.table();
            let mut header = vec![cell(self.corner)];
            header.extend(self.heads[block.clone()].iter().map(cell));
            t.set_header(header);
            for row in rows(block) {
                t.add_row(row);
            }
            out.table(&t);
        }
    }
}

/// The node checks any node reported, in the catalogue's order (then
/// unknown ids: another node's site checks).
fn node_check_ids(nodes: &[NodeEntry]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for n in nodes {
        for (id, _) in &n.statuses {
            let cluster_scope = spx_checks::find(id).is_some_and(|c| c.scope() == Scope::Cluster);
            if !id.is_empty() && !cluster_scope && !seen.iter().any(|s| s == id) {
                seen.push(id.to_owned());
            }
        }
    }
    let catalogue = spx_checks::catalogue::all();
    let pos = |id: &str| {
        catalogue
            .iter()
            .position(|c| c.id() == id)
            .unwrap_or(usize::MAX)
    };
    seen.sort_by_key(|id| pos(id));
    seen
}

fn finding<'a>(n: &'a NodeEntry, id: &str) -> Option<&'a Value> {
    n.checks()
        .iter()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Everything, as the module says.
pub fn body(out: &mut Screen, r: &ClusterReport, style: &Style) {
    let ids = node_check_ids(&r.nodes);
    check_grid(out, r, style, &ids);
    cluster_checks(out, r, style);
    matrix(out, r, style);
    results(out, r, &style.term, &ids);
    out.line(format!(
        "marks: {} pass  {} warn  {} fail  {} skip  {} error  {} no report",
        style.term.mark(Status::Pass),
        style.term.mark(Status::Warn),
        style.term.mark(Status::Fail),
        style.term.mark(Status::Skip),
        style.term.mark(Status::Error),
        style.term.sym(Sym::NoReport)
    ));
}

/// 1. The node checks × the nodes, one mark per cell.
fn check_grid(out: &mut Screen, r: &ClusterReport, style: &Style, ids: &[String]) {
    let term = &style.term;
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    let no_report = term.sym(Sym::NoReport);
    let first = ids.iter().map(|i| i.len()).max().unwrap_or(5).max(5);
    let (heads, note) = headers(&names, first, 1, term.width);
    let widths: Vec<usize> = heads.iter().map(|n| n.chars().count()).collect();
    let grid = Grid {
        corner: "check",
        heads: &heads,
        note,
        widths: &widths,
        first,
        width: term.width,
    };
    grid.draw(out, term, |block| {
        let mut rows = Vec::new();
        if ids.is_empty() {
            let mut row = vec![cell("(no node check)")];
            row.extend(
                r.nodes[block.clone()]
                    .iter()
                    .map(|n| cell(if n.report.is_some() { "" } else { no_report })),
            );
            rows.push(row);
        }
        for id in ids {
            let mut row = vec![cell(id)];
            for n in &r.nodes[block.clone()] {
                row.push(match (&n.report, n.status_of(id)) {
                    (None, _) => cell(no_report),
                    (Some(_), None) => cell(""),
                    (Some(_), Some(st)) => marked(style, st),
                });
            }
            rows.push(row);
        }
        rows
    });
}

/// 2. The cluster checks, with their evidence.
fn cluster_checks(out: &mut Screen, r: &ClusterReport, style: &Style) {
    if r.checks.is_empty() {
        return;
    }
    let mut t = style.term.table();
    t.set_header(vec![cell(""), cell("cluster check"), cell("summary")]);
    for c in &r.checks {
        let mut detail = vec![c.summary.clone()];
        for fix in &c.remediation {
            detail.push(format!("  fix: {fix}"));
        }
        detail.push(format!("  code: {}", c.code));
        for (k, text) in c.evidence.texts() {
            detail.push(format!("  {k}: {}", evidence_text(text)));
        }
        t.add_row(vec![
            marked(style, c.status),
            cell(c.id),
            cell_lines(&detail),
        ]);
    }
    out.table(&t);
}

/// Evidence longer than a screen holds is not drawn: a table cell of it
/// costs minutes (64 nodes: the matrix's 4,032 cells are 265 KB, drawn
/// above as the matrix), and the JSON carries all of it.
const EVIDENCE_DRAWN: usize = 4096;

/// An evidence value as the table prints it, or its size and where it is.
fn evidence_text(text: String) -> String {
    if text.len() <= EVIDENCE_DRAWN {
        text
    } else {
        format!("({} bytes of JSON: all of it in --format json)", text.len())
    }
}

/// The path matrix looked up by (from, to), and who answered: 64 nodes
/// are 4,032 cells, each drawn once.
pub struct Cells<'a> {
    by_pair: HashMap<(&'a str, &'a str), &'a MatrixCell>,
    answered: HashSet<&'a str>,
}

/// The nodes of `r` with a report.
pub fn answered(r: &ClusterReport) -> HashSet<&str> {
    r.nodes
        .iter()
        .filter(|n| n.report.is_some())
        .map(|n| n.name.as_str())
        .collect()
}

impl<'a> Cells<'a> {
    pub fn of(r: &'a ClusterReport) -> Cells<'a> {
        Cells {
            by_pair: r
                .path_matrix
                .iter()
                .map(|c| ((&*c.from, &*c.to), c))
                .collect(),
            answered: answered(r),
        }
    }

    /// A cell as drawn: its path MTU (`+` when more was not ruled out),
    /// `✘` below the target, or why there is none.
    pub fn text(&self, term: &Term, from: &str, to: &str) -> String {
        if from == to {
            return term.sym(Sym::Itself).into();
        }
        let Some(c) = self.by_pair.get(&(from, to)) else {
            return String::new();
        };
        cell_text(term, c, &self.answered)
    }
}

/// Cell `c` as drawn (`answered`: the nodes with a report).
pub fn cell_text(term: &Term, c: &MatrixCell, answered: &HashSet<&str>) -> String {
    let mut mtu = c.path_mtu.map_or("?".into(), |m| m.to_string());
    if c.path_mtu_inexact {
        mtu.push('+');
    }
    match c.verdict {
        CellVerdict::Ok => mtu,
        v if v.fails() => format!("{mtu}{}", term.sym(Sym::Below)),
        CellVerdict::Unreachable => "no-echo".into(),
        CellVerdict::NotProbed => "n/p".into(),
        _ if !answered.contains(&*c.from) => term.sym(Sym::NoReport).into(),
        _ => "?".into(),
    }
}

/// 3. The whole path-MTU matrix, rows from, columns to.
fn matrix(out: &mut Screen, r: &ClusterReport, style: &Style) {
    if r.path_matrix.is_empty() {
        return;
    }
    let term = &style.term;
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    let below = term.sym(Sym::Below);
    let cells = Cells::of(r);
    let texts: HashMap<(&str, &str), String> = names
        .iter()
        .flat_map(|to| names.iter().map(move |from| (*from, *to)))
        .map(|(from, to)| ((from, to), cells.text(term, from, to)))
        .collect();
    let widest_cell = texts.values().map(|t| t.chars().count()).max().unwrap_or(1);
    let first = names.iter().map(|n| n.len()).max().unwrap_or(4).max(9);
    let (heads, note) = headers(&names, first, widest_cell, term.width);
    let cell_widths: Vec<usize> = heads
        .iter()
        .map(|h| h.chars().count().max(widest_cell))
        .collect();
    out.line("path MTU, rows from, columns to:");
    let grid = Grid {
        corner: "from \\ to",
        heads: &heads,
        note,
        widths: &cell_widths,
        first,
        width: term.width,
    };
    grid.draw(out, term, |block| {
        names
            .iter()
            .map(|from| {
                let mut row = vec![cell(from)];
                for to in &names[block.clone()] {
                    let text = &texts[&(*from, *to)];
                    let c = cell(text);
                    row.push(if term.color && text.ends_with(below) {
                        c.fg(Color::Red).add_attribute(Attribute::Bold)
                    } else {
                        c
                    });
                }
                row
            })
            .collect()
    });
    let no_report = term.sym(Sym::NoReport);
    for line in [
        format!("  N{below}: carries only N, below the target (blackhole, too-big, local-mtu)"),
        "  N+: N proven, more not ruled out; no-echo: the peer answered no echo".to_owned(),
        format!("  n/p: not probed; ?: not measured; {no_report}: the row's node gave no report"),
    ] {
        out.wrap(term, &Lead::default(), &line, 4);
    }
}

/// Step 4: every node's result of every node check, by check, the nodes
/// that said exactly the same thing together.
fn results(out: &mut Screen, r: &ClusterReport, term: &Term, ids: &[String]) {
    let mut lines: Vec<String> = Vec::new();
    for id in ids {
        node_results(&mut lines, r, term, id);
    }
    if lines.is_empty() {
        return;
    }
    out.line("");
    out.line("Every node's results, by check:");
    for line in &lines {
        let indent = line.len() - line.trim_start().len();
        out.wrap(term, &Lead::indent(indent), line.trim_start(), indent + 2);
    }
    out.line("");
}

/// Check `id` on the nodes: who has which status, then each group of
/// nodes that said the same, with its code, fixes and notes.
fn node_results(lines: &mut Vec<String>, r: &ClusterReport, term: &Term, id: &str) {
    let order: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    let said: Vec<(&NodeEntry, Status, &Value)> = r
        .nodes
        .iter()
        .filter_map(|n| Some((n, n.status_of(id)?, finding(n, id)?)))
        .collect();
    if said.is_empty() {
        return;
    }
    let mut by_status: Vec<String> = Vec::new();
    for st in [
        Status::Fail,
        Status::Error,
        Status::Warn,
        Status::Skip,
        Status::Pass,
    ] {
        let who: Vec<&str> = said
            .iter()
            .filter(|(_, status, _)| *status == st)
            .map(|(n, _, _)| n.name.as_str())
            .collect();
        if !who.is_empty() {
            by_status.push(format!(
                "{st} on {}",
                super::names::said(term, &order, &who)
            ));
        }
    }
    lines.push(format!("{id}: {}", by_status.join("; ")));
    let mut groups: Vec<(Vec<&str>, Status, &Value)> = Vec::new();
    for (n, st, c) in &said {
        match groups.iter_mut().find(|(_, s2, g)| {
            s2 == st
                && s(g, "summary") == s(c, "summary")
                && g.get("remediation") == c.get("remediation")
                && g.get("code") == c.get("code")
                && g.get("notes") == c.get("notes")
        }) {
            Some((who, _, _)) => who.push(&n.name),
            None => groups.push((vec![n.name.as_str()], *st, c)),
        }
    }
    for (who, st, c) in groups {
        lines.push(format!(
            "  {}: {st} {}: {}",
            super::names::said(term, &order, &who),
            s(c, "code"),
            s(c, "summary")
        ));
        for fix in c
            .get("remediation")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            lines.push(format!("    fix: {}", fix.as_str().unwrap_or("")));
        }
        for note in c
            .get("notes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            lines.push(format!("    note: {}", s(note, "text")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_matrices_split_into_blocks_that_fit() {
        // 8 nodes of 4 characters: one block in 80 columns.
        assert_eq!(blocks(20, &[4; 8], 80), vec![0..8]);
        // 16 of them: two blocks.
        let b = blocks(20, &[4; 16], 80);
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(b[0].end, b[1].start);
        assert_eq!(b[1].end, 16);
        // A column wider than the budget still gets a block of its own.
        assert_eq!(blocks(20, &[200], 80), vec![0..1]);
    }
}
