//! The table of a cluster run: a check × node matrix (one mark per cell),
//! the cluster checks, the path-MTU matrix (rows from, columns to), then
//! everything that needs attention, grouped by check with the node names,
//! and the runbook of a preflight. Matrices wider than the terminal (120
//! columns when it is not one) are split into column blocks that each
//! repeat the row names.

use comfy_table::{Attribute, Cell, Color};
use serde_json::Value;
use spx_checks::checks::cluster_path_matrix::CellVerdict;
use spx_checks::{Scope, Status};

use super::inert::{cell, cell_lines, Screen};
use super::table::{color, mark, new_table};
use super::Style;
use crate::report::cluster::{needs_attention, ClusterReport, NodeEntry};

/// The mark of a node that has no report.
const NO_REPORT: &str = "∅";
/// Width budget when stdout is not a terminal.
const DEFAULT_WIDTH: usize = 120;

fn marked(s: Status, style: &Style) -> Cell {
    let c = cell(mark(s));
    if style.color {
        c.fg(color(s)).add_attribute(Attribute::Bold)
    } else {
        c
    }
}

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
        style: &Style,
        rows: impl Fn(std::ops::Range<usize>) -> Vec<Vec<Cell>>,
    ) {
        if let Some(note) = &self.note {
            out.line(note);
        }
        for block in blocks(self.first, self.widths, self.width) {
            let mut t = new_table(style);
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

pub fn table(r: &ClusterReport, style: &Style) -> String {
    let width = style.width.map_or(DEFAULT_WIDTH, usize::from);
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut out = Screen::new();

    // 1. check x node
    let ids = node_check_ids(&r.nodes);
    let first = ids.iter().map(|i| i.len()).max().unwrap_or(5).max(5);
    let (heads, note) = headers(&names, first, 1, width);
    let widths: Vec<usize> = heads.iter().map(|n| n.chars().count()).collect();
    let grid = Grid {
        corner: "check",
        heads: &heads,
        note,
        widths: &widths,
        first,
        width,
    };
    grid.draw(&mut out, style, |block| {
        let mut rows = Vec::new();
        if ids.is_empty() {
            let mut row = vec![cell("(no node check)")];
            row.extend(
                r.nodes[block.clone()]
                    .iter()
                    .map(|n| cell(if n.report.is_some() { "" } else { NO_REPORT })),
            );
            rows.push(row);
        }
        for id in &ids {
            let mut row = vec![cell(id)];
            for n in &r.nodes[block.clone()] {
                row.push(match (&n.report, n.status_of(id)) {
                    (None, _) => cell(NO_REPORT),
                    (Some(_), None) => cell(""),
                    (Some(_), Some(st)) => marked(st, style),
                });
            }
            rows.push(row);
        }
        rows
    });

    // 2. the cluster checks
    if !r.checks.is_empty() {
        let mut t = new_table(style);
        t.set_header(vec![cell(""), cell("cluster check"), cell("summary")]);
        for c in &r.checks {
            let mut detail = vec![c.summary.clone()];
            if style.verbose {
                for (k, v) in &c.evidence {
                    detail.push(format!("  {k}: {v}"));
                }
            }
            t.add_row(vec![
                marked(c.status, style),
                cell(c.id),
                cell_lines(&detail),
            ]);
        }
        out.table(&t);
    }

    // 3. the path-MTU matrix
    if !r.path_matrix.is_empty() {
        let cell_text = |from: &str, to: &str| -> String {
            if from == to {
                return "·".into();
            }
            let Some(c) = r.path_matrix.iter().find(|c| c.from == from && c.to == to) else {
                return String::new();
            };
            let from_answered = r.nodes.iter().any(|n| n.name == from && n.report.is_some());
            let mut mtu = c.path_mtu.map_or("?".into(), |m| m.to_string());
            if c.path_mtu_inexact {
                mtu.push('+');
            }
            match c.verdict {
                CellVerdict::Ok => mtu,
                v if v.fails() => format!("{mtu}✘"),
                CellVerdict::Unreachable => "no-echo".into(),
                CellVerdict::NotProbed => "n/p".into(),
                _ if !from_answered => NO_REPORT.into(),
                _ => "?".into(),
            }
        };
        let widest_cell = names
            .iter()
            .flat_map(|to| names.iter().map(move |from| (from, to)))
            .map(|(from, to)| cell_text(from, to).chars().count())
            .max()
            .unwrap_or(1);
        let first = names.iter().map(|n| n.len()).max().unwrap_or(4).max(9);
        let (heads, note) = headers(&names, first, widest_cell, width);
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
            width,
        };
        grid.draw(&mut out, style, |block| {
            names
                .iter()
                .map(|from| {
                    let mut row = vec![cell(from)];
                    for to in &names[block.clone()] {
                        let text = cell_text(from, to);
                        let c = cell(&text);
                        row.push(if style.color && text.ends_with('✘') {
                            c.fg(Color::Red).add_attribute(Attribute::Bold)
                        } else {
                            c
                        });
                    }
                    row
                })
                .collect()
        });
        out.line("  N✘: carries only N, below the target (blackhole, too-big, local-mtu)");
        out.line("  N+: N proven, more not ruled out; no-echo: the peer answered no echo");
        out.line("  n/p: not probed; ?: not measured");
    }

    // 4. what needs attention, grouped by check
    let mut attention: Vec<String> = Vec::new();
    for id in &ids {
        let bad: Vec<(&NodeEntry, Status, &Value)> = r
            .nodes
            .iter()
            .filter_map(|n| Some((n, n.status_of(id)?, finding(n, id)?)))
            .filter(|(_, st, _)| needs_attention(*st))
            .collect();
        if bad.is_empty() {
            continue;
        }
        let mut by_status: Vec<String> = Vec::new();
        for st in [Status::Fail, Status::Error, Status::Warn] {
            let who: Vec<&str> = bad
                .iter()
                .filter(|(_, status, _)| *status == st)
                .map(|(n, _, _)| n.name.as_str())
                .collect();
            if !who.is_empty() {
                by_status.push(format!("{st} on {}", who.join(", ")));
            }
        }
        attention.push(format!("{id}: {}", by_status.join("; ")));
        // Nodes that said exactly the same thing are listed together.
        let mut groups: Vec<(Vec<&str>, &Value)> = Vec::new();
        for (n, _, c) in &bad {
            match groups.iter_mut().find(|(_, g)| {
                s(g, "summary") == s(c, "summary") && g.get("remediation") == c.get("remediation")
            }) {
                Some((who, _)) => who.push(&n.name),
                None => groups.push((vec![n.name.as_str()], c)),
            }
        }
        for (who, c) in groups {
            attention.push(format!("  {}: {}", who.join(", "), s(c, "summary")));
            for fix in c
                .get("remediation")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                attention.push(format!("    fix: {}", fix.as_str().unwrap_or("")));
            }
        }
    }
    for c in r.checks.iter().filter(|c| needs_attention(c.status)) {
        attention.push(format!("{}: {}", c.id, c.status));
        attention.push(format!("  {}", c.summary));
        for fix in &c.remediation {
            attention.push(format!("    fix: {fix}"));
        }
    }
    let unreachable: Vec<&NodeEntry> = r.nodes.iter().filter(|n| n.report.is_none()).collect();
    if !attention.is_empty() {
        out.line("");
        out.line("Needs attention:");
        for line in &attention {
            out.wrapped(line, width);
        }
    }

    let sm = &r.summary;
    out.line("");
    out.line(format!(
        "{} nodes ({} answered{}); {}",
        sm.nodes,
        sm.nodes - sm.unreachable,
        if unreachable.is_empty() {
            String::new()
        } else {
            format!(
                ", {} did not: {}",
                unreachable.len(),
                unreachable
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        match &r.ovn_read_by {
            Some(reader) => format!("OVN NB/SB read once, by {reader}"),
            None => "each agent's own periodic reports, from the bucket".to_owned(),
        },
    ));
    out.line(format!(
        "{} results: {} pass, {} warn, {} fail, {} skip, {} error; exit {}{}",
        sm.pass + sm.warn + sm.fail + sm.skip + sm.error,
        sm.pass,
        sm.warn,
        sm.fail,
        sm.skip,
        sm.error,
        r.exit_code,
        match r.profile.0 {
            None => String::new(),
            Some(p) => format!(" (preflight {})", p.name()),
        }
    ));
    out.line(format!(
        "marks: {} pass  {} warn  {} fail  {} skip  {} error  {NO_REPORT} no report",
        mark(Status::Pass),
        mark(Status::Warn),
        mark(Status::Fail),
        mark(Status::Skip),
        mark(Status::Error)
    ));
    if let Some(runbook) = &r.runbook {
        out.line("");
        out.line("Runbook:");
        for (i, step) in runbook.iter().enumerate() {
            out.wrapped(format!("{:>3}. {step}", i + 1), width);
        }
    }
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::cluster::{ClusterReport, ClusterSummary, NodeEntry};
    use crate::report::{CheckReport, Tool};
    use spx_checks::checks::cluster_path_matrix::{Cell as MatrixCell, CellVerdict};

    /// Eight nodes with names of ten characters, every node check, one
    /// failing on two nodes, a black hole in the matrix.
    fn eight() -> ClusterReport {
        let names: Vec<String> = (1..=8).map(|i| format!("spx-node-0{i}")).collect();
        let checks: Vec<Value> = spx_checks::CHECKS
            .iter()
            .filter(|c| c.scope() == Scope::Node)
            .map(|c| {
                serde_json::json!({"id": c.id(), "title": "t", "status": "pass", "summary": "fine",
                                   "evidence": {}, "remediation": [], "duration_ms": 1})
            })
            .collect();
        let nodes = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut checks = checks.clone();
                if i == 2 || i == 5 {
                    checks[2]["status"] = "fail".into();
                    checks[2]["summary"] = "1 of 7 peers cannot carry 9000 bytes: 198.18.0.8 black-holes packets above 1500 bytes (no \"fragmentation needed\" comes back)".into();
                    checks[2]["remediation"] = serde_json::json!(["either configure the fabric for jumbo frames (a switch between this host and 198.18.0.8 silently drops frames above 1500 bytes; every switch port, VLAN and router on the path must carry 9000), or revert as below"]);
                }
                NodeEntry::of(
                    &spx_checks::cluster::NodeAnswer::new(
                        n.clone(),
                        Some(format!("198.19.0.{}", i + 1)),
                        Ok(serde_json::json!({"checks": checks, "exit_code": 0})),
                    ),
                    "ssh",
                )
            })
            .collect();
        let mut path_matrix = Vec::new();
        for a in &names {
            for b in &names {
                if a != b {
                    let hole = a.ends_with('8') || b.ends_with('8');
                    path_matrix.push(MatrixCell {
                        from: a.clone(),
                        to: b.clone(),
                        verdict: if hole {
                            CellVerdict::BlackHole
                        } else {
                            CellVerdict::Ok
                        },
                        path_mtu: Some(if hole { 1500 } else { 9000 }),
                        path_mtu_inexact: false,
                        target: Some(9000),
                        detail: None,
                    });
                }
            }
        }
        ClusterReport {
            schema_version: 1,
            kind: "cluster",
            tool: Tool { name: "spx-doctor", version: "0.1.0" },
            profile: spx_checks::profile::RunProfile::default(),
            started_at: "2026-01-01T00:00:00.000Z".into(),
            duration_ms: 2000,
            exit_code: 1,
            summary: ClusterSummary { nodes: 8, ..ClusterSummary::default() },
            ovn_read_by: Some("spx-node-01".into()),
            via: "ssh",
            nodes,
            checks: vec![CheckReport {
                title: "t",
                summary: "14 of 56 paths cannot carry 9000 bytes: every path to and from spx-node-08 (carries 1500: spx-node-08's link or its switch port): spx-node-01<->spx-node-08, spx-node-02<->spx-node-08".into(),
                remediation: vec!["spx-node-08: every path to and from it fails: configure its switch port".into()],
                ..crate::report::tests::c("cluster.path-matrix", Status::Fail)
            }],
            path_matrix,
            runbook: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn eight_nodes_fit_80_and_120_columns() {
        let r = eight();
        for width in [80u16, 120] {
            let style = Style {
                verbose: false,
                color: false,
                width: Some(width),
                strict: false,
            };
            let text = table(&r, &style);
            for line in text.lines() {
                assert!(
                    line.chars().count() <= usize::from(width),
                    "{} > {width}: {line}\n{text}",
                    line.chars().count()
                );
            }
            for n in &r.nodes {
                assert!(text.contains(&n.name), "{text}");
            }
            assert!(text.contains("1500✘"), "{text}");
            assert!(
                text.contains("mtu.path: fail on spx-node-03, spx-node-06"),
                "{text}"
            );
            // Both matrices in one block each, the columns named without
            // the common prefix.
            assert_eq!(text.matches("│ check ").count(), 1, "{text}");
            assert_eq!(text.matches("│ from \\ to ").count(), 1, "{text}");
            assert!(
                text.contains("(columns: the node names without \"spx-node-\")"),
                "{text}"
            );
            assert!(text.contains("│ spx-node-08 ┆ 1500✘"), "{text}");
        }
    }

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
