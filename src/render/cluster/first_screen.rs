//! What is wrong in the cluster first, each fault said once: the nodes
//! that did not answer and why; the cluster checks that did not pass;
//! every node's problems, a problem several nodes share said once with
//! their names (`n1–n6, n8: mtu.path/black-hole: …`); the path matrix as
//! its cells below the target and a line that counts them; then one line
//! of passes and one of skips. `-v` draws everything ([`super::full`]).

use spx_checks::checks::cluster_path_matrix::CellVerdict;
use spx_checks::Status;

use super::names;
use crate::render::grouped::PROBLEMS;
use crate::render::inert::{Lead, Screen};
use crate::render::problem::{self, Problem, Row, SharedNote};
use crate::render::term::{Sym, Term};
use crate::report::cluster::{ClusterReport, NodeEntry};

/// The id of the check that says which nodes did not answer.
const REACHABLE: &str = "cluster.reachable";

pub fn body(out: &mut Screen, r: &ClusterReport, term: &Term) {
    let order: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    let nodes: Vec<(&str, Vec<Row>)> = r
        .nodes
        .iter()
        .map(|n| {
            (
                n.name.as_str(),
                n.checks().iter().map(Row::of_json).collect(),
            )
        })
        .collect();
    let cluster: Vec<Row> = r.checks.iter().map(Row::of_check).collect();
    let everything: Vec<Row> = nodes
        .iter()
        .flat_map(|(_, rows)| rows.iter().cloned())
        .chain(cluster.iter().cloned())
        .collect();
    let mut notes = problem::notes(&everything);
    unanswered(out, r, term, &cluster, &mut notes);
    for status in PROBLEMS {
        for row in cluster
            .iter()
            .filter(|c| c.status == status && c.id != REACHABLE)
        {
            Problem {
                row,
                who: None,
                notes: &mut notes,
            }
            .write(out, term);
        }
    }
    let matrix_failed = r.path_matrix.iter().any(|c| c.verdict.fails());
    if matrix_failed {
        matrix(out, r, term, &order);
    }
    node_problems(out, term, &order, &nodes, &mut notes);
    passes(out, term, &nodes, &cluster);
    if !matrix_failed && !r.path_matrix.is_empty() {
        matrix(out, r, term, &order);
    }
    skips(out, term, &nodes, &cluster);
}

/// The nodes without a report: `cluster.reachable`'s problem (its
/// summary names each, and why), or, when it was not judged, each node
/// with why.
fn unanswered<'a>(
    out: &mut Screen,
    r: &ClusterReport,
    term: &Term,
    cluster: &'a [Row<'a>],
    notes: &mut [SharedNote<'a>],
) {
    let reachable = cluster.iter().find(|c| c.id == REACHABLE);
    if let Some(row) = reachable.filter(|c| PROBLEMS.contains(&c.status)) {
        Problem {
            row,
            who: None,
            notes,
        }
        .write(out, term);
        return;
    }
    for n in r.nodes.iter().filter(|n| n.report.is_none()) {
        let lead = Lead::default()
            .push(term, term.sym(Sym::NoReport), None)
            .push(term, " ", None);
        let why = n.error.as_deref().unwrap_or("no report");
        out.wrap(term, &lead, &format!("{}: {} ({why})", n.name, n.status), 2);
    }
}

/// Every node check's problems: by status, then check, each group of
/// nodes that said exactly the same thing said once, with their names.
fn node_problems<'a>(
    out: &mut Screen,
    term: &Term,
    order: &[&str],
    nodes: &'a [(&'a str, Vec<Row<'a>>)],
    notes: &mut [SharedNote<'a>],
) {
    for status in PROBLEMS {
        for id in check_ids(nodes) {
            let mut groups: Vec<(Vec<&str>, &Row)> = Vec::new();
            for (name, rows) in nodes {
                for row in rows.iter().filter(|r| r.id == id && r.status == status) {
                    match groups.iter_mut().find(|(_, g)| g.same_problem(row)) {
                        Some((who, _)) => who.push(name),
                        None => groups.push((vec![name], row)),
                    }
                }
            }
            for (who, row) in groups {
                Problem {
                    row,
                    who: Some(names::said(term, order, &who)),
                    notes,
                }
                .write(out, term);
            }
        }
    }
}

/// The node check ids the nodes reported, in the order first seen (each
/// report is in catalogue order).
fn check_ids<'a>(nodes: &'a [(&'a str, Vec<Row<'a>>)]) -> Vec<&'a str> {
    let mut ids: Vec<&str> = Vec::new();
    for (_, rows) in nodes {
        for r in rows {
            if !ids.contains(&r.id) {
                ids.push(r.id);
            }
        }
    }
    ids
}

/// One line: how many results passed, and of which checks.
fn passes(out: &mut Screen, term: &Term, nodes: &[(&str, Vec<Row>)], cluster: &[Row]) {
    let mut ids: Vec<&str> = Vec::new();
    let mut count = 0;
    let all = cluster
        .iter()
        .chain(nodes.iter().flat_map(|(_, rows)| rows.iter()));
    for r in all.filter(|r| r.status == Status::Pass) {
        count += 1;
        if !ids.contains(&r.id) {
            ids.push(r.id);
        }
    }
    if count > 0 {
        problem::group_line(out, term, Status::Pass, &format!("{count} pass"), &ids);
    }
}

/// One line: how many results skipped, and of which checks (why is
/// under `-v`).
fn skips(out: &mut Screen, term: &Term, nodes: &[(&str, Vec<Row>)], cluster: &[Row]) {
    let mut ids: Vec<&str> = Vec::new();
    let mut count = 0;
    let all = cluster
        .iter()
        .chain(nodes.iter().flat_map(|(_, rows)| rows.iter()));
    for r in all.filter(|r| r.status == Status::Skip) {
        count += 1;
        if !ids.contains(&r.id) {
            ids.push(r.id);
        }
    }
    if count > 0 {
        let what = format!("{count} skip (why: -v)");
        problem::group_line(out, term, Status::Skip, &what, &ids);
    }
}

/// The path matrix in a few lines: how many paths carry the target, then
/// the cells below it, grouped (`n1–n11 → n12: 1500✘`).
fn matrix(out: &mut Screen, r: &ClusterReport, term: &Term, order: &[&str]) {
    let cells = &r.path_matrix;
    let failing: Vec<_> = cells.iter().filter(|c| c.verdict.fails()).collect();
    let ok = cells
        .iter()
        .filter(|c| c.verdict == CellVerdict::Ok)
        .count();
    let other = cells.len() - ok - failing.len();
    let target = targets(r);
    let mut line = if failing.is_empty() {
        format!("path MTU: {ok} of {} paths carry {target}", cells.len())
    } else {
        format!(
            "path MTU: {} of {} paths below {target} ({ok} carry it)",
            failing.len(),
            cells.len()
        )
    };
    if other > 0 {
        line.push_str(&format!("; {other} not measured or not judged"));
    }
    line.push_str("; -v draws the matrix");
    out.wrap(term, &Lead::default(), &line, 2);
    for (froms, tos, text) in failing_groups(r, term, order) {
        let text = format!(
            "{} → {}: {text}",
            names::said(term, order, &froms),
            names::said(term, order, &tos)
        );
        let text = if term.unicode {
            text
        } else {
            text.replace('→', "->")
        };
        out.wrap(term, &Lead::indent(2), &text, 4);
    }
}

/// The matrix's target(s): `9000`, or `9000/1500` when nodes differ.
fn targets(r: &ClusterReport) -> String {
    let mut t: Vec<u32> = r.path_matrix.iter().filter_map(|c| c.target).collect();
    t.sort_unstable();
    t.dedup();
    match t.as_slice() {
        [] => "the target".to_owned(),
        _ => t.iter().map(u32::to_string).collect::<Vec<_>>().join("/"),
    }
}

/// The cells below the target as (from nodes, to nodes, cell text): the
/// cells of one row with one text together, then the rows whose
/// destinations and text are the same together.
fn failing_groups<'a>(
    r: &'a ClusterReport,
    term: &Term,
    order: &[&str],
) -> Vec<(Vec<&'a str>, Vec<&'a str>, String)> {
    // The failing cells, by the row they are in, read in one pass (a
    // pass per row is a billion cells looked at, at 1,024 nodes).
    let answered = super::full::answered(r);
    let mut failing: std::collections::HashMap<&str, Vec<_>> = Default::default();
    for c in r.path_matrix.iter().filter(|c| c.verdict.fails()) {
        failing.entry(&*c.from).or_default().push(c);
    }
    let mut by_row: Vec<(&str, Vec<&str>, String)> = Vec::new();
    for from in order {
        for c in failing.remove(from).unwrap_or_default() {
            let text = super::full::cell_text(term, c, &answered);
            match by_row
                .iter_mut()
                .find(|(f, _, t)| *f == &*c.from && *t == text)
            {
                Some((_, tos, _)) => tos.push(&c.to),
                None => by_row.push((&c.from, vec![&c.to], text)),
            }
        }
    }
    let mut out: Vec<(Vec<&str>, Vec<&str>, String)> = Vec::new();
    for (from, tos, text) in by_row {
        match out.iter_mut().find(|(_, t, x)| *t == tos && *x == text) {
            Some((froms, _, _)) => froms.push(from),
            None => out.push((vec![from], tos, text)),
        }
    }
    out
}

/// The nodes whose own run was inconclusive or gave no report.
pub fn inconclusive_nodes(r: &ClusterReport) -> Vec<&str> {
    r.nodes
        .iter()
        .filter(|n: &&NodeEntry| n.exit_code() != Some(0) && n.exit_code() != Some(1))
        .map(|n| n.name.as_str())
        .collect()
}
