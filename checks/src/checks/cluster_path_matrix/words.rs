//! How `cluster.path-matrix` says what [`super::analyse`] found: each cell's
//! subject, the words and fix of a node cut off, of failing pairs and of
//! asymmetric ones beside their kinds, the headline, and the evidence.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;

use compact_str::{format_compact, CompactString};

use super::analyse::{Analysis, CutOff, Gate, OwnLink};
use super::placement::outcome;
use super::{Cell, CellVerdict, PathMatrixEvidence, PathMatrixKind, Unplaced};
use crate::cluster::{and_list, pair};
use crate::finding::{Finding, SkipReason, Subject};
use crate::kind::most_severe;
use crate::spinifex;

impl Cell {
    /// `blackhole at 1500`, `ok at 9000`, `not-probed`.
    fn outcome(&self) -> CompactString {
        outcome(self.verdict, self.path_mtu)
    }

    /// Its subject: what its row's node measured, and why nothing when
    /// nothing was.
    /// Made inline: a million of them at 1,024 nodes, most of them
    /// `n12->n345` and `ok at 9000`, each fits without a heap allocation.
    fn subject(&self, kind: PathMatrixKind) -> Subject {
        let text = match (&self.detail, self.verdict.measured()) {
            (Some(d), false) => format_compact!("{}: {d}", self.outcome()),
            _ => self.outcome(),
        };
        Subject::new(kind, format_compact!("{}->{}", self.from, self.to), text)
    }
}

/// Pairs of a node cut off that its summary names before it counts the
/// rest.
const CUT_OFF_PAIRS_NAMED: usize = 10;

/// `a<->b` for pairs failing both ways, `a->b` otherwise, in matrix order,
/// each with the first cell it stands for.
fn pair_names<'a>(failing: &[&'a Cell]) -> Vec<(String, &'a Cell)> {
    let pairs: HashSet<(&str, &str)> = failing.iter().map(|c| (&*c.from, &*c.to)).collect();
    let mut seen: HashSet<String> = HashSet::new();
    let mut out: Vec<(String, &Cell)> = Vec::new();
    for c in failing {
        let reverse = pairs.contains(&(&*c.to, &*c.from));
        let name = if reverse {
            // Natural order: n2<->n12, never n12<->n2.
            let (a, b) = if crate::natural::cmp(&c.from, &c.to).is_le() {
                (&c.from, &c.to)
            } else {
                (&c.to, &c.from)
            };
            format!("{a}<->{b}")
        } else {
            pair(&c.from, &c.to)
        };
        if seen.insert(name.clone()) {
            out.push((name, c));
        }
    }
    out
}

fn names_only(pairs: &[(String, &Cell)]) -> Vec<String> {
    pairs.iter().map(|(n, _)| n.clone()).collect()
}

impl OwnLink {
    fn names(&self) -> Vec<&str> {
        self.devices.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// `eth0 at 1500`, `enp1s0 at 1500 and br-vpc at 1500`.
    fn shown(&self) -> String {
        let each: Vec<String> = self
            .devices
            .iter()
            .map(|(n, m)| format!("{n} at {m}"))
            .collect();
        and_list(&each)
    }
}

impl CutOff {
    /// `every path to and from n3 (carries 1500: n3's link or its switch
    /// port): n0<->n3, …`; `through` are the failing cells of its paths.
    fn said(&self, through: &[&Cell]) -> String {
        let k = &self.node;
        let lowest = through.iter().filter_map(|c| c.path_mtu).min();
        let why = match (&self.own, lowest) {
            (Some(o), Some(m)) => format!(" (carries {m}: {k}'s own link, {})", o.shown()),
            (Some(o), None) => format!(" ({k}'s own link, {})", o.shown()),
            (None, Some(m)) => format!(" (carries {m}: {k}'s link or its switch port)"),
            (None, None) => String::new(),
        };
        // Every pair has k at one end: past ten, the rest are counted.
        let mut pairs = names_only(&pair_names(through));
        if pairs.len() > CUT_OFF_PAIRS_NAMED {
            let more = pairs.len() - CUT_OFF_PAIRS_NAMED;
            pairs.truncate(CUT_OFF_PAIRS_NAMED);
            pairs.push(format!("and {more} more"));
        }
        format!("every path to and from {k}{why}: {}", pairs.join(", "))
    }

    /// Its own link's command when its own report knows the devices, else
    /// its switch port.
    fn fix(&self, target_text: &str) -> String {
        let k = &self.node;
        let switch = format!(
            "configure its switch port (and every port, VLAN and router between it and the others) for {target_text}"
        );
        match &self.own {
            Some(o) => format!(
                "{k}: its own link is below {}, so every path to and from it fails: on {k}, {} (as its own mtu.path says){}",
                o.target,
                spinifex::set_mtus(&o.names(), o.target, ", then "),
                if o.beyond {
                    format!("; beyond it the path drops even less, so also {switch}")
                } else {
                    String::new()
                }
            ),
            None => format!(
                "{k}: every path to and from it fails: {switch}, and check {k}'s NIC and bridge (its own mtu.path names the devices)"
            ),
        }
    }
}

/// The fix for failing pairs through no node cut off.
fn too_small_fix(pairs: &[String], target_text: &str) -> String {
    format!(
        "configure every switch port, VLAN and router between {} for {target_text}",
        and_list(pairs)
    )
}

/// `n0->n1 carries 9000, n1->n0 only 1500 (too-big)`.
fn asymmetric_said((good, bad): &(Cell, Cell)) -> String {
    format!(
        "{} carries {}, {} only {} ({})",
        pair(&good.from, &good.to),
        good.path_mtu.map_or("the target".into(), |m| m.to_string()),
        pair(&bad.from, &bad.to),
        bad.path_mtu.map_or("?".into(), |m| m.to_string()),
        bad.verdict.as_str()
    )
}

/// The fix for every asymmetric pair.
const ASYMMETRIC_FIX: &str = "an asymmetric pair drops in one direction only what the other carries: look for a one-way limit (a node firewall rule on ICMP size, one member of a LAG, a policy route)";

/// The fix that keeps the cluster at what every pair carries today.
fn stay_fix(largest: u32) -> String {
    format!(
        "or stay at what every pair carries today: `underlay_mtu = {largest}` under [network] on every node (and `{}` on each node's NIC and bridge)",
        spinifex::set_mtu("<dev>", largest)
    )
}

/// `; probed but placed by no config, report or SB Encap row: 198.18.0.4
/// (ok at 9000 from n0 and n1), which may be n3`: the results that may be
/// a node this run could not see, by address; empty when there are none.
fn unplaced_summary(unplaced: &[Unplaced]) -> String {
    let mut by_address: BTreeMap<IpAddr, Vec<&Unplaced>> = BTreeMap::new();
    for u in unplaced.iter().filter(|u| !u.may_be.is_empty()) {
        by_address.entry(u.address).or_default().push(u);
    }
    if by_address.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = by_address
        .iter()
        .map(|(address, results)| {
            let mut by_outcome: BTreeMap<CompactString, Vec<&str>> = BTreeMap::new();
            let mut may_be: Vec<&str> = Vec::new();
            for u in results {
                by_outcome
                    .entry(outcome(u.verdict, u.path_mtu))
                    .or_default()
                    .push(&u.from);
                for m in &u.may_be {
                    if !may_be.contains(&m.as_str()) {
                        may_be.push(m);
                    }
                }
            }
            let seen: Vec<String> = by_outcome
                .iter()
                .map(|(o, from)| format!("{o} from {}", and_list(from)))
                .collect();
            format!(
                "{address} ({}), which may be {}",
                seen.join("; "),
                may_be.join(" or ")
            )
        })
        .collect();
    format!(
        "; probed but placed by no config, report or SB Encap row: {}",
        parts.join(", ")
    )
}

/// The finding (the gate's, or the matrix's), and the matrix's cells: its
/// evidence holds an empty `matrix` where they go.
pub fn finding(analysis: Result<Analysis, Gate>) -> (Finding, Vec<Cell>) {
    let a = match analysis {
        Err(Gate::NotSelected) => {
            let f = Finding::skip(SkipReason::NotApplicable(
                "mtu.path was not selected (--check/--skip), so no node measured its paths".into(),
            ));
            return (f, Vec::new());
        }
        Ok(a) => a,
    };
    let failing: Vec<&Cell> = a.cells.iter().filter(|c| c.verdict.fails()).collect();
    let unproven: Vec<&Cell> = a.cells.iter().filter(|c| !c.verdict.measured()).collect();
    let measured = a.cells.len() - unproven.len();
    let target_text = match a.distinct_targets.as_slice() {
        [t] => format!("{t} bytes"),
        _ => "their targets".to_owned(),
    };
    let asymmetric: Vec<String> = a.asymmetric.iter().map(asymmetric_said).collect();

    let f = if measured == 0 {
        nothing_measured(&a, &unproven)
    } else if !failing.is_empty() {
        let mut parts = Vec::new();
        let mut fixes = Vec::new();
        let mut rest: Vec<&Cell> = failing.clone();
        for k in &a.cut_off {
            let through: Vec<&Cell> = failing
                .iter()
                .copied()
                .filter(|c| *c.from == *k.node || *c.to == *k.node)
                .collect();
            parts.push(k.said(&through));
            fixes.push(k.fix(&target_text));
            rest.retain(|c| *c.from != *k.node && *c.to != *k.node);
        }
        if !rest.is_empty() {
            let described: Vec<String> = pair_names(&rest)
                .into_iter()
                .map(|(p, c)| format!("{p} ({})", c.outcome()))
                .collect();
            parts.push(described.join(", "));
            fixes.push(too_small_fix(&names_only(&pair_names(&rest)), &target_text));
        }
        let mut summary = format!(
            "{} of {} paths cannot carry {target_text}: {}",
            failing.len(),
            a.cells.len(),
            parts.join("; ")
        );
        if !asymmetric.is_empty() {
            summary.push_str(&format!("; asymmetric: {}", asymmetric.join("; ")));
            fixes.push(ASYMMETRIC_FIX.to_owned());
        }
        if !unproven.is_empty() {
            summary.push_str(&format!("; {} not measured", unproven.len()));
        }
        summary.push_str(&unplaced_summary(&a.unplaced));
        if let Some(l) = a.largest {
            fixes.push(stay_fix(l));
        }
        fixes.extend(table_full_fixes(&a.cells));
        let kind = most_severe(a.kinds.iter().copied().filter(|k| *k != PathMatrixKind::Ok))
            .unwrap_or(PathMatrixKind::PathTooSmall);
        Finding::new(kind, summary).fixes(fixes)
    } else if !unproven.is_empty() {
        let kind = most_severe(a.kinds.iter().copied().filter(|k| *k != PathMatrixKind::Ok))
            .unwrap_or(PathMatrixKind::NotMeasured);
        Finding::new(
            kind,
            format!(
                "{} of {} paths were not measured, so the matrix is incomplete: {}; the {measured} measured carry {target_text}{}",
                unproven.len(),
                a.cells.len(),
                unmeasured_reasons(&a, &unproven),
                unplaced_summary(&a.unplaced)
            ),
        )
        .fixes(table_full_fixes(&a.cells))
    } else {
        Finding::new(
            PathMatrixKind::Ok,
            format!(
                "all {} paths between the {} nodes carry {target_text}, both ways",
                a.cells.len(),
                a.names.len()
            ),
        )
    };
    // Made straight into the finding (a subject per cell: a million at
    // 1,024 nodes, 84 MB), not into a list of their own first.
    let subjects = a.cells.iter().zip(&a.kinds).map(|(c, k)| c.subject(*k));
    let f = f
        .evidence(&PathMatrixEvidence {
            target_mtu: a.targets,
            failing: failing.iter().map(|c| pair(&c.from, &c.to)).collect(),
            cut_off: a.cut_off.iter().map(|k| k.node.clone()).collect(),
            asymmetric,
            largest_common_mtu: a.largest,
            largest_common_mtu_exact: a.largest_exact,
            nodes: a.names,
            matrix: Vec::new(),
            unplaced: a.unplaced,
        })
        .subjects(subjects);
    (f, a.cells)
}

/// For each node whose kernel dropped its probes (a full neighbour
/// table): the fix is on that node, as its own mtu.path names it.
fn table_full_fixes(cells: &[Cell]) -> Vec<String> {
    let mut rows: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in cells
        .iter()
        .filter(|c| c.verdict == CellVerdict::NeighbourTableFull)
    {
        rows.entry(&c.from).or_default().push(&c.to);
    }
    rows.iter()
        .map(|(from, to)| {
            let toward = if to.len() > 4 {
                format!("{} nodes", to.len())
            } else {
                and_list(to)
            };
            format!(
                "{from}: its kernel's neighbour table is full, so it dropped its probes toward {toward}: on {from}, raise the table's gc_thresh1/2/3 as its own mtu.path says (`spx doctor --check sysctl.neigh` there checks them against the cluster)"
            )
        })
        .collect()
}

/// Nothing measured anywhere: why, from the first node's view.
fn nothing_measured(a: &Analysis, unproven: &[&Cell]) -> Finding {
    let why = unproven
        .first()
        .and_then(|c| c.detail.as_deref().map(str::to_owned))
        .unwrap_or_else(|| "fewer than two nodes were selected".into());
    if a.cells.is_empty() {
        Finding::skip(SkipReason::NothingToMeasure(why))
    } else if a.every_node_skipped {
        Finding::skip(SkipReason::NothingToMeasure(format!(
            "no node measured a path ({why})"
        )))
    } else {
        let kind = most_severe(a.kinds.iter().copied()).unwrap_or(PathMatrixKind::NotMeasured);
        Finding::new(
            kind,
            format!("no path between the nodes was measured ({why})"),
        )
        .fixes(table_full_fixes(&a.cells))
    }
}

/// Why the cells not measured are not, each reason once with its pairs. A
/// node whose addresses are unknown is one reason, whatever each row probed
/// that may be it (listed once, by address, in the unplaced summary).
fn unmeasured_reasons(a: &Analysis, unproven: &[&Cell]) -> String {
    let mut by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in unproven {
        let detail: String = c
            .detail
            .as_deref()
            .unwrap_or_else(|| c.verdict.as_str())
            .to_owned();
        let key = a
            .unknown
            .iter()
            .find(|why| detail.starts_with(why.as_str()) && detail.contains(" probed "))
            .cloned()
            .unwrap_or(detail);
        by_reason.entry(key).or_default().push(pair(&c.from, &c.to));
    }
    by_reason
        .iter()
        .map(|(why, pairs)| {
            if pairs.len() > 4 {
                format!("{why} ({} pairs)", pairs.len())
            } else {
                format!("{why} ({})", pairs.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}
