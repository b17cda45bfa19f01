//! The judgement of `cluster.path-matrix`, pure: the matrix in, what it
//! proves out (the nodes cut off, the asymmetric pairs, each cell's kind,
//! the largest MTU every pair carries). No words here ([`super::words`]
//! says them).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::placement::{addresses_unknown, placed};
use super::{Cell, CellVerdict, PathMatrixKind, Unplaced};
use crate::checks::mtu_path::{PathMtuEvidence, PeerVerdict};
use crate::cluster::ClusterFacts;
use crate::finding::Status;

/// Why there is no matrix to judge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// mtu.path was not selected: no node measured its paths.
    NotSelected,
}

/// A node every measured path to and from which fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutOff {
    pub node: String,
    /// Its own link, when every path from it stopped there (local-mtu):
    /// then the narrow point is that link, not a switch port.
    pub own: Option<OwnLink>,
}

/// A node's own link below the target, as its own mtu.path found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnLink {
    /// Its devices below the target (name, MTU), bridge ports first.
    pub devices: Vec<(String, u32)>,
    pub target: u32,
    /// Beyond its link the path drops even less (a switch port too).
    pub beyond: bool,
}

/// The matrix and what it proves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// The selected nodes, in order.
    pub names: Vec<String>,
    /// Every ordered pair, rows in node order.
    pub cells: Vec<Cell>,
    /// Each cell's kind, in cell order.
    pub kinds: Vec<PathMatrixKind>,
    /// Results for addresses nothing places.
    pub unplaced: Vec<Unplaced>,
    /// The target each row's node probed for.
    pub targets: BTreeMap<String, u32>,
    /// Those targets, each once, lowest first.
    pub distinct_targets: Vec<u32>,
    pub cut_off: Vec<CutOff>,
    /// Pairs measured both ways where one direction carries the target and
    /// the other does not: (the one that carries it, the one that does not).
    /// Two failing directions at slightly different sizes are one problem,
    /// not two.
    pub asymmetric: Vec<(Cell, Cell)>,
    /// The largest MTU every measured pair carries.
    pub largest: Option<u32>,
    /// True when the lowest pair was measured to the byte (a pair that
    /// carries the target proves only that much).
    pub largest_exact: bool,
    /// Why a node's own addresses are unknown, for every node where they
    /// are.
    pub unknown: Vec<String>,
    /// Every node answered, and every answering node's mtu.path skipped.
    pub every_node_skipped: bool,
}

/// Place every node's results and judge the matrix.
pub fn analyse(facts: &ClusterFacts) -> Result<Analysis, Gate> {
    if !facts.selected("mtu.path") {
        return Err(Gate::NotSelected);
    }
    let (cells, unplaced) = placed(facts);
    let names: Vec<String> = facts.names().into_iter().map(str::to_owned).collect();
    // Every cell of a row has its node's target: one per row.
    let targets: BTreeMap<String, u32> = cells
        .chunk_by(|a, b| Arc::ptr_eq(&a.from, &b.from))
        .filter_map(|row| Some((row[0].from.to_string(), row[0].target?)))
        .collect();
    let mut distinct_targets: Vec<u32> = targets.values().copied().collect();
    distinct_targets.sort_unstable();
    distinct_targets.dedup();
    let grid = Grid::of(names.len(), &cells);
    let measured = || {
        cells
            .iter()
            .enumerate()
            .filter(|(_, c)| c.verdict.measured())
    };

    // Each node's measured paths, counted once over the cells: to and
    // from it, and how many of them fail.
    #[derive(Default, Clone)]
    struct Ends {
        measured: usize,
        failing: usize,
        from: bool,
        to: bool,
    }
    let mut ends: Vec<Ends> = vec![Ends::default(); names.len()];
    for (k, c) in measured() {
        let (row, col) = grid.ends(k);
        for (end, from) in [(row, true), (col, false)] {
            let e = &mut ends[end];
            e.measured += 1;
            e.failing += usize::from(c.verdict.fails());
            e.from |= from;
            e.to |= !from;
        }
    }
    let cut_off: Vec<&str> = names
        .iter()
        .zip(&ends)
        .filter(|(_, e)| e.measured >= 2 && e.failing == e.measured && e.from && e.to)
        .map(|(n, _)| n.as_str())
        .collect();

    let mut asymmetric = Vec::new();
    for (k, c) in measured() {
        let (row, col) = grid.ends(k);
        if row > col {
            continue;
        }
        let r = &cells[grid.reverse(k)];
        if !r.verdict.measured() {
            continue;
        }
        if c.verdict.fails() != r.verdict.fails() {
            let (good, bad) = if c.verdict.fails() { (r, c) } else { (c, r) };
            asymmetric.push((good.clone(), bad.clone()));
        }
    }

    let lowest = measured()
        .map(|(_, c)| c)
        .filter(|c| c.path_mtu.is_some())
        .min_by_key(|c| c.path_mtu);
    let largest = lowest.and_then(|c| c.path_mtu);
    let largest_exact = lowest.is_some_and(|c| c.verdict.fails() && !c.path_mtu_inexact);
    let cut: HashSet<&str> = cut_off.iter().copied().collect();
    let kinds = (0..cells.len())
        .map(|k| cell_kind(&cells[k], &cut, &cells[grid.reverse(k)]))
        .collect();
    let every_node_skipped = facts
        .answered()
        .filter_map(|n| n.check("mtu.path"))
        .all(|c| c.status == Status::Skip)
        && facts.unreached().next().is_none();
    Ok(Analysis {
        cut_off: cut_off
            .iter()
            .map(|k| CutOff {
                node: (*k).to_owned(),
                own: own_link(facts, &cells, k),
            })
            .collect(),
        names,
        kinds,
        unplaced,
        targets,
        distinct_targets,
        asymmetric,
        largest,
        largest_exact,
        unknown: facts.nodes.iter().filter_map(addresses_unknown).collect(),
        every_node_skipped,
        cells,
    })
}

/// Where a cell stands: [`placed`] makes every ordered pair of the nodes,
/// rows in node order and no cell from a node to itself, so a cell's row,
/// column and reverse follow from its index (a million cells at 1,024
/// nodes: no name is hashed or compared to find them).
#[derive(Clone, Copy)]
struct Grid {
    n: usize,
}

impl Grid {
    fn of(n: usize, cells: &[Cell]) -> Grid {
        assert_eq!(
            cells.len(),
            n * n.saturating_sub(1),
            "the matrix holds every ordered pair of distinct nodes"
        );
        Grid { n }
    }

    /// The row and column (node indices) of cell `k`.
    fn ends(self, k: usize) -> (usize, usize) {
        let w = self.n - 1;
        let (row, j) = (k / w, k % w);
        (row, j + usize::from(j >= row))
    }

    /// The cell of `row` and `col` (distinct).
    fn index(self, row: usize, col: usize) -> usize {
        row * (self.n - 1) + col - usize::from(col > row)
    }

    /// The cell of the other direction.
    fn reverse(self, k: usize) -> usize {
        let (row, col) = self.ends(k);
        self.index(col, row)
    }
}

/// When every measured path from node `k` stops at its own link (every
/// cell of its row local-mtu), the devices its own mtu.path names: then
/// the narrow point is that link, not a switch port.
fn own_link(facts: &ClusterFacts, cells: &[Cell], k: &str) -> Option<OwnLink> {
    let row: Vec<&Cell> = cells
        .iter()
        .filter(|c| &*c.from == k && c.verdict.measured())
        .collect();
    if row.is_empty() || row.iter().any(|c| c.verdict != CellVerdict::LocalMtu) {
        return None;
    }
    let e: PathMtuEvidence = facts
        .nodes
        .iter()
        .find(|n| n.name == k)?
        .evidence("mtu.path")?;
    let devices = e.own_links_below_target();
    if devices.is_empty() {
        return None;
    }
    Some(OwnLink {
        devices,
        target: e.target_mtu,
        beyond: e
            .peers
            .iter()
            .any(|p| p.verdict == PeerVerdict::LocalMtu && p.beyond.is_some()),
    })
}

/// The kind of one cell: a failing path through a node cut off from all
/// the others is that node's; a failing direction whose reverse carries
/// the target is asymmetric; any other failure is a path too small.
fn cell_kind(c: &Cell, cut_off: &HashSet<&str>, reverse: &Cell) -> PathMatrixKind {
    if c.verdict == CellVerdict::Ok {
        return PathMatrixKind::Ok;
    }
    if c.verdict == CellVerdict::NeighbourTableFull {
        return PathMatrixKind::NeighbourTableFull;
    }
    if !c.verdict.measured() {
        return PathMatrixKind::NotMeasured;
    }
    if cut_off.contains(&*c.from) || cut_off.contains(&*c.to) {
        return PathMatrixKind::CutOff;
    }
    if reverse.verdict == CellVerdict::Ok {
        PathMatrixKind::Asymmetric
    } else {
        PathMatrixKind::PathTooSmall
    }
}
