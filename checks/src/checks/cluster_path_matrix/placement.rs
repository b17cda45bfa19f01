//! The matrix itself: every node's mtu.path results placed in the cells of
//! the nodes they reached, by the config, the reports' own addresses and
//! the nodes the reports named for their peers. Each cell says, in its
//! detail, why it holds no measurement when it holds none; what nothing
//! places is kept by address.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use compact_str::{format_compact, CompactString};
use serde::Deserialize;

use super::{Cell, CellVerdict, Unplaced};
use crate::checks::mtu_path::PeerVerdict;
use crate::cluster::{and_list, AddressBook, ClusterFacts, NodeAnswer};
use crate::finding::Status;

/// [`ClusterFacts::address_book`], and the peers any answering node's
/// mtu.path placed by name: its config's `[nodes.NAME]` entry, or an SB
/// `Encap` row whose chassis is that node. How the matrix places a probe
/// toward a node that did not answer (whose own addresses are unknown).
fn placement_book(facts: &ClusterFacts) -> AddressBook {
    let mut book = facts.address_book();
    // Looked up once per peer of every row: N² lookups at N nodes.
    let config: std::collections::HashSet<&str> =
        facts.config_nodes.iter().map(String::as_str).collect();
    let named = in_parts(facts.nodes.len(), |rows| {
        let mut named = AddressBook::default();
        for n in &facts.nodes[rows] {
            let Some(e) = n
                .check("mtu.path")
                .and_then(|c| c.evidence_part::<NamedPeers>())
            else {
                continue;
            };
            for p in &e.peers {
                if let Some(name) = p.node.as_ref().filter(|m| config.contains(m.as_str())) {
                    named.claim(p.address, name);
                }
            }
        }
        named
    });
    for part in named {
        book.merge(part);
    }
    book
}

/// `work` over the rows `0..n` in parts, each on a thread of its own when
/// there are rows enough and cores to spare: the parts' results in row
/// order. At 1,024 nodes every row reads its node's whole mtu.path
/// evidence, about 0.5 MB of JSON; one core took 1.1 s.
fn in_parts<T: Send>(n: usize, work: impl Fn(Range<usize>) -> T + Sync) -> Vec<T> {
    /// Fewer rows than this are read on the caller's thread.
    const ROWS_PER_PART: usize = 128;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let parts = (n / ROWS_PER_PART).clamp(1, cores.min(8));
    if parts == 1 {
        return vec![work(0..n)];
    }
    let bounds: Vec<Range<usize>> = (0..parts)
        .map(|i| i * n / parts..(i + 1) * n / parts)
        .collect();
    std::thread::scope(|s| {
        let work = &work;
        let rest: Vec<_> = bounds[1..]
            .iter()
            .map(|rows| {
                let rows = rows.clone();
                s.spawn(move || work(rows))
            })
            .collect();
        let mut done = vec![work(bounds[0].clone())];
        done.extend(
            rest.into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
        );
        done
    })
}

/// What [`placement_book`] reads of a row's mtu.path evidence
/// ([`crate::checks::mtu_path::PathMtuEvidence`]): each peer's address and the node it was named
/// for. The rest of every peer's result is skipped, not made: the book
/// reads every row before the matrix reads each row whole.
#[derive(Deserialize)]
struct NamedPeers {
    peers: Vec<NamedPeer>,
}

#[derive(Deserialize)]
struct NamedPeer {
    address: std::net::IpAddr,
    #[serde(default)]
    node: Option<String>,
}

/// What a row of the matrix reads of its node's mtu.path evidence
/// ([`crate::checks::mtu_path::PathMtuEvidence`]): the target, and of each
/// peer's result ([`crate::checks::mtu_path::PeerReport`]) what a cell
/// holds. The rest (interfaces, sources, round
/// trips, the neighbour tables) is skipped, not made: a million peer
/// results at 1,024 nodes.
#[derive(Deserialize)]
struct RowEvidence {
    target_mtu: u32,
    #[serde(default)]
    peers: Vec<RowPeer>,
}

#[derive(Deserialize)]
struct RowPeer {
    address: std::net::IpAddr,
    verdict: PeerVerdict,
    path_mtu: Option<u32>,
    #[serde(default)]
    path_mtu_inexact: bool,
    #[serde(default)]
    cut_short: bool,
    #[serde(default)]
    detail: Option<String>,
}

/// Why a node's own addresses are unknown to this run, when they are: it
/// did not answer, or its report names none.
pub fn addresses_unknown(n: &NodeAnswer) -> Option<String> {
    match (&n.report, n.typed()) {
        (Err(e), _) => Some(format!("{} did not answer ({})", n.name, e.kind.as_str())),
        (Ok(_), Some(r)) if !r.addresses.is_empty() => None,
        (Ok(_), _) => Some(format!("{}'s report names no addresses", n.name)),
    }
}

/// The matrix, and each row's results for addresses nobody is known to
/// own. A result is placed in column `to` when the address is `to`'s by the
/// config (`host`/`advertise`), by `to`'s own report, or by the name an
/// answering node's mtu.path gave it (its config entry, or the SB `Encap`
/// row of `to`'s chassis). A cell with nothing placed is "not probed" only
/// when `to`'s addresses are known and none was probed; when they are not
/// (it did not answer), the row's unplaced results may be it, and the cell
/// says so, by address. A failure toward a node that did not answer is
/// shown but not judged: its own side is unknown.
pub fn placed(facts: &ClusterFacts) -> (Vec<Cell>, Vec<Unplaced>) {
    let book = placement_book(facts);
    let unknown: BTreeMap<&str, String> = facts
        .nodes
        .iter()
        .filter_map(|n| Some((n.name.as_str(), addresses_unknown(n)?)))
        .collect();
    let unknown_names: Vec<&str> = facts
        .nodes
        .iter()
        .map(|n| n.name.as_str())
        .filter(|n| unknown.contains_key(n))
        .collect();
    let placing = Placing {
        facts,
        book,
        unknown,
        unknown_names,
        // Every node's name once, shared by all its cells.
        names: facts.nodes.iter().map(|n| Arc::from(&*n.name)).collect(),
    };
    // The first part's list is made large enough for the whole matrix, and
    // the other parts' cells are moved in after it: at most those are held
    // twice, for a moment.
    let n = facts.nodes.len();
    let row_cells = n.saturating_sub(1);
    let mut parts = in_parts(n, |rows| {
        let room = if rows.start == 0 { n } else { rows.len() };
        let mut cells = Vec::with_capacity(room * row_cells);
        let mut unplaced = Vec::new();
        for i in rows {
            placing.row(i, &mut cells, &mut unplaced);
        }
        (cells, unplaced)
    })
    .into_iter();
    let (mut cells, mut unplaced) = parts.next().unwrap_or_default();
    for (c, u) in parts {
        cells.extend(c);
        unplaced.extend(u);
    }
    (cells, unplaced)
}

/// What every row of the matrix is placed by, made once and shared by the
/// threads that place the rows.
struct Placing<'a> {
    facts: &'a ClusterFacts,
    book: AddressBook,
    /// Why a node's addresses are unknown, by node, when they are.
    unknown: BTreeMap<&'a str, String>,
    /// Those whose addresses are unknown, in node order: who an unplaced
    /// result may be.
    unknown_names: Vec<&'a str>,
    names: Vec<Arc<str>>,
}

impl Placing<'_> {
    /// Row `i`'s cells, in node order, and its results nothing places. The
    /// row's evidence is read here and let go after.
    fn row(&self, i: usize, cells: &mut Vec<Cell>, unplaced: &mut Vec<Unplaced>) {
        let (from, from_name) = (&self.facts.nodes[i], &self.names[i]);
        let path = from.check("mtu.path");
        let evidence: Option<RowEvidence> = path.and_then(|c| c.evidence_part());
        let target = evidence.as_ref().map(|e| e.target_mtu);
        let peers = evidence.map(|e| e.peers).unwrap_or_default();
        // The row's results by the node owning their address, each list
        // in the row's order.
        let mut by_owner: HashMap<&str, Vec<&RowPeer>> = HashMap::new();
        for p in &peers {
            if let Some(owner) = self.book.owner(p.address) {
                by_owner.entry(owner).or_default().push(p);
            }
        }
        let status = path.map(|c| c.status);
        let why_none = match (&from.report, path) {
            (Err(e), _) => Some(format!(
                "{} did not answer ({})",
                from.name,
                e.kind.as_str()
            )),
            (Ok(_), None) => Some(format!("{}'s report has no mtu.path", from.name)),
            (Ok(_), Some(c)) if peers.is_empty() => {
                Some(format!("{}'s mtu.path: {}", from.name, c.summary))
            }
            _ => None,
        };
        // Silence in a round the deadline cut short proves nothing (mtu.path
        // then errors); a hop's answer or a local limit does.
        let verdict_of = |p: &RowPeer| {
            let v = CellVerdict::from_peer(p.verdict);
            if status == Some(Status::Error)
                && matches!(v, CellVerdict::BlackHole | CellVerdict::Unreachable)
            {
                CellVerdict::NotMeasured
            } else {
                v
            }
        };
        // Results no one is known to own, and who they may be.
        let mine: Vec<Unplaced> = peers
            .iter()
            .filter(|p| !self.book.is_claimed(p.address))
            .map(|p| Unplaced {
                from: from.name.clone(),
                address: p.address,
                // Its own outcome: silence is "unreachable" unless the
                // deadline cut it short.
                verdict: match CellVerdict::from_peer(p.verdict) {
                    CellVerdict::BlackHole | CellVerdict::Unreachable if p.cut_short => {
                        CellVerdict::NotMeasured
                    }
                    v => v,
                },
                path_mtu: p.path_mtu,
                may_be: self
                    .unknown_names
                    .iter()
                    .filter(|n| **n != from.name)
                    .map(|n| (*n).to_owned())
                    .collect(),
            })
            .collect();
        let why_none: Option<Arc<str>> = why_none.map(Arc::from);
        for (to, to_name) in self.facts.nodes.iter().zip(&self.names) {
            if to.name == from.name {
                continue;
            }
            let mut cell = Cell {
                from: Arc::clone(from_name),
                to: Arc::clone(to_name),
                verdict: CellVerdict::NotMeasured,
                path_mtu: None,
                path_mtu_inexact: false,
                target,
                detail: why_none.clone(),
            };
            if why_none.is_none() {
                let mut found: Option<&RowPeer> = None;
                for p in by_owner
                    .get(to.name.as_str())
                    .into_iter()
                    .flatten()
                    .copied()
                {
                    let v = verdict_of(p);
                    let mtu = p.path_mtu;
                    if found.is_none() || v.rank() > cell.verdict.rank() {
                        cell.verdict = v;
                        cell.path_mtu = mtu;
                        cell.path_mtu_inexact = p.path_mtu_inexact;
                        cell.detail = p.detail.as_deref().map(Arc::from);
                        found = Some(p);
                    } else if v == cell.verdict {
                        cell.path_mtu = match (cell.path_mtu, mtu) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        };
                    }
                    if v == CellVerdict::NotMeasured {
                        cell.detail = Some(
                            format!("{}'s mtu.path was cut short by the deadline", from.name)
                                .into(),
                        );
                    }
                    found = found.or(Some(p));
                }
                let silent = match &to.report {
                    Err(e) => Some(e.kind.as_str()),
                    Ok(_) => None,
                };
                match (found, silent) {
                    // What was measured toward a node that did not answer
                    // is shown, never judged: its own side is unknown.
                    (Some(p), Some(kind)) if cell.verdict.fails() => {
                        cell.detail = Some(format!(
                            "{} measured {} toward {} ({}'s address), but {} did not answer ({kind}), so the path is not judged",
                            from.name,
                            outcome(cell.verdict, cell.path_mtu),
                            p.address,
                            to.name,
                            to.name
                        ).into());
                        cell.verdict = CellVerdict::NotMeasured;
                        cell.path_mtu = None;
                        cell.path_mtu_inexact = false;
                    }
                    (Some(_), _) => {}
                    (None, _) => match self.unknown.get(to.name.as_str()) {
                        Some(why) if !mine.is_empty() => {
                            let shown: Vec<String> = mine.iter().map(Unplaced::shown).collect();
                            cell.verdict = CellVerdict::NotMeasured;
                            cell.detail = Some(format!(
                                "{why}; {} probed {}, which no config, report or SB Encap row places: it may be {}",
                                from.name,
                                and_list(&shown),
                                to.name
                            ).into());
                        }
                        _ => {
                            cell.verdict = CellVerdict::NotProbed;
                            cell.detail = Some(
                                format!(
                                    "{} did not probe {} (no address of it among its peers)",
                                    from.name, to.name
                                )
                                .into(),
                            );
                        }
                    },
                }
            }
            cells.push(cell);
        }
        unplaced.extend(mine);
    }
}

impl Unplaced {
    /// `198.18.0.4 (ok at 9000)`.
    pub fn shown(&self) -> String {
        format!(
            "{} ({})",
            self.address,
            outcome(self.verdict, self.path_mtu)
        )
    }
}

/// `ok at 9000`, `blackhole at 1500`, `unreachable`.
/// Short enough to be held inline.
pub fn outcome(v: CellVerdict, mtu: Option<u32>) -> CompactString {
    match mtu {
        Some(m) if v.measured() => format_compact!("{} at {m}", v.as_str()),
        _ => v.as_str().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::{in_parts, RowEvidence};
    use crate::checks::mtu_path::{PathMtuEvidence, PeerVerdict};

    /// A row reads what mtu.path writes: every field a cell holds, by the
    /// names `PathMtuEvidence` gives them (a renamed field fails here).
    #[test]
    fn a_row_reads_the_fields_mtu_path_writes() {
        let written: PathMtuEvidence = serde_json::from_value(serde_json::json!({
            "target_mtu": 9000,
            "peers": [{"address": "198.18.0.2", "source": "config", "verdict": "blackhole",
                       "path_mtu": 1500, "rounds": 2, "path_mtu_inexact": true,
                       "cut_short": true, "detail": "why"}]
        }))
        .unwrap();
        let text = serde_json::to_string(&written).unwrap();
        let row: RowEvidence = serde_json::from_str(&text).unwrap();
        let (w, r) = (&written.peers[0], &row.peers[0]);
        assert_eq!(row.target_mtu, written.target_mtu);
        assert_eq!(r.address, w.address);
        assert_eq!(
            (r.verdict, w.verdict),
            (PeerVerdict::BlackHole, PeerVerdict::BlackHole)
        );
        assert_eq!(r.path_mtu, w.path_mtu);
        assert!(r.path_mtu_inexact && w.path_mtu_inexact);
        assert!(r.cut_short && w.cut_short);
        assert_eq!(r.detail, w.detail);
    }

    /// Every row once, in order, however many parts the cores allow.
    #[test]
    fn parts_cover_every_row_in_order() {
        for n in [0, 1, 127, 128, 256, 1000, 1024] {
            let rows: Vec<usize> = in_parts(n, |r| r.collect::<Vec<_>>()).concat();
            assert_eq!(rows, (0..n).collect::<Vec<_>>(), "{n}");
        }
    }
}
