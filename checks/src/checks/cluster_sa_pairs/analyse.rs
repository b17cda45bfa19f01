//! The judgement of `cluster.sa-pairs`, pure: every node's SA table in,
//! what pairs up and what does not out. No words here ([`super::words`]
//! says them).

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::{ReportedSa, SaPairsKind};
use crate::checks::ipsec_xfrm::{IpsecXfrmEvidence, SaDirection};
use crate::cluster::{self, ClusterFacts, IpsecGate, Unjudged};

/// An SA that points at no node of the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stray {
    /// Toward `remote`, which no node owns, every node having answered.
    Foreign {
        node: String,
        sa: ReportedSa,
        remote: IpAddr,
    },
    /// Toward `remote`, which no answering node claims (one that did not
    /// answer may).
    Unclaimed {
        node: String,
        sa: ReportedSa,
        remote: IpAddr,
    },
    /// Neither end is the node's own (not an in or out SA).
    NeitherEnd { node: String, sa: ReportedSa },
}

/// What does not pair up between `a` and `b` (ordered: `a`'s geneve to `b`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// `a` holds no outbound SA toward `b`; `pending`: `a` waits for IKE
    /// toward `b`.
    NoOutbound { pending: bool },
    /// `a`'s outbound `sa` is not on `b`.
    NotOnPeer { sa: ReportedSa },
    /// `sa` is on both ends, with `theirs` as `b`'s algorithm.
    AlgorithmMismatch {
        sa: ReportedSa,
        theirs: Option<String>,
    },
    /// `b` holds the inbound `sa` from `a`, which `a` does not have.
    OnlyInbound { sa: ReportedSa },
}

impl Problem {
    pub fn kind(&self) -> SaPairsKind {
        match self {
            Problem::AlgorithmMismatch { .. } => SaPairsKind::AlgorithmMismatch,
            _ => SaPairsKind::Unpaired,
        }
    }
}

/// What holds for one ordered pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairState {
    /// No SA on either end, each armed for the other.
    Armed,
    /// Every one of `outbound` SAs is on the other end.
    Paired { outbound: usize },
    /// What does not pair up, in order.
    Problems(Vec<Problem>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    pub a: String,
    pub b: String,
    pub state: PairState,
}

/// Every node's SA table side by side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Each node's SAs, by node name.
    pub tables: BTreeMap<String, Vec<ReportedSa>>,
    pub unjudged: Vec<Unjudged>,
    /// SAs toward no node, in table order.
    pub strays: Vec<Stray>,
    /// Every ordered pair of nodes with a table, in order.
    pub pairs: Vec<Pair>,
}

/// Judge every node's SAs against the others'.
pub fn analyse(facts: &ClusterFacts) -> Result<Analysis, IpsecGate> {
    let read = cluster::ipsec_evidence::<IpsecXfrmEvidence>(facts, "ipsec.xfrm")?;
    let book = facts.address_book();
    let mut out = Analysis {
        unjudged: read.unjudged,
        ..Analysis::default()
    };
    // Per node: the peers it is armed for (no SA yet) and those it waits
    // for keys toward (IKE pending).
    let mut armed: BTreeMap<&str, Vec<IpAddr>> = BTreeMap::new();
    let mut pending: BTreeMap<&str, Vec<IpAddr>> = BTreeMap::new();
    for (node, e) in read.read {
        armed.insert(node, e.armed_peers);
        pending.insert(node, e.pending_peers);
        let list = e.sas.into_iter().map(|s| ReportedSa::of(node, s));
        out.tables.insert(node.to_owned(), list.collect());
    }

    let complete = facts.complete();
    for (node, list) in &out.tables {
        for s in list {
            let remote = match s.direction {
                SaDirection::Out => s.dst,
                SaDirection::In => s.src,
                SaDirection::Other => {
                    out.strays.push(Stray::NeitherEnd {
                        node: node.clone(),
                        sa: s.clone(),
                    });
                    continue;
                }
            };
            if book.owner(remote).is_some() {
                continue;
            }
            let (node, sa) = (node.clone(), s.clone());
            out.strays.push(if complete {
                Stray::Foreign { node, sa, remote }
            } else {
                Stray::Unclaimed { node, sa, remote }
            });
        }
    }

    let toward = |lists: &BTreeMap<&str, Vec<IpAddr>>, from: &str, to: &str| {
        lists
            .get(from)
            .is_some_and(|l| l.iter().any(|ip| book.owner(*ip) == Some(to)))
    };
    for (a, a_list) in &out.tables {
        for (b, b_list) in &out.tables {
            if a == b {
                continue;
            }
            let outbound: Vec<&ReportedSa> = a_list
                .iter()
                .filter(|s| {
                    s.direction == SaDirection::Out && book.owner(s.dst) == Some(b.as_str())
                })
                .collect();
            let inbound: Vec<&ReportedSa> = b_list
                .iter()
                .filter(|s| s.direction == SaDirection::In && book.owner(s.src) == Some(a.as_str()))
                .collect();
            let same =
                |x: &ReportedSa, y: &ReportedSa| x.src == y.src && x.dst == y.dst && x.spi == y.spi;
            let state = if outbound.is_empty()
                && inbound.is_empty()
                && toward(&armed, a, b)
                && toward(&armed, b, a)
            {
                PairState::Armed
            } else {
                let mut problems = Vec::new();
                if outbound.is_empty() {
                    problems.push(Problem::NoOutbound {
                        pending: toward(&pending, a, b),
                    });
                }
                for s in &outbound {
                    match inbound.iter().find(|r| same(r, s)) {
                        None => problems.push(Problem::NotOnPeer { sa: (*s).clone() }),
                        Some(r) if r.algorithm != s.algorithm => {
                            problems.push(Problem::AlgorithmMismatch {
                                sa: (*s).clone(),
                                theirs: r.algorithm.clone(),
                            })
                        }
                        Some(_) => {}
                    }
                }
                for r in &inbound {
                    if !outbound.iter().any(|s| same(s, r)) {
                        problems.push(Problem::OnlyInbound { sa: (*r).clone() });
                    }
                }
                if problems.is_empty() {
                    PairState::Paired {
                        outbound: outbound.len(),
                    }
                } else {
                    PairState::Problems(problems)
                }
            };
            out.pairs.push(Pair {
                a: a.clone(),
                b: b.clone(),
                state,
            });
        }
    }
    Ok(out)
}
